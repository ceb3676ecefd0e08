// The seams of a connection, types only: what a method handler may use of its connection
// (ConnectionContext) and what a connection needs of its server (ConnectionHost). The method
// tables (./methods/*.ts, ./methods/spec.ts) and the connection import these, never each other
// or the server, so every import in src/server points downward.
import type { HttpBodyDeltaNotification, HttpRequestResult } from '../protocol/types';
import type { NotificationSink } from './api';
import type { FileHandles } from './fs/handles';
import type { MissingWatches } from './fs/missing-watch';
import type { Watches } from './fs/watch';
import type { HttpRequestInput } from './http-pinned';
import type { PidNamespaceMode } from './sandbox/bwrap';
import type { Session } from './session';
import type { ServerTelemetry } from '../telemetry/api';

/**
 * Performs one http/request (httpRequest in ./http); `streamFinished` fires once a streamed
 * body is done; `writable` resolves when the client can take more (backpressure).
 */
export type HttpRunner = (
  i: HttpRequestInput,
  emit: (n: HttpBodyDeltaNotification) => void,
  cancel: AbortSignal,
  streamFinished: () => void,
  writable: () => Promise<void>,
) => Promise<HttpRequestResult>;

/** What method handlers may use. */
export interface ConnectionContext {
  session(): Session;
  /** Aborted when the connection closes (ends long-polls whose answer nobody can receive). */
  readonly closedSignal: AbortSignal;
  readonly handles: FileHandles;
  readonly watches: Watches;
  readonly missingWatches: MissingWatches;
  /** [extension] The client negotiated binaryOutput: byte payloads (fs/readBlock) may be raw Buffers. */
  readonly binaryOutput: boolean;
  /** The carrier serializes results itself (ServerOptions' ConnectOptions.verbatimResults): a large answer may be built as JSON text. */
  readonly verbatimResults: boolean;
  http(input: HttpRequestInput, run: HttpRunner): Promise<HttpRequestResult>;
  /** fs/readFile's largest file (ServerOptions.maxReadFileBytes). */
  readonly maxReadFileBytes: number;
  /** The server's log (ServerOptions.log). */
  log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
  /** A managed sandbox's pid namespace (ServerOptions.linuxSandboxPidNamespace). */
  readonly sandboxPidNamespace: PidNamespaceMode;
  /** ServerOptions.linuxSandboxTransparentTcp (undefined: off). */
  readonly sandboxTransparentTcp?: boolean;
}


/** What a Connection needs of its server (ExecServer implements it). */
export interface ConnectionHost {
  readonly telemetry: ServerTelemetry;
  log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
  /** initialize: a new session, or resume a detached one (`owner`: the connection, an opaque token). */
  openSession(owner: { readonly label: string }, sink: NotificationSink, resumeSessionId: string | undefined, flowControl?: boolean): Session;
  /** The connection ended: detach (keep processes for the TTL) or end the session. */
  releaseSession(owner: object, s: Session, terminate: boolean): void;
  /** A connection ended (initialized or not). */
  connectionClosed(conn: object): void;
  /** ServerOptions.linuxSandboxPidNamespace, default `isolate`. */
  readonly sandboxPidNamespace: PidNamespaceMode;
  readonly sandboxTransparentTcp?: boolean;
}
