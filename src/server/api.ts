// The seam between transports and the stateful server: a transport-free, typed connection.
// Transports (stdio, websocket) wrap it with an RpcConnection; the in-process client calls
// it directly (no JSON, no socket).
import type { NotificationMap, NotificationMethod, OutputStream, ParamsOf, RequestMethod, ResultOf } from '../protocol/types';
import type { RequestRecord, ServerTelemetry } from '../telemetry/api';
import type { PidNamespaceMode } from './sandbox/bwrap';

/** Where a connection's server→client notifications go. */
export interface NotificationSink {
  notify<M extends NotificationMethod>(method: M, params: NotificationMap[M]): void;
  /**
   * Optional backpressure hint: true while the peer cannot take more data (e.g. the socket
   * buffer is full). The server pauses reading child output while this is true.
   */
  isCongested?(): boolean;
  /** Optional: subscribe to "no longer congested". */
  onDrain?(listener: () => void): { dispose(): void };
  /**
   * Optional: takes process output as bytes (a binary websocket frame, or the Buffer itself in
   * process) instead of a base64 process/output notification. Only set on a connection whose
   * client opted in (binaryOutput); the Buffer must not be modified (it is also retained).
   */
  processOutput?(processId: string, seq: number, stream: OutputStream, data: Buffer): void;
  /**
   * processOutput keeps `data` only while it holds it (holdChunk/releaseChunk of
   * ./process/read-blocks.ts), e.g. until the socket write completed. Without this flag the
   * Buffer is the sink's to keep: its memory is never reused.
   */
  holdsRecycledOutput?: boolean;
  /**
   * Optional: a request to the client (server → client; network/policyRequest). Resolves with
   * the client's `result`; rejects with its error, when the connection closes first, or when
   * `signal` aborts (the answer is then ignored). Absent: this client cannot be asked.
   */
  request?(method: string, params: unknown, signal: AbortSignal): Promise<unknown>;
}

/**
 * One client connection's view of the server. Enforces initialize/initialized gating,
 * decodes/validates params (so untyped wire input is safe), and routes to the session.
 */
export interface ServerConnection {
  /** Handles one request. Rejects with RpcError (code + reference message) on failure. */
  request<M extends RequestMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>>;
  /**
   * Untyped entry point for wire input (unknown method names → -32601). `call` is the request's
   * telemetry record (its span parents the spans of a started process).
   */
  requestUntyped(method: string, params: unknown, call?: RequestRecord): Promise<unknown>;
  /**
   * A client notification. `initialized` is accepted; anything else is a protocol error
   * and the caller must close the connection (returns false).
   */
  notification(method: string, params: unknown): boolean;
  /** The transport ended: detach the session (processes keep running for the resume TTL). */
  close(): void;
  /**
   * In-process only: stops http/request `requestId` (its streamed body ends with an error
   * delta and no more of it is read). Absent where the engine is not in this process.
   */
  cancelHttpRequest?(requestId: string): void;
}

export interface ServerOptions {
  /** Detached-session TTL before its processes are terminated (default 30 000 ms). */
  detachedSessionTtlMs?: number;
  /** Retention after exit+close (default 30 000 ms). */
  exitedProcessRetentionMs?: number;
  /** Retained output per process (default 1 MiB). */
  maxRetainedBytesPerProcess?: number;
  /** Open fs read handles per connection (default 128). */
  maxOpenHandles?: number;
  /** Maximum live processes per session (default 1024). */
  maxProcessesPerSession?: number;
  /** Requests in flight per connection before new ones get -32001 (default 16 384; the CLI's --max-in-flight). */
  maxInFlightPerConnection?: number;
  /**
   * Processes the whole server holds at once, across sessions: live ones and exited ones still
   * kept readable (each retains up to maxRetainedBytesPerProcess). Default: no bound beyond
   * maxProcessesPerSession. An embedding host whose memory is the user's (the agent endpoint in
   * the VS Code extension host) bounds it.
   */
  maxHeldProcesses?: number;
  /** The sum of the outputWindow (unacknowledged output, retained) of the processes held. Default: no bound. */
  maxOutputWindowBytes?: number;
  /** fs/readFile's largest file, also for a file that grows while it is read (default 128 MiB). */
  maxReadFileBytes?: number;
  /** Spans and metrics (src/telemetry); default: the no-op (nothing loaded, nothing recorded). */
  telemetry?: ServerTelemetry;
  /**
   * A managed sandbox's pid namespace (the CLI's --linux-sandbox-pid-namespace, as the
   * reference's): `isolate` (default) its own, `inherit` the server's (src/server/sandbox/bwrap.ts).
   */
  linuxSandboxPidNamespace?: PidNamespaceMode;
  /**
   * Transparent TCP for every proxied start, `transparentTcp` or not (the CLI's
   * --linux-sandbox-transparent-tcp, as the reference's; src/server/network/transparent.ts).
   */
  linuxSandboxTransparentTcp?: boolean;
  /** Is this transport one where end-of-connection ends the session (stdio)? Decided per connect(). */
  log?: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
}

export interface ConnectOptions {
  /** stdio: end of input ends the session and terminates its processes (no detach). */
  terminateOnClose?: boolean;
  /** A label for logs (peer address, "in-process", ...). */
  label?: string;
  /**
   * The carrier serializes each result itself (src/transports/serve.ts): fs/readFile's dataBase64
   * may then be a Base64Text (the base64 in a buffer) and fs/walk's entries a JsonText (their JSON
   * text), both in src/rpc/verbatim.ts, that it writes as they are. Otherwise (in process, tests,
   * wrappers) every result member is the plain value.
   */
  verbatimResults?: boolean;
}
