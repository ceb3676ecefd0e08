// Client side of the websocket transport: connect with a timeout, optional bearer token,
// and errors that say what went wrong (refused, HTTP 401, timeout).
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { MAX_MESSAGE_BYTES } from '../protocol/limits';
import { ConnectError } from '../rpc/connect-error';
import { WebSocketTransport } from './websocket-transport';
import { ClientFrameReader } from './ws-client-reader';

export interface WebSocketConnectOptions {
  /** Sent as `Authorization: Bearer <token>` on the upgrade request. */
  token?: string;
  /** Default 10 000 ms. */
  connectTimeoutMs?: number;
  headers?: Record<string, string>;
  maxPayload?: number;
  /** Extra TLS options (e.g. `ca` for a self-signed server certificate). */
  ca?: string | Buffer;
  rejectUnauthorized?: boolean;
  /** Ping the server this often; no pong by the next ping → the connection is treated as lost (default 30 000 ms, 0 = off). */
  keepaliveMs?: number;
  /**
   * The byte stream to speak the websocket over instead of a TCP connection to the URL's host
   * (e.g. an `ssh -W` child's stdio: ./stream-socket.ts); the URL still names Host and path.
   */
  createConnection?: () => Duplex;
  /**
   * Who parses incoming frames on a plain ws:// connection: 'own' (default; ./ws-client-reader.ts,
   * zero-copy slabs) or 'ws' (the library's receiver; `npm run bench -- --ws-reader=ws` compares).
   * wss:// and `createConnection` streams always use ws's.
   */
  frameReader?: 'own' | 'ws';
}

/** A failed websocket connect: `status` for a refused upgrade, `code` for a network error (see ConnectError). */
export class WebSocketConnectError extends ConnectError {
  constructor(message: string, status?: number, code?: string) {
    super(message, code, status);
    this.name = 'WebSocketConnectError';
  }
}

export function connectWebSocketTransport(url: string, opts: WebSocketConnectOptions = {}): Promise<WebSocketTransport> {
  const timeoutMs = opts.connectTimeoutMs ?? 10_000;
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  const maxPayload = opts.maxPayload ?? MAX_MESSAGE_BYTES;
  // Plain ws:// over our own TCP socket: frames are read into slabs we own (./ws-client-reader.ts).
  const reader = !opts.createConnection && /^ws:/i.test(url) && opts.frameReader !== 'ws' ? new ClientFrameReader(maxPayload) : undefined;
  const createConnection = opts.createConnection ?? reader?.createConnection;
  return new Promise<WebSocketTransport>((resolve, reject) => {
    let ws: WebSocket;
    try {
      ws = new WebSocket(url, {
        headers,
        maxPayload,
        perMessageDeflate: false,
        // No ws handshakeTimeout: its error carries no code; our own timer below (ETIMEDOUT) bounds connect + handshake.
        ca: opts.ca,
        rejectUnauthorized: opts.rejectUnauthorized,
        ...(createConnection ? { createConnection: createConnection as unknown as WebSocket.ClientOptions['createConnection'] } : {}),
      });
    } catch (e) {
      reject(new WebSocketConnectError(`invalid exec-server URL ${url}: ${e instanceof Error ? e.message : String(e)}`));
      return;
    }
    let settled = false;
    const fail = (err: WebSocketConnectError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ws.removeAllListeners();
      ws.on('error', () => {});
      ws.terminate();
      reject(err);
    };
    const timer = setTimeout(() => fail(new WebSocketConnectError(`timed out connecting to ${url} after ${timeoutMs} ms`, undefined, 'ETIMEDOUT')), timeoutMs);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        if (body.length < 2000) body += d;
      });
      const done = () => {
        const status = res.statusCode ?? 0;
        const what = status === 401 ? 'unauthorized (missing or invalid token)' : status === 403 ? 'forbidden' : 'upgrade refused';
        fail(new WebSocketConnectError(`cannot connect to ${url}: HTTP ${status} ${what}${body.trim() ? `: ${body.trim()}` : ''}`, status));
      };
      res.on('end', done);
      res.on('error', done);
      res.on('close', done);
    });
    ws.on('error', (e: NodeJS.ErrnoException) => {
      const code = e.code;
      const msg =
        code === 'ECONNREFUSED'
          ? `cannot connect to ${url}: connection refused (ECONNREFUSED) — is the exec-server running?`
          : `cannot connect to ${url}: ${e.message}`;
      fail(new WebSocketConnectError(msg, undefined, code));
    });
    ws.on('open', () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ws.removeAllListeners('error');
      ws.removeAllListeners('unexpected-response');
      reader?.attach(ws);
      resolve(new WebSocketTransport(ws, { keepaliveMs: opts.keepaliveMs ?? 30_000, maxMessageBytes: maxPayload }));
    });
  });
}
