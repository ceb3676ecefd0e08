// A JSON-RPC peer over a MessageTransport: matches responses to requests by id (in any
// order), dispatches inbound requests/notifications, and fails pending calls with a clear
// "connection closed" error when the transport ends. Used by both client and server.
import { ErrorCodes, Messages, RpcError } from '../protocol/errors';
import type { RequestId, TraceContext } from '../protocol/types';
import { DisposableStore, Emitter, type Disposable, type Event } from './event';
import { classify, type NotificationMessage, type RequestMessage, type ResponseError } from './messages';
import type { CloseInfo, MessageTransport } from './transport';

export type RequestHandler = (method: string, params: unknown, id: RequestId, observation?: RequestObservation) => unknown | Promise<unknown>;

export interface RequestOptions {
  timeoutMs?: number;
  /** W3C trace context sent as the request's `trace` member (see src/telemetry). */
  trace?: TraceContext;
  /** Stops waiting: the call rejects and a later answer is ignored (its entry is gone at once). */
  signal?: AbortSignal;
}

/** What an observer (telemetry) keeps for one inbound request; ended once its response was handed to the transport. */
export interface RequestObservation {
  end(error?: ResponseError): void;
}

interface Pending {
  method: string;
  resolve(v: unknown): void;
  reject(e: Error): void;
  timer?: ReturnType<typeof setTimeout>;
}

export interface RpcConnectionOptions {
  /** What to answer for a frame that is not JSON / not a JSON-RPC message. Default: an error response with id null. */
  onProtocolViolation?: (kind: 'parse' | 'invalid', detail: string, id: RequestId | null) => void;
  /** Called for each inbound request before its handler (which receives the result as its 4th argument). */
  observeRequest?: (msg: RequestMessage) => RequestObservation | undefined;
}

export class RpcConnection implements Disposable {
  private nextId = 1;
  private readonly pending = new Map<RequestId, Pending>();
  private requestHandler: RequestHandler | undefined;
  private readonly notificationEmitter = new Emitter<NotificationMessage>();
  private readonly closeEmitter = new Emitter<CloseInfo>();
  private readonly subs = new DisposableStore();
  private closeInfo: CloseInfo | undefined;

  readonly onNotification: Event<NotificationMessage> = this.notificationEmitter.event;
  readonly onClose: Event<CloseInfo> = this.closeEmitter.event;

  constructor(
    readonly transport: MessageTransport,
    private readonly options: RpcConnectionOptions = {},
  ) {
    this.subs.add(transport.onMessage((m) => this.handleMessage(m)));
    this.subs.add(transport.onParseError((detail) => this.violation('parse', detail, null)));
    this.subs.add(transport.onClose((info) => this.handleClose(info)));
    if (transport.closed) this.handleClose({ reason: 'transport already closed', local: false });
  }

  get closed(): boolean {
    return this.closeInfo !== undefined;
  }
  get pendingCount(): number {
    return this.pending.size;
  }

  /** Installs the handler for inbound requests (server side, or server→client requests); undefined: -32601 for each. */
  setRequestHandler(handler: RequestHandler | undefined): void {
    this.requestHandler = handler;
  }

  request<R = unknown>(method: string, params: unknown, opts: RequestOptions = {}): Promise<R> {
    if (this.closeInfo) {
      return Promise.reject(new RpcError(ErrorCodes.ConnectionClosed, `${Messages.connectionClosed}: ${this.closeInfo.reason}`));
    }
    if (opts.signal?.aborted) return Promise.reject(new RpcError(ErrorCodes.RequestTimeout, `${method} was abandoned`));
    const id = this.nextId++;
    return new Promise<R>((resolve, reject) => {
      const p: Pending = { method, resolve: resolve as (v: unknown) => void, reject };
      const signal = opts.signal;
      if (signal) {
        const onAbort = () => {
          if (this.pending.get(id) !== p) return;
          this.pending.delete(id);
          if (p.timer) clearTimeout(p.timer);
          reject(new RpcError(ErrorCodes.RequestTimeout, `${method} was abandoned`));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        const settle = (f: (v: never) => void) => (v: never) => {
          signal.removeEventListener('abort', onAbort);
          f(v);
        };
        p.resolve = settle(p.resolve as (v: never) => void) as (v: unknown) => void;
        p.reject = settle(p.reject as (v: never) => void) as (e: Error) => void;
      }
      if (opts.timeoutMs !== undefined && opts.timeoutMs > 0) {
        p.timer = setTimeout(() => {
          this.pending.delete(id);
          p.reject(new RpcError(ErrorCodes.RequestTimeout, `${method} timed out after ${opts.timeoutMs} ms`));
        }, opts.timeoutMs);
      }
      this.pending.set(id, p);
      try {
        const msg: { id: RequestId; method: string; params?: unknown; trace?: TraceContext } = { id, method };
        if (params !== undefined) msg.params = params;
        if (opts.trace) msg.trace = opts.trace;
        this.transport.send(msg);
      } catch (e) {
        // Params the transport cannot serialize (a BigInt, a cycle) fail this call, not leave it pending.
        this.pending.delete(id);
        if (p.timer) clearTimeout(p.timer);
        p.reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  }

  notify(method: string, params?: unknown): void {
    if (this.closeInfo) return;
    this.transport.send(params === undefined ? { method } : { method, params });
  }

  sendResponse(id: RequestId, result: unknown): void {
    if (!this.closeInfo) this.transport.send({ id, result });
  }
  sendError(id: RequestId | null, error: ResponseError): void {
    if (!this.closeInfo) this.transport.send({ id, error });
  }

  close(reason = 'closed locally'): void {
    this.transport.close(reason);
    // Transports fire onClose; make sure we settle even if one does not.
    this.handleClose({ reason, local: true });
  }

  dispose(): void {
    this.close();
  }

  private violation(kind: 'parse' | 'invalid', detail: string, id: RequestId | null): void {
    if (this.options.onProtocolViolation) {
      this.options.onProtocolViolation(kind, detail, id);
      return;
    }
    this.sendError(id, {
      code: kind === 'parse' ? ErrorCodes.ParseError : ErrorCodes.InvalidRequest,
      message: kind === 'parse' ? `parse error: ${detail}` : detail,
    });
  }

  private handleMessage(raw: unknown): void {
    const c = classify(raw);
    switch (c.kind) {
      case 'response': {
        const msg = c.msg;
        const id = msg.id;
        const p = id === null ? undefined : this.pending.get(id);
        if (!p) return; // late answer to a timed-out call, or not ours: ignore
        this.pending.delete(id as RequestId);
        if (p.timer) clearTimeout(p.timer);
        if ('error' in msg) p.reject(new RpcError(msg.error.code, msg.error.message, msg.error.data));
        else p.resolve(msg.result);
        return;
      }
      case 'request':
        this.dispatchRequest(c.msg);
        return;
      case 'notification':
        this.notificationEmitter.fire(c.msg);
        return;
      case 'invalid':
        this.violation('invalid', c.reason, c.id);
        return;
    }
  }

  private dispatchRequest(msg: RequestMessage): void {
    const handler = this.requestHandler;
    const obs = this.options.observeRequest?.(msg);
    if (!handler) {
      this.fail(msg.id, { code: ErrorCodes.MethodNotFound, message: Messages.methodNotFound(msg.method) }, obs);
      return;
    }
    let out: unknown;
    try {
      out = handler(msg.method, msg.params, msg.id, obs);
    } catch (e) {
      this.fail(msg.id, toResponseError(e), obs);
      return;
    }
    if (out instanceof Promise) {
      out.then(
        (r) => this.reply(msg.id, r, obs),
        (e) => this.fail(msg.id, toResponseError(e), obs),
      );
    } else {
      this.reply(msg.id, out, obs);
    }
  }

  /** The handler's result, or an error response when the transport cannot serialize it (never a throw into the caller's promise chain). */
  private reply(id: RequestId, result: unknown, obs?: RequestObservation): void {
    try {
      this.sendResponse(id, result ?? {});
    } catch (e) {
      this.fail(id, toResponseError(e), obs);
      return;
    }
    obs?.end();
  }

  private fail(id: RequestId, error: ResponseError, obs?: RequestObservation): void {
    try {
      this.sendError(id, error);
    } finally {
      obs?.end(error);
    }
  }

  private handleClose(info: CloseInfo): void {
    if (this.closeInfo) return;
    this.closeInfo = info;
    this.subs.dispose();
    const err = new RpcError(ErrorCodes.ConnectionClosed, `${Messages.connectionClosed}: ${info.reason}`);
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(err);
    }
    this.closeEmitter.fire(info);
    this.closeEmitter.dispose();
    this.notificationEmitter.dispose();
  }
}

export function toResponseError(e: unknown): ResponseError {
  if (e instanceof RpcError) return e.toJSON();
  const message = e instanceof Error ? e.message : String(e);
  return { code: ErrorCodes.InternalError, message };
}
