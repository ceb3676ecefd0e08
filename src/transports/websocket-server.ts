// The websocket listener: one JSON-RPC connection per websocket, `GET /readyz` → 200 on the
// same port, periodic pings (dead peers terminated), upgrade-time checks (Origin, auth hook)
// that answer with a plain HTTP status before any JSON-RPC, optional TLS.
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { MAX_MESSAGE_BYTES } from '../protocol/limits';
import { isLoopbackHost, type Authenticate, type AuthResult } from './ws-auth';
import { WebSocketTransport } from './websocket-transport';
import { attachServerReader } from './ws-server-reader';

// The verdict type lives with the authenticators (ws-auth.ts); re-exported for listener users.
export type { AuthResult };

export interface WebSocketListenOptions {
  host: string;
  /** 0 = any free port. */
  port: number;
  /** Largest accepted frame (default MAX_MESSAGE_BYTES, 64 MiB). */
  maxPayload?: number;
  /** Ping period; a peer that did not answer the previous ping is terminated (default 30 000 ms). */
  pingIntervalMs?: number;
  /** Decides each upgrade before the websocket exists (see src/transports/ws-auth.ts). */
  authenticate?: Authenticate;
  /**
   * Browser origins allowed to connect. Upgrades carrying an `Origin` header not in this list
   * are refused with 403 (non-browser clients send no Origin). Default: none allowed.
   */
  allowedOrigins?: string[];
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Send-buffer size above which a connection reports congestion (default 4 MiB). */
  highWaterMark?: number;
  onConnection(transport: WebSocketTransport, req: http.IncomingMessage): void;
  /** An upgrade was refused with this HTTP status before any JSON-RPC (metrics). */
  onReject?(status: number): void;
  /**
   * Sessions the server holds now (attached or detached, waiting for a resume): with it, a new
   * websocket is refused while sessions + websockets reach MAX_SESSIONS (see there).
   */
  sessionCount?: () => number;
  /** A plain HTTP request other than /readyz: true when answered (--detach's proof, src/transports/detach-proof.ts). */
  onHttpRequest?(req: http.IncomingMessage, res: http.ServerResponse): boolean;
  log?: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
}

export const DEFAULT_PING_INTERVAL_MS = 30_000;

// Slowloris: an unauthenticated peer that sends half a request holds a descriptor until a
// timeout ends it (Node's default for headers: 60 s, checked every 30 s), and about a thousand
// of them filled a 1 024-descriptor table, so a client WITH the token was refused (libuv then
// accepts and closes every new connection). Connections that have not become a websocket yet
// (headers, TLS handshake, an HTTP request) are bounded in time and in number; at the bound the
// OLDEST such connection is cut, so a flood of half-sent requests cannot keep out a client that
// finishes its handshake in time.
/** Time to receive a request's headers / the whole request. */
export const HEADERS_TIMEOUT_MS = 10_000;
export const REQUEST_TIMEOUT_MS = 15_000;
/** Connections not (yet) upgraded to a websocket, at most. */
export const MAX_PENDING_CONNECTIONS = 128;
/**
 * Websockets open at once, at most: past it an upgrade is answered 503 with the reason. Each
 * holds a descriptor, a send buffer and a JSON-RPC connection with its own handles, so a peer
 * with the token could otherwise fill the descriptor table or the heap, and a crash of the
 * server takes every session's processes with it.
 */
export const MAX_CONNECTIONS = 128;
/**
 * Sessions, at most. A session outlives its websocket (detached until its TTL, with its
 * processes), so a peer that connects, initializes and leaves, in a loop, otherwise piles up
 * sessions without ever holding many websockets. A websocket is admitted only while
 * sessions + websockets stay below this: each websocket not yet initialized may still make one
 * session, so the sessions never exceed it. A client that comes to resume its session is
 * refused too while the server is full (503; it may retry once a detached session expired).
 */
export const MAX_SESSIONS = 256;

export interface WebSocketListener {
  /** ws://host:port (wss:// with TLS) */
  readonly url: string;
  readonly port: number;
  readonly connectionCount: number;
  /** Stops accepting, closes every connection. */
  close(): Promise<void>;
}

function rejectUpgrade(socket: Duplex, status: number, message: string): void {
  const body = `${message}\n`;
  try {
    socket.write(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\n` +
        'Connection: close\r\nContent-Type: text/plain; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  } finally {
    socket.destroy();
  }
}

export async function listenWebSocket(opts: WebSocketListenOptions): Promise<WebSocketListener> {
  const log = opts.log ?? (() => {});
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxPayload ?? MAX_MESSAGE_BYTES, perMessageDeflate: false });
  const alive = new WeakMap<WebSocket, boolean>();
  const sockets = new Set<Socket | Duplex>();
  /** Websockets admitted (from the upgrade on, until closed): MAX_CONNECTIONS counts these. */
  let open = 0;

  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const pathOnly = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && pathOnly === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
      return;
    }
    if (opts.onHttpRequest?.(req, res)) return;
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found (connect with a websocket)\n');
  };
  const limits = { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, connectionsCheckingInterval: 1_000 };
  const server = opts.tls
    ? https.createServer({ cert: opts.tls.cert, key: opts.tls.key, handshakeTimeout: HEADERS_TIMEOUT_MS, ...limits }, onRequest)
    : http.createServer(limits, onRequest);
  /** Accepted sockets that are not a websocket yet, oldest first (a Set keeps insertion order). */
  const pending = new Set<Socket | Duplex>();
  const onAccepted = (s: Socket) => {
    sockets.add(s);
    pending.add(s);
    s.on('close', () => {
      sockets.delete(s);
      pending.delete(s);
    });
    if (pending.size > MAX_PENDING_CONNECTIONS) {
      const oldest = pending.values().next().value!;
      pending.delete(oldest);
      oldest.destroy();
    }
  };
  // TLS: counted once the handshake is done (the socket the upgrade sees); the handshake itself
  // is bounded in time only (handshakeTimeout).
  server.on(opts.tls ? 'secureConnection' : 'connection', onAccepted);
  server.on('tlsClientError', (e: Error) => log('debug', `TLS handshake failed: ${e.message}`));

  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const peer = `${req.socket.remoteAddress}:${req.socket.remotePort}`;
    void (async () => {
      const origin = req.headers.origin;
      if (origin !== undefined && !(opts.allowedOrigins ?? []).includes(origin)) {
        log('warn', `refused websocket from ${peer}: origin ${origin} not allowed`);
        opts.onReject?.(403);
        rejectUpgrade(socket, 403, `origin ${origin} is not allowed`);
        return;
      }
      if (opts.authenticate) {
        let result: AuthResult;
        try {
          result = await opts.authenticate(req);
        } catch (e) {
          result = { ok: false, status: 500, message: `authentication failed: ${e instanceof Error ? e.message : String(e)}` };
        }
        if (!result.ok) {
          log('warn', `refused websocket from ${peer}: ${result.status} ${result.message}`);
          opts.onReject?.(result.status);
          rejectUpgrade(socket, result.status, result.message);
          return;
        }
      }
      if (socket.destroyed) return;
      // Judged here, after every await: the count cannot change before `open` is taken.
      const sessions = opts.sessionCount?.() ?? 0;
      const full =
        open >= MAX_CONNECTIONS
          ? `too many connections: ${open} websockets open (at most ${MAX_CONNECTIONS}); retry later`
          : sessions + open >= MAX_SESSIONS
            ? `too many sessions: ${sessions} sessions and ${open} websockets (at most ${MAX_SESSIONS} together); retry once a detached session expired`
            : undefined;
      if (full) {
        log('warn', `refused websocket from ${peer}: ${full}`);
        opts.onReject?.(503);
        rejectUpgrade(socket, 503, full);
        return;
      }
      pending.delete(req.socket);
      open++;
      let counted = true;
      const uncount = () => {
        if (counted) open--;
        counted = false;
      };
      socket.once('close', uncount);
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.once('close', uncount);
        // Frames read into recycled slabs on plain TCP (./ws-server-reader.ts); ws's receiver otherwise.
        attachServerReader(ws, opts.maxPayload ?? MAX_MESSAGE_BYTES);
        alive.set(ws, true);
        ws.on('pong', () => alive.set(ws, true));
        const transport = new WebSocketTransport(ws, { highWaterMark: opts.highWaterMark });
        log('debug', `websocket connected from ${peer}`);
        opts.onConnection(transport, req);
      });
    })();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // The loopback rule let a name through without authentication (`localhost`, `*.localhost`),
  // but a name is only as local as what it resolved to: /etc/hosts may send `dev.localhost` to
  // 0.0.0.0 or a public address. Judged by the address actually bound.
  const bare = opts.host.startsWith('[') && opts.host.endsWith(']') ? opts.host.slice(1, -1) : opts.host;
  const bound = (server.address() as AddressInfo).address;
  if (!opts.authenticate && net.isIP(bare) === 0 && !isLoopbackHost(bound)) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw new Error(`refusing to listen without authentication: ${opts.host} resolved to ${bound}, which is not a loopback address`);
  }
  server.on('error', (e) => log('error', `listener error: ${e.message}`));
  // Started only once listening: a failed listen (EADDRINUSE) leaves no interval behind.
  const ping = setInterval(() => {
    for (const ws of wss.clients) {
      if (alive.get(ws) === false) {
        log('info', 'terminating an unresponsive websocket peer (no pong)');
        ws.terminate();
        continue;
      }
      alive.set(ws, false);
      try {
        ws.ping();
      } catch {
        /* closing */
      }
    }
  }, opts.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS);
  ping.unref();
  const port = (server.address() as AddressInfo).port;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const url = `${opts.tls ? 'wss' : 'ws'}://${host}:${port}`;

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    get connectionCount() {
      return wss.clients.size;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        clearInterval(ping);
        for (const ws of wss.clients) ws.close(1001, 'server shutting down');
        server.close(() => resolve());
        // Give peers a moment to answer the close frame, then cut what is left.
        setTimeout(() => {
          for (const ws of wss.clients) ws.terminate();
          for (const s of sockets) s.destroy();
        }, 500).unref();
        wss.close();
      });
      return closing;
    },
  };
}
