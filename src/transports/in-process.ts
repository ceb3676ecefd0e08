// The in-process "transport": the client calls ServerConnection.request() directly — no JSON,
// no socket. Notifications are delivered on a microtask so server code never re-enters
// client listeners synchronously. Process output is handed over as the server's own Buffer
// (the `binaryOutput` path: no base64, no copy).
import type { ClientChannel, ServerRequestHandler } from '../rpc/channel';
import { ErrorCodes, Messages, RpcError } from '../protocol/errors';
import { Emitter } from '../rpc/event';
import type { NotificationMessage } from '../rpc/messages';
import type { TraceContext } from '../protocol/types';
import type { ServerTelemetry } from '../telemetry/api';
import type { CloseInfo } from '../rpc/transport';
import type { ConnectOptions, NotificationSink, ServerConnection } from '../server/api';

/** The part of ExecServer that transports need. */
export interface ConnectableServer {
  connect(sink: NotificationSink, opts?: ConnectOptions): ServerConnection;
  /** The server's telemetry: transports start each request's span with it. */
  readonly telemetry?: ServerTelemetry;
}

export class InProcessChannel implements ClientChannel {
  private readonly notificationEmitter = new Emitter<NotificationMessage>();
  private readonly closeEmitter = new Emitter<CloseInfo>();
  private readonly connection: ServerConnection;
  private readonly telemetry: ServerTelemetry | undefined;
  private isClosed = false;
  private requestHandler: ServerRequestHandler | undefined;
  /** Aborts the handler's questions when the channel closes (the server stops waiting too). */
  private readonly gone = new AbortController();

  readonly onNotification = this.notificationEmitter.event;
  readonly onClose = this.closeEmitter.event;

  constructor(server: ConnectableServer, opts: ConnectOptions = {}) {
    const sink: NotificationSink = {
      notify: (method, params) => {
        if (this.isClosed) return;
        queueMicrotask(() => {
          if (!this.isClosed) this.notificationEmitter.fire({ method, params });
        });
      },
      processOutput: (processId, seq, stream, data) => {
        if (this.isClosed) return;
        queueMicrotask(() => {
          if (!this.isClosed) this.notificationEmitter.fire({ method: 'process/output', params: { processId, seq, stream, data } });
        });
      },
      // Server → client requests, answered as over a link: the handler sees a copy of the
      // params and the server a copy of the answer (neither side keeps a live reference into the
      // other's objects), a missing handler is -32601, a closed channel -32000.
      request: (method, params, signal) => this.serverRequest(method, params, signal),
    };
    this.connection = server.connect(sink, { label: 'in-process', ...opts });
    this.telemetry = server.telemetry?.enabled ? server.telemetry : undefined;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  setRequestHandler(handler: ServerRequestHandler | undefined): void {
    this.requestHandler = handler;
  }

  private async serverRequest(method: string, params: unknown, signal: AbortSignal): Promise<unknown> {
    if (this.isClosed) throw new RpcError(ErrorCodes.ConnectionClosed, `${Messages.connectionClosed}: in-process channel closed`);
    const handler = this.requestHandler;
    if (!handler) throw new RpcError(ErrorCodes.MethodNotFound, Messages.methodNotFound(method));
    const both = AbortSignal.any([signal, this.gone.signal]);
    // A microtask first, as for notifications: server code never re-enters the client synchronously.
    await Promise.resolve();
    const answer = await handler(method, structuredClone(params), both);
    if (this.isClosed) throw new RpcError(ErrorCodes.ConnectionClosed, `${Messages.connectionClosed}: in-process channel closed`);
    return answer === undefined ? null : structuredClone(answer);
  }

  request(method: string, params: unknown, trace?: TraceContext): Promise<unknown> {
    if (this.isClosed) return Promise.reject(new RpcError(ErrorCodes.ConnectionClosed, `${Messages.connectionClosed}: in-process channel closed`));
    if (!this.telemetry) return this.connection.requestUntyped(method, params);
    // In process the response is "handed to the transport" when the promise settles.
    const call = this.telemetry.request(method, undefined, trace);
    return this.connection.requestUntyped(method, params, call).then(
      (r) => {
        call.end();
        return r;
      },
      (e: unknown) => {
        call.end(e instanceof RpcError ? { code: e.code, message: e.message } : { code: ErrorCodes.InternalError, message: String(e) });
        throw e;
      },
    );
  }

  notify(method: string, params: unknown): void {
    if (this.isClosed) return;
    if (!this.connection.notification(method, params)) this.finish(`protocol error: unexpected notification ${method}`, false);
  }

  close(reason = 'closed locally'): void {
    this.finish(reason, true);
  }

  abort(): void {
    this.finish('aborted', false);
  }

  private finish(reason: string, local: boolean): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.gone.abort();
    this.connection.close();
    this.closeEmitter.fire({ reason, local });
    this.closeEmitter.dispose();
    this.notificationEmitter.dispose();
  }
}
