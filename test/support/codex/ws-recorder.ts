// A recording websocket proxy for JSON-RPC: listens on 127.0.0.1 (free port), and for each client
// upgrade request first opens a connection to the upstream URL (passing the client's Authorization
// header through; an upstream HTTP refusal such as 401 is answered to the client as is), then
// relays frames both ways unchanged and records every frame, parsed. Put it between Codex and an
// exec-server to prove what Codex sent (process/start, its sandbox object, fs/writeFile …) and
// what the server answered (process/exited with sandboxDenied …), whichever server it is.
// Plain Node + ws, so the VS Code e2e suite can bundle it too.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer, type RawData } from 'ws';

export interface RecordedFrame {
  /** Connection number (0-based, in accept order): JSON-RPC ids are per connection. */
  conn: number;
  /** 'out': client → server; 'in': server → client. */
  dir: 'out' | 'in';
  /** Parsed JSON (undefined when the frame was not JSON). */
  msg: any;
  raw: string;
  at: number;
}

/** A request the client sent and the server's answer to it (if any yet). */
export interface RecordedCall {
  conn: number;
  id: unknown;
  method: string;
  params: any;
  result?: any;
  error?: { code: number; message: string; data?: unknown };
}

export interface WsRecorder {
  /** ws://127.0.0.1:PORT — give this to the client instead of the upstream URL. */
  url: string;
  frames: RecordedFrame[];
  /** Requests the client sent with `method` (all when omitted), paired with the answers. */
  calls(method?: string): RecordedCall[];
  /** Notifications the server sent with `method`, in order (params only). */
  notifications(method: string): any[];
  /** The upgrade requests' Authorization headers, per connection. */
  authorizations: (string | undefined)[];
  stop(): Promise<void>;
}

const text = (d: RawData): string => (Array.isArray(d) ? Buffer.concat(d) : Buffer.from(d as ArrayBuffer)).toString('utf8');

/** Starts a recording proxy in front of `upstreamUrl`. */
export async function startWsRecorder(upstreamUrl: string): Promise<WsRecorder> {
  const frames: RecordedFrame[] = [];
  const authorizations: (string | undefined)[] = [];
  const sockets = new Set<WebSocket>();
  const rawSockets = new Set<Duplex>();
  let nextConn = 0;
  // The upstream handshake comes first, so the client sees the upstream's own answer: an HTTP
  // refusal (401 for a bad token …) is passed back as that status instead of an upgrade.
  const http = createServer((_req, res) => res.writeHead(426).end());
  const wss = new WebSocketServer({ noServer: true });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(0, '127.0.0.1', () => resolve());
  });

  http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const conn = nextConn++;
    const auth = req.headers.authorization;
    authorizations[conn] = auth;
    rawSockets.add(socket);
    socket.once('close', () => rawSockets.delete(socket));
    socket.on('error', () => {});
    const upstream = new WebSocket(upstreamUrl, { headers: auth ? { authorization: auth } : {} });
    sockets.add(upstream);
    upstream.on('unexpected-response', (_r, res) => {
      frames.push({ conn, dir: 'in', msg: undefined, raw: `HTTP ${res.statusCode}`, at: Date.now() });
      const body: Buffer[] = [];
      res.on('data', (d: Buffer) => body.push(d));
      res.on('end', () => {
        const text = Buffer.concat(body);
        socket.end(`HTTP/1.1 ${res.statusCode} ${res.statusMessage ?? ''}\r\nContent-Length: ${text.length}\r\nConnection: close\r\n\r\n${text}`);
      });
      sockets.delete(upstream);
    });
    upstream.once('error', () => {
      sockets.delete(upstream);
      if (!socket.destroyed) socket.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    });
    upstream.once('open', () => wss.handleUpgrade(req, socket, head, (client) => relay(conn, client, upstream)));
  });

  const relay = (conn: number, client: WebSocket, upstream: WebSocket) => {
    sockets.add(client);
    const record = (dir: 'in' | 'out', raw: string) => {
      let msg: any;
      try {
        msg = JSON.parse(raw);
      } catch {
        msg = undefined;
      }
      frames.push({ conn, dir, msg, raw, at: Date.now() });
    };
    client.on('message', (d) => {
      const raw = text(d);
      record('out', raw);
      if (upstream.readyState === WebSocket.OPEN) upstream.send(raw);
    });
    upstream.on('message', (d) => {
      const raw = text(d);
      record('in', raw);
      if (client.readyState === WebSocket.OPEN) client.send(raw);
    });
    // Close codes 1005/1006 cannot be sent; map them to a normal close.
    const closeCode = (c: number) => (c === 1005 || c === 1006 || c < 1000 ? 1000 : c);
    client.on('close', (code) => {
      sockets.delete(client);
      if (upstream.readyState === WebSocket.OPEN) upstream.close(closeCode(code));
      else upstream.terminate();
    });
    upstream.on('close', (code) => {
      sockets.delete(upstream);
      if (client.readyState === WebSocket.OPEN) client.close(closeCode(code));
    });
    upstream.on('error', () => client.terminate());
    client.on('error', () => upstream.terminate());
  };

  const calls = (method?: string): RecordedCall[] => {
    const out: RecordedCall[] = [];
    const byKey = new Map<string, RecordedCall>();
    for (const f of frames) {
      const m = f.msg;
      if (!m || typeof m !== 'object') continue;
      if (f.dir === 'out' && typeof m.method === 'string' && m.id !== undefined && m.id !== null) {
        const c: RecordedCall = { conn: f.conn, id: m.id, method: m.method, params: m.params };
        byKey.set(`${f.conn}:${JSON.stringify(m.id)}`, c);
        if (method === undefined || method === m.method) out.push(c);
      } else if (f.dir === 'in' && m.method === undefined && m.id !== undefined) {
        const c = byKey.get(`${f.conn}:${JSON.stringify(m.id)}`);
        if (c) {
          if ('result' in m) c.result = m.result;
          if ('error' in m) c.error = m.error;
        }
      }
    }
    return out;
  };

  return {
    url: `ws://127.0.0.1:${(http.address() as AddressInfo).port}`,
    frames,
    calls,
    notifications: (method) => frames.filter((f) => f.dir === 'in' && f.msg?.method === method && f.msg.id === undefined).map((f) => f.msg.params),
    authorizations,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.terminate();
        for (const s of rawSockets) s.destroy();
        wss.close();
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
