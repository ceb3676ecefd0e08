// The narrow telemetry hooks the engine, transports and client call, with no-op defaults.
// Nothing here imports OpenTelemetry: with telemetry off (the default) the SDK is never loaded
// and each hook is an empty call on a shared object. The OpenTelemetry implementation is in
// ./otel.ts, loaded on demand by ./load.ts; per-method statistics without a collector are in
// ./request-stats.ts.
import type { RequestId, TraceContext } from '../protocol/types';

/** The error of a failed request (its JSON-RPC code). */
export interface CallError {
  code: number;
  message: string;
}

/** One inbound request: its span and timer. `end` is called once its response was handed to the transport. */
export interface RequestRecord {
  end(error?: CallError): void;
}

/** One process: start → exit. */
export interface ProcessRecord {
  /** process/start succeeded (`sandboxType` as answered: "none", "linuxSeccomp"). */
  started(sandboxType: string): void;
  /** process/start failed: nothing runs. */
  failed(error: CallError): void;
  /** process/exited was reported (may come before `started` for a very short process). */
  exited(exitCode: number, sandboxDenied: boolean): void;
}

/** Why a connection was refused before any JSON-RPC (the HTTP status of the refused upgrade). */
export type RejectReason = '401' | '403' | 'limit' | 'other';

/** Server-side hooks (ExecServer, transports, CLI). */
export interface ServerTelemetry {
  /** False for the no-op: callers may skip work (e.g. not install per-request observers). */
  readonly enabled: boolean;
  /** A request arrived; `trace` is the raw wire member (malformed or absent → a new root span). */
  request(method: string, id: RequestId | undefined, trace: unknown): RequestRecord;
  /** process/start is being handled as part of `parent`. */
  process(parent: RequestRecord): ProcessRecord;
  /** Bytes of process output handed to a connection. */
  processOutput(bytes: number): void;
  connectionOpened(): void;
  connectionClosed(): void;
  sessionOpened(): void;
  sessionEnded(): void;
  connectionRejected(reason: RejectReason): void;
  /** Flushes pending spans/metrics and stops exporters (clean shutdown). */
  shutdown(): Promise<void>;
}

/** One outbound request from a client. */
export interface ClientCall {
  /** The W3C trace context to send as the request's `trace` member (undefined: none). */
  readonly trace?: TraceContext;
  end(error?: CallError): void;
}

/** Client-side hooks (ExecServerClient): a span per request and the context it injects. */
export interface ClientTelemetry {
  call(method: string): ClientCall;
}

const NOOP_RECORD: RequestRecord & ProcessRecord & ClientCall = {
  end() {},
  started() {},
  failed() {},
  exited() {},
};

export const NOOP_SERVER_TELEMETRY: ServerTelemetry = {
  enabled: false,
  request: () => NOOP_RECORD,
  process: () => NOOP_RECORD,
  processOutput() {},
  connectionOpened() {},
  connectionClosed() {},
  sessionOpened() {},
  sessionEnded() {},
  connectionRejected() {},
  shutdown: () => Promise.resolve(),
};

/** Several client hooks as one (e.g. the extension's statistics + OpenTelemetry spans). The first trace wins. */
export function combineClientTelemetry(...parts: (ClientTelemetry | undefined)[]): ClientTelemetry | undefined {
  const list = parts.filter((p): p is ClientTelemetry => p !== undefined);
  if (list.length <= 1) return list[0];
  return {
    call(method) {
      const calls = list.map((p) => p.call(method));
      return {
        trace: calls.find((c) => c.trace !== undefined)?.trace,
        end(error) {
          for (const c of calls) c.end(error);
        },
      };
    },
  };
}

/** The RejectReason of a refused upgrade's HTTP status. */
export function rejectReason(status: number): RejectReason {
  if (status === 401) return '401';
  if (status === 403) return '403';
  if (status === 429 || status === 503) return 'limit';
  return 'other';
}
