// The connection processor: wires one MessageTransport (stdio, websocket) to one
// ServerConnection. Requests run concurrently, bounded per connection; a refused client
// notification closes the connection; transport close detaches (or ends) the session.
import { RpcConnection } from '../rpc/connection';
import type { Disposable } from '../rpc/event';
import type { MessageTransport } from '../rpc/transport';
import type { OutputStream } from '../protocol/types';
import type { ConnectOptions, NotificationSink, ServerConnection } from '../server/api';
import { checkInFlight, DEFAULT_MAX_IN_FLIGHT } from '../server/in-flight';
import type { RequestRecord } from '../telemetry/api';
import type { ConnectableServer } from './in-process';

export interface ServeOptions extends ConnectOptions {
  /** Requests processed at once on this connection (default 16 384); more → -32001. */
  maxInFlight?: number;
  /** bufferedAmount above which the sink reports congestion, for transports without isCongested (default 4 MiB). */
  congestionThreshold?: number;
  log?: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
}

export interface ServedConnection {
  readonly rpc: RpcConnection;
  readonly connection: ServerConnection;
  /** Resolves when the transport has closed and the server was told. */
  readonly closed: Promise<void>;
  readonly inFlight: number;
}

type CongestionAware = MessageTransport & {
  isCongested?(): boolean;
  /** Binary process/output frames (websocket); the connection uses it only for a client that opted in. */
  sendOutputFrame?(processId: string, seq: number, stream: OutputStream, data: Uint8Array): void;
};

export function serveConnection(server: ConnectableServer, transport: MessageTransport, opts: ServeOptions = {}): ServedConnection {
  const maxInFlight = opts.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
  const threshold = opts.congestionThreshold ?? 4 * 1024 * 1024;
  const label = opts.label ?? 'connection';
  // Telemetry off: no observer at all (nothing per request); on: a span/timer per request,
  // ended by the RpcConnection once the response was handed to the transport.
  const telemetry = server.telemetry?.enabled ? server.telemetry : undefined;
  const rpc = new RpcConnection(transport, telemetry ? { observeRequest: (m) => telemetry.request(m.method, m.id, m.trace) } : {});
  const t = transport as CongestionAware;
  const sink: NotificationSink = {
    notify: (method, params) => rpc.notify(method, params),
    isCongested: () => (t.isCongested ? t.isCongested() : (t.bufferedAmount ?? 0) > threshold),
    onDrain: (listener): Disposable => (t.onDrain ? t.onDrain(() => listener()) : { dispose() {} }),
    // Server → client requests get ids of their own, counting from 1 (the client's ids are its own).
    request: (method, params, signal) => rpc.request(method, params, { signal }),
  };
  if (t.sendOutputFrame) {
    sink.processOutput = (processId, seq, stream, data) => t.sendOutputFrame!(processId, seq, stream, data);
    // sendOutputFrame holds a recycled chunk until its socket write completed.
    sink.holdsRecycledOutput = true;
  }
  // Results go to transport.send, which writes a Base64Text payload as it is (encode.ts).
  const connection = server.connect(sink, { terminateOnClose: opts.terminateOnClose, label, verbatimResults: true });
  let inFlight = 0;
  rpc.setRequestHandler((method, params, _id, call) => {
    checkInFlight(inFlight, maxInFlight);
    inFlight++;
    let p: Promise<unknown>;
    try {
      p = connection.requestUntyped(method, params, call as RequestRecord | undefined);
    } catch (e) {
      inFlight--;
      throw e;
    }
    return p.finally(() => inFlight--);
  });
  rpc.onNotification((n) => {
    if (!connection.notification(n.method, n.params)) {
      opts.log?.('warn', `${label}: closing after unexpected client notification ${n.method}`);
      rpc.close(`protocol error: unexpected notification ${n.method}`);
    }
  });
  const closed = new Promise<void>((resolve) => {
    const done = (reason: string) => {
      opts.log?.('debug', `${label}: closed (${reason})`);
      try {
        connection.close();
      } finally {
        resolve();
      }
    };
    if (rpc.closed) done('already closed');
    else rpc.onClose((info) => done(info.reason));
  });
  return {
    rpc,
    connection,
    closed,
    get inFlight() {
      return inFlight;
    },
  };
}
