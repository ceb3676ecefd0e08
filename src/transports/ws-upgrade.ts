// The client's websocket opening handshake (RFC 6455 §4.1) done here, on a byte stream already
// connected to the server — an `ssh -W` child's stdio, a TCP or TLS socket this module's caller
// opened itself — and the stream then handed to `ws` as an open client WebSocket.
//
// Why not ws's own client (`new WebSocket(url, { createConnection })`): it sends the upgrade with
// Node's `http.request`, and VS Code's proxy support replaces `http.request` in the extension host
// (@vscode/proxy-agent, `http.proxySupport` "override" by default): it puts in its own agent, which
// opens its own socket to the URL's host:port (or to a proxy) and never calls `createConnection`.
// For Connect to Host that host:port is 127.0.0.1:PORT *on the remote machine*; the agent dialled
// this machine's 127.0.0.1:PORT and sent whatever listens there the upgrade with the host's
// bearer token (docs/security.md, "Network paths and proxies"). Here nothing is written anywhere but the given stream.
//
// The checks are ws's own client checks: status 101, `Upgrade: websocket`, `Connection: upgrade`,
// `Sec-WebSocket-Accept` = base64(SHA-1(key + GUID)), no extension or subprotocol we did not ask
// for (we ask for none). Any other answer is an error and the stream is destroyed.
import { createHash, randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { ConnectError } from '../rpc/connect-error';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** A response head longer than this is not a websocket server's answer. */
const MAX_HEAD_BYTES = 16 * 1024;
/** How much of a refusal's body is quoted in the error. */
const MAX_BODY_CHARS = 2000;

/** A failed websocket connect: `status` for a refused upgrade, `code` for a network error (see ConnectError). */
export class WebSocketConnectError extends ConnectError {
  constructor(message: string, status?: number, code?: string) {
    super(message, code, status);
    this.name = 'WebSocketConnectError';
  }
}

export interface StreamUpgradeOptions {
  /** The ws:// or wss:// URL: its host:port goes into `Host`, its path into the request line (and both into messages). */
  url: URL;
  headers: Record<string, string>;
  maxPayload: number;
}

/** The `ws` internals a client WebSocket made from an upgraded stream needs (ws 8: what initAsClient sets). */
interface WsClientState {
  _isServer: boolean;
  _bufferedAmount?: number;
  _redirects?: number;
  _url?: string;
}

/** Writes the upgrade request to `stream`, checks the answer, and gives back an open client WebSocket on it. */
export function upgradeOverStream(stream: Duplex, opts: StreamUpgradeOptions): { done: Promise<WebSocket>; abort(err: WebSocketConnectError): void } {
  const url = opts.url.toString();
  const key = randomBytes(16).toString('base64');
  const expectedAccept = createHash('sha1').update(key + GUID).digest('base64');
  let settle: { resolve(ws: WebSocket): void; reject(e: WebSocketConnectError): void };
  const done = new Promise<WebSocket>((resolve, reject) => (settle = { resolve, reject }));
  let finished = false;
  let buf: Buffer = Buffer.alloc(0);
  let refusal: { status: number; head: string; bodyStart: number; length?: number } | undefined;

  const cleanup = () => {
    stream.off('data', onData);
    stream.off('end', onEnd);
    stream.off('close', onEnd);
    stream.off('error', onError);
  };
  const fail = (err: WebSocketConnectError) => {
    if (finished) return;
    finished = true;
    cleanup();
    stream.on('error', () => undefined);
    stream.destroy();
    settle.reject(err);
  };
  const refused = () => {
    const r = refusal!;
    const body = buf.subarray(r.bodyStart).toString('utf8').slice(0, MAX_BODY_CHARS).trim();
    const what = r.status === 401 ? 'unauthorized (missing or invalid token)' : r.status === 403 ? 'forbidden' : 'upgrade refused';
    fail(new WebSocketConnectError(`cannot connect to ${url}: HTTP ${r.status} ${what}${body ? `: ${body}` : ''}`, r.status));
  };
  function onEnd() {
    if (refusal) return refused();
    fail(new WebSocketConnectError(`cannot connect to ${url}: the connection closed during the websocket handshake`, undefined, 'ECONNRESET'));
  }
  function onError(e: NodeJS.ErrnoException) {
    if (refusal) return refused();
    fail(new WebSocketConnectError(e.code === 'ECONNREFUSED' ? `cannot connect to ${url}: connection refused (ECONNREFUSED) — is the exec-server running?` : `cannot connect to ${url}: ${e.message}`, undefined, e.code));
  }
  function onData(d: Buffer) {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    if (refusal) {
      if (refusal.length !== undefined && buf.length - refusal.bodyStart >= refusal.length) refused();
      else if (buf.length - refusal.bodyStart > MAX_BODY_CHARS) refused();
      return;
    }
    const headEnd = buf.indexOf('\r\n\r\n');
    if (headEnd < 0) {
      if (buf.length > MAX_HEAD_BYTES) fail(new WebSocketConnectError(`cannot connect to ${url}: an oversized answer to the websocket upgrade`, undefined, 'EPROTO'));
      return;
    }
    if (headEnd > MAX_HEAD_BYTES) return fail(new WebSocketConnectError(`cannot connect to ${url}: an oversized answer to the websocket upgrade`, undefined, 'EPROTO'));
    const head = buf.subarray(0, headEnd).toString('latin1');
    const [statusLine, ...lines] = head.split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(statusLine)?.[1]);
    if (!Number.isInteger(status)) return fail(new WebSocketConnectError(`cannot connect to ${url}: not an HTTP answer to the websocket upgrade`, undefined, 'EPROTO'));
    const headers = new Map<string, string>();
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value);
    }
    if (status !== 101) {
      // The server's reason is in the body (ws-auth's "invalid token", …): read it, bounded.
      const length = Number(headers.get('content-length'));
      refusal = { status, head, bodyStart: headEnd + 4, length: Number.isInteger(length) && length >= 0 ? length : undefined };
      return onData(Buffer.alloc(0));
    }
    const bad = (why: string) => fail(new WebSocketConnectError(`cannot connect to ${url}: ${why}`, undefined, 'EPROTO'));
    if ((headers.get('upgrade') ?? '').toLowerCase() !== 'websocket') return bad('invalid Upgrade header in the answer to the websocket upgrade');
    if (!(headers.get('connection') ?? '').toLowerCase().split(/\s*,\s*/).includes('upgrade')) return bad('invalid Connection header in the answer to the websocket upgrade');
    if (headers.get('sec-websocket-accept') !== expectedAccept) return bad('invalid Sec-WebSocket-Accept header');
    if (headers.has('sec-websocket-extensions')) return bad('the server sent a Sec-WebSocket-Extensions header but no extension was requested');
    if (headers.has('sec-websocket-protocol')) return bad('the server sent a subprotocol but none was requested');
    finished = true;
    cleanup();
    // Nothing more is read until ws listens: the bytes after the head are ws's first frames.
    stream.pause();
    let ws: WebSocket;
    try {
      ws = clientWebSocket(stream, buf.subarray(headEnd + 4), opts.maxPayload, url);
    } catch (e) {
      stream.destroy();
      return settle.reject(new WebSocketConnectError(`cannot connect to ${url}: ${e instanceof Error ? e.message : String(e)}`));
    }
    settle.resolve(ws);
  }

  stream.on('data', onData);
  stream.on('end', onEnd);
  stream.on('close', onEnd);
  stream.on('error', onError);
  const target = opts.url;
  const path = `${target.pathname || '/'}${target.search}`;
  const extra = Object.entries(opts.headers)
    .filter(([name, value]) => !/[\r\n:]/.test(name) && !/[\r\n]/.test(value))
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  stream.write(`GET ${path} HTTP/1.1\r\nHost: ${target.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`);
  // A stream that was paused (Connect to Host's proof left ssh's stdout so) flows again for the answer.
  stream.resume();
  return { done, abort: fail };
}

/**
 * An open client WebSocket on an upgraded stream: what ws does after its own client handshake
 * (initAsClient → setSocket), with the client's masking and the receiver expecting unmasked frames.
 */
function clientWebSocket(stream: Duplex, head: Buffer, maxPayload: number, url: string): WebSocket {
  const ws = new (WebSocket as unknown as new (address: null, protocols: undefined, options: { autoPong: boolean }) => WebSocket)(null, undefined, { autoPong: true });
  const state = ws as unknown as WsClientState;
  // ws made a server-side socket (address null); a ws version that does it differently is refused, not guessed at.
  if (state._isServer !== true || typeof (ws as unknown as { setSocket?: unknown }).setSocket !== 'function') throw new Error('this version of ws cannot wrap an upgraded stream');
  state._isServer = false;
  state._bufferedAmount = 0;
  state._redirects = 0;
  state._url = url;
  (ws as unknown as { setSocket(s: Duplex, head: Buffer, o: object): void }).setSocket(stream, head, { allowSynchronousEvents: true, maxPayload, skipUTF8Validation: false });
  // setSocket listens for 'data'; the stream was paused between the head and now.
  stream.resume();
  return ws;
}
