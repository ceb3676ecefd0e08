// One client connection: initialize/initialized gating with the reference's messages,
// param decoding before gating (as the reference does), routing, and the per-connection
// state (fs read handles, watches, in-flight http requests) that dies with the connection.
import { setMaxListeners } from 'node:events';
import { ErrorCodes, Messages, RpcError, internalError, invalidRequest } from '../protocol/errors';
import * as P from './params';
import type {
  HttpBodyDeltaNotification,
  HttpRequestResult,
  InitializeResult,
  NotificationMap,
  NotificationMethod,
  ParamsOf,
  RequestMethod,
  ResultOf,
} from '../protocol/types';
import { BINARY_OUTPUT_EXTENSION, EXTENSION_METHODS, FLOW_CONTROL_EXTENSION } from '../protocol/types';
import { VERSION } from '../version';
import type { ConnectOptions, NotificationSink, ServerConnection } from './api';
import type { ConnectionContext, ConnectionHost, HttpRunner } from './context';
import { environmentInfo } from './environment';
import { MAX_READ_FILE_BYTES } from './fs/fs-methods';
import { FileHandles } from './fs/handles';
import { MissingWatches } from './fs/missing-watch';
import { Watches } from './fs/watch';
import type { HttpRequestInput } from './http-pinned';
import { checkInFlight, DEFAULT_MAX_IN_FLIGHT } from './in-flight';
import { KeyedOrder } from './ordering';
import { checkSandbox } from './sandbox/gate';
import { methodSpec } from './router';
import type { PidNamespaceMode } from './sandbox/bwrap';
import type { Session } from './session';
import type { RequestRecord } from '../telemetry/api';
import { verbatimAsPlain } from '../rpc/verbatim';

export class Connection implements ServerConnection, ConnectionContext {
  private sessionRef: Session | undefined;
  private initializedNotified = false;
  private closed = false;
  private inFlight = 0;
  /** Requests whose response (or streamed body) is still flowing, with their requestId. */
  private readonly httpAborts = new Map<AbortController, string>();
  private readonly closeController = new AbortController();
  private readonly ordering = new KeyedOrder();
  readonly closedSignal = this.closeController.signal;
  binaryOutput = false;
  get verbatimResults(): boolean {
    return this.options.verbatimResults === true;
  }
  log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void {
    this.server.log(level, message);
  }
  get sandboxPidNamespace(): PidNamespaceMode {
    return this.server.sandboxPidNamespace;
  }
  get sandboxTransparentTcp(): boolean {
    return this.server.sandboxTransparentTcp === true;
  }
  readonly handles: FileHandles;
  readonly watches: Watches;
  readonly missingWatches: MissingWatches;

  constructor(
    private readonly server: ConnectionHost,
    private readonly sink: NotificationSink,
    readonly options: ConnectOptions,
    maxOpenHandles: number,
    private readonly maxInFlight: number = DEFAULT_MAX_IN_FLIGHT,
    readonly maxReadFileBytes: number = MAX_READ_FILE_BYTES,
  ) {
    // Listened to by each long-poll and each open network question (both bounded elsewhere).
    setMaxListeners(0, this.closedSignal);
    this.handles = new FileHandles(maxOpenHandles);
    this.watches = new Watches((n) => this.notify('fs/changed', n));
    this.missingWatches = new MissingWatches((watchId) => this.notify('fs/missingChanged', { watchId }));
  }

  get label(): string {
    return this.options.label ?? 'connection';
  }

  private notify<M extends NotificationMethod>(method: M, params: NotificationMap[M]): void {
    if (this.closed) return;
    try {
      this.sink.notify(method, params);
    } catch {
      // the transport reports its own failure through close()
    }
  }

  session(): Session {
    if (!this.sessionRef) throw invalidRequest(Messages.notInitialized('exec'));
    return this.sessionRef;
  }

  request<M extends RequestMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
    return this.requestUntyped(method, params) as Promise<ResultOf<M>>;
  }

  async requestUntyped(method: string, params: unknown, call?: RequestRecord): Promise<unknown> {
    if (this.closed) throw new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed);
    checkInFlight(this.inFlight, this.maxInFlight);
    this.inFlight++;
    try {
      const result = await this.dispatch(method, params, call);
      this.server.log('debug', `${this.label}: ${method} ok`);
      return this.options.verbatimResults ? result : verbatimAsPlain(result);
    } catch (e) {
      if (e instanceof RpcError) {
        this.server.log('debug', `${this.label}: ${method} → ${e.code} ${e.message}`);
        throw e;
      }
      this.server.log('error', `${this.label}: ${method} failed: ${(e as Error)?.stack ?? e}`);
      throw internalError((e as Error)?.message ?? String(e));
    } finally {
      this.inFlight--;
    }
  }

  private async dispatch(method: string, params: unknown, call: RequestRecord | undefined): Promise<unknown> {
    if (method === 'initialize') return this.initialize(params);
    const spec = methodSpec(method);
    if (!spec) throw new RpcError(ErrorCodes.MethodNotFound, Messages.methodNotFound(method));
    const decoded = spec.decode(params);
    checkSandbox(method, params);
    if (!this.sessionRef) throw invalidRequest(Messages.notInitialized(spec.category));
    if (!this.initializedNotified) throw invalidRequest(Messages.notInitializedNotification(spec.category));
    const order = spec.order?.(decoded as never);
    const handle = () => spec.handle(this, decoded as never);
    const traced = method === 'process/start' && call && this.server.telemetry.enabled;
    return this.ordering.run(order?.key, order?.access ?? 'free', traced ? () => this.traceProcess((decoded as { processId: string }).processId, call, handle) : handle);
  }

  /** process/start with a process record (span start → exit, process metrics) parented by the request. */
  private async traceProcess(processId: string, call: RequestRecord, start: () => unknown): Promise<unknown> {
    const session = this.session();
    const rec = this.server.telemetry.process(call);
    const tracked = session.trackProcess(processId, rec);
    try {
      const result = (await start()) as { sandboxType?: string };
      rec.started(result?.sandboxType ?? 'none');
      return result;
    } catch (e) {
      if (tracked) session.untrackProcess(processId, rec);
      rec.failed(e instanceof RpcError ? { code: e.code, message: e.message } : { code: ErrorCodes.InternalError, message: String(e) });
      throw e;
    }
  }

  /**
   * The session is opened synchronously (a pipelined `initialized` and the requests after it
   * find it); only the answer waits for environmentInfo (the sandbox probe, if still running).
   */
  private initialize(params: unknown): Promise<InitializeResult> {
    const o = P.object(params, 'InitializeParams');
    P.str(o, 'clientName');
    const resumeSessionId = P.optStr(o, 'resumeSessionId');
    // [extension] opt-ins (see docs/protocol.md "Flow control and binary output"); unknown to the reference.
    const flowControl = P.optBool(o, 'flowControl') === true;
    const binary = P.optBool(o, 'binaryOutput') === true && this.sink.processOutput !== undefined;
    if (this.sessionRef) throw invalidRequest(Messages.initializeOnce);
    const sink = askable(binary ? this.sink : withoutBinaryOutput(this.sink), this.closedSignal);
    this.binaryOutput = binary;
    this.sessionRef = this.server.openSession(this, sink, resumeSessionId, flowControl);
    const enabled = [...(flowControl ? [FLOW_CONTROL_EXTENSION] : []), ...(binary ? [BINARY_OUTPUT_EXTENSION] : [])];
    const sessionId = this.sessionRef.id;
    return environmentInfo().then((info) => ({
      sessionId,
      environmentInfo: info,
      extensions: [...EXTENSION_METHODS, ...enabled],
      serverName: 'exec-server',
      serverVersion: VERSION,
    }));
  }

  notification(method: string, _params: unknown): boolean {
    if (method !== 'initialized') return false;
    if (this.sessionRef) this.initializedNotified = true;
    return true;
  }

  async http(input: HttpRequestInput, run: HttpRunner): Promise<HttpRequestResult> {
    const ac = new AbortController();
    this.httpAborts.set(ac, input.requestId);
    const forget = () => this.httpAborts.delete(ac);
    let streaming = false;
    try {
      const result = await run(input, (n) => this.notify('http/request/bodyDelta', n), ac.signal, forget, () => this.untilWritable(ac.signal));
      streaming = input.streamResponse;
      return result;
    } finally {
      // A streamed body keeps flowing after the result: its controller is forgotten when it ends
      // (and closing the connection still aborts it).
      if (!streaming) forget();
    }
  }

  /**
   * In-process only (the wire has no such method): stops http/request `requestId` — a body still
   * streaming ends with a done delta carrying the abort error, and nothing more is read from
   * the peer. The agent endpoint calls it when a body passed its bound.
   */
  cancelHttpRequest(requestId: string): void {
    for (const [ac, id] of this.httpAborts) {
      if (id !== requestId) continue;
      ac.abort();
      this.httpAborts.delete(ac);
    }
  }

  /**
   * Resolves once the client's side is not congested (at once when the sink cannot tell), or
   * when `signal` aborts / the connection closes: a streamed http body waits here between chunks.
   */
  private async untilWritable(signal: AbortSignal): Promise<void> {
    while (!this.closed && !signal.aborted && this.sink.isCongested?.()) {
      await new Promise<void>((resolve) => {
        let done = false;
        let sub: { dispose(): void } | undefined;
        let timer: NodeJS.Timeout | undefined;
        const wake = () => {
          if (done) return;
          done = true;
          sub?.dispose();
          clearTimeout(timer);
          signal.removeEventListener('abort', wake);
          resolve();
        };
        sub = this.sink.onDrain?.(wake);
        if (done) return sub?.dispose(); // drained synchronously
        // Without a drain event (or one lost), look again shortly.
        timer = setTimeout(wake, sub ? 1000 : 50);
        signal.addEventListener('abort', wake);
      });
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.closeController.abort();
    this.handles.closeAll();
    this.watches.closeAll();
    this.missingWatches.closeAll();
    for (const ac of this.httpAborts.keys()) ac.abort();
    this.httpAborts.clear();
    this.server.connectionClosed(this);
    if (this.sessionRef) this.server.releaseSession(this, this.sessionRef, this.options.terminateOnClose === true);
  }
}

/** The sink as a client without binaryOutput sees it: output as base64 process/output notifications. */
function withoutBinaryOutput(sink: NotificationSink): NotificationSink {
  if (!sink.processOutput) return sink;
  return {
    notify: (m, p) => sink.notify(m, p),
    isCongested: sink.isCongested && (() => sink.isCongested!()),
    onDrain: sink.onDrain && ((l) => sink.onDrain!(l)),
    request: sink.request && ((m, p, signal) => sink.request!(m, p, signal)),
  };
}

/**
 * The session's view of a sink that can ask its client: a question still open when this
 * connection closes is abandoned at once (its answer would come to nobody), whatever the
 * transport does with its own pending calls.
 */
function askable(sink: NotificationSink, closed: AbortSignal): NotificationSink {
  const request = sink.request;
  if (!request) return sink;
  const wrapped: NotificationSink = {
    notify: (m, p) => sink.notify(m, p),
    isCongested: sink.isCongested && (() => sink.isCongested!()),
    onDrain: sink.onDrain && ((l) => sink.onDrain!(l)),
    processOutput: sink.processOutput && ((id, seq, stream, data) => sink.processOutput!(id, seq, stream, data)),
    holdsRecycledOutput: sink.holdsRecycledOutput,
  };
  wrapped.request = (method, params, signal) => {
    if (closed.aborted) return Promise.reject(new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed));
    const both = new AbortController();
    const stop = () => both.abort();
    if (signal.aborted) both.abort();
    signal.addEventListener('abort', stop, { once: true });
    closed.addEventListener('abort', stop, { once: true });
    return request.call(sink, method, params, both.signal).finally(() => {
      signal.removeEventListener('abort', stop);
      closed.removeEventListener('abort', stop);
    });
  };
  return wrapped;
}
