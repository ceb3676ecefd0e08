// Client side of the websocket transport: connect with a timeout, optional bearer token,
// and errors that say what went wrong (refused, HTTP 401, timeout).
//
// Which path a connection takes decides who can see it (docs/security.md, "Network paths and proxies"):
//  - over a given stream (`stream`: Connect to Host's `ssh -W` channel): the upgrade is written
//    on that stream by ./ws-upgrade.ts — never Node's http stack, which VS Code's proxy support
//    replaces in the extension host with an agent that opens its own socket to the URL's host;
//  - to a loopback host (127.0.0.0/8, ::1, localhost): our own TCP (or TLS) socket and the same
//    handshake — a proxy is never right for this machine's own ports;
//  - to any other host: ws's client over Node's http stack, so in VS Code the user's proxy
//    settings (http.proxy, the system's) apply, as to the rest of VS Code's traffic.
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import * as tls from 'node:tls';
import WebSocket from 'ws';
import { MAX_MESSAGE_BYTES } from '../protocol/limits';
import { WebSocketTransport } from './websocket-transport';
import { isLoopbackHost } from './ws-auth';
import { ClientFrameReader } from './ws-client-reader';
import { upgradeOverStream, WebSocketConnectError } from './ws-upgrade';

export { WebSocketConnectError } from './ws-upgrade';

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
   * A byte stream already connected to the server (e.g. an `ssh -W` child's stdio:
   * ./stream-socket.ts) to speak the websocket over, instead of a connection to the URL's host;
   * the URL still names Host and path. Nothing is sent anywhere else. Destroyed if the upgrade fails.
   */
  stream?: Duplex;
  /**
   * Who parses incoming frames on a plain ws:// connection to a loopback host or through ws: 'own'
   * (default; ./ws-client-reader.ts, zero-copy slabs) or 'ws' (the library's receiver; `npm run
   * bench -- --ws-reader=ws` compares). wss:// and `stream` connections always use ws's.
   */
  frameReader?: 'own' | 'ws';
}

export function connectWebSocketTransport(url: string, opts: WebSocketConnectOptions = {}): Promise<WebSocketTransport> {
  const timeoutMs = opts.connectTimeoutMs ?? 10_000;
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  const maxPayload = opts.maxPayload ?? MAX_MESSAGE_BYTES;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (opts.stream) {
    // A given stream carries plain websocket frames (ssh already encrypts it): never anything else, never elsewhere.
    if (parsed?.protocol !== 'ws:') {
      opts.stream.destroy();
      return Promise.reject(new WebSocketConnectError(`invalid exec-server URL ${url} for a forwarded stream: it must be ws://`));
    }
    return connectDirect(parsed, url, headers, maxPayload, timeoutMs, opts);
  }
  if (parsed && /^wss?:$/.test(parsed.protocol) && isLoopbackHost(parsed.hostname)) return connectDirect(parsed, url, headers, maxPayload, timeoutMs, opts);
  // Plain ws:// over a TCP socket: frames are read into slabs we own (./ws-client-reader.ts).
  const reader = /^ws:/i.test(url) && opts.frameReader !== 'ws' ? new ClientFrameReader(maxPayload) : undefined;
  const createConnection = reader?.createConnection;
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
    const timer = setTimeout(() => fail(timedOut(url, timeoutMs)), timeoutMs);
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

const timedOut = (url: string, ms: number) => new WebSocketConnectError(`timed out connecting to ${url} after ${ms} ms`, undefined, 'ETIMEDOUT');

/**
 * The upgrade on a stream we hold: the given one, or our own socket to a loopback host. No
 * call of http.request/https.request (./ws-upgrade.ts says why).
 */
function connectDirect(target: URL, url: string, headers: Record<string, string>, maxPayload: number, timeoutMs: number, opts: WebSocketConnectOptions): Promise<WebSocketTransport> {
  const secure = target.protocol === 'wss:';
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const port = Number(target.port) || (secure ? 443 : 80);
  const reader = !opts.stream && !secure && opts.frameReader !== 'ws' ? new ClientFrameReader(maxPayload) : undefined;
  let stream: Duplex;
  if (opts.stream) stream = opts.stream;
  else if (secure) stream = tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, ca: opts.ca, rejectUnauthorized: opts.rejectUnauthorized ?? true, ALPNProtocols: ['http/1.1'] });
  else stream = reader ? reader.createConnection({ host, port }) : net.connect({ host, port });
  return new Promise<WebSocketTransport>((resolve, reject) => {
    let upgrade: ReturnType<typeof upgradeOverStream> | undefined;
    let settled = false;
    const finish = (err: WebSocketConnectError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (upgrade) upgrade.abort(err);
      else {
        stream.on('error', () => undefined);
        stream.destroy();
      }
      reject(err);
    };
    const timer = setTimeout(() => finish(timedOut(url, timeoutMs)), timeoutMs);
    const start = () => {
      stream.off('error', onConnectError);
      if (settled) return;
      upgrade = upgradeOverStream(stream, { url: target, headers, maxPayload });
      upgrade.done.then(
        (ws) => {
          if (settled) return void ws.terminate();
          settled = true;
          clearTimeout(timer);
          reader?.attach(ws);
          resolve(new WebSocketTransport(ws, { keepaliveMs: opts.keepaliveMs ?? 30_000, maxMessageBytes: maxPayload }));
        },
        (e: WebSocketConnectError) => finish(e),
      );
    };
    const onConnectError = (e: NodeJS.ErrnoException) =>
      finish(
        new WebSocketConnectError(
          e.code === 'ECONNREFUSED' ? `cannot connect to ${url}: connection refused (ECONNREFUSED) — is the exec-server running?` : `cannot connect to ${url}: ${e.message}`,
          undefined,
          e.code,
        ),
      );
    if (opts.stream) return start();
    stream.once('error', onConnectError);
    stream.once(secure ? 'secureConnect' : 'connect', start);
  });
}
