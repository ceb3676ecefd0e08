// How `exec-server --detach` tells that the listener on a run record's port is this user's detached
// server before it prints the token (src/cli/detach.ts). A record can outlive its server (SIGKILL,
// a crash); another local user may then bind that port and answer GET /readyz, and a client sent
// there would hand it the token, keystrokes and file writes. Two checks:
//  - Linux: every listening socket on the port (/proc/net/tcp, tcp6) is owned by our uid and is one
//    of the recorded pid's descriptors (/proc/<pid>/fd → socket:[inode]);
//  - everywhere: the server proves it knows the token without anyone revealing it. --detach sends
//    a fresh nonce with an HMAC of it (the client half: a squatter cannot make a server's idle
//    timer restart by asking, see cli.ts); the server answers HMAC(token, "server" + nonce).
// The token itself is never sent to an unverified listener.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { Readable, Writable } from 'node:stream';

/** The proof's path on the detached server's port. */
export const PROOF_PATH = '/detach-proof';
/** The request header carrying the client half (HMAC of the nonce, hex). */
export const PROOF_HEADER = 'x-exec-server-detach-proof';

const mac = (token: string, role: 'client' | 'server', nonce: string) => createHmac('sha256', token).update(`exec-server detach proof v1\n${role}\n${nonce}`).digest('hex');

function sameHex(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The server side: answers GET /detach-proof?nonce=N (N: 64 hex digits) carrying a valid client
 * half with its own half; any other request to that path gets 401. Returns false for other paths
 * (the listener handles them). `proven()` is called after each valid exchange.
 */
export function proofResponder(token: string, proven: () => void): (req: http.IncomingMessage, res: http.ServerResponse) => boolean {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== PROOF_PATH) return false;
    const nonce = url.searchParams.get('nonce') ?? '';
    const client = req.headers[PROOF_HEADER];
    if (req.method !== 'GET' || !/^[0-9a-f]{64}$/.test(nonce) || typeof client !== 'string' || !sameHex(client, mac(token, 'client', nonce))) {
      res.writeHead(401, { 'Content-Type': 'text/plain', 'Content-Length': '3' }).end('no\n');
      return true;
    }
    proven();
    // Content-Length (not chunked): the client over `ssh -W` reads this answer by hand, then upgrades on the same connection.
    const body = `${mac(token, 'server', nonce)}\n`;
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Cache-Control': 'no-store', 'Content-Length': String(body.length) }).end(body);
    return true;
  };
}

/** The --detach side: does the listener on 127.0.0.1:`port` prove it knows `token`? */
export function provesToken(port: number, token: string, timeoutMs = 3000): Promise<boolean> {
  const nonce = randomBytes(32).toString('hex');
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: `${PROOF_PATH}?nonce=${nonce}`, headers: { [PROOF_HEADER]: mac(token, 'client', nonce) }, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
        if (body.length > 256) req.destroy();
      });
      res.on('end', () => resolve(res.statusCode === 200 && sameHex(body.trim(), mac(token, 'server', nonce))));
      res.on('error', () => resolve(false));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/**
 * The client over a byte stream to the server (Connect to Host's `ssh -W 127.0.0.1:PORT`): the
 * proof on the very connection that will carry the websocket upgrade and its token, so the token
 * goes to the listener that proved it knows it (it may have changed since --detach checked).
 * 'proven'; 'unsupported': the listener answered 404 (a server without the proof); 'failed':
 * anything else (wrong proof, 401, garbage, closed, timeout). Leaves `input` paused with nothing
 * of it read past the answer.
 */
export function proveOverStream(input: Readable, output: Writable, port: number, token: string, timeoutMs: number): Promise<{ result: 'proven' | 'unsupported' | 'failed'; why: string }> {
  const nonce = randomBytes(32).toString('hex');
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    const done = (result: 'proven' | 'unsupported' | 'failed', why: string) => {
      clearTimeout(timer);
      input.off('data', onData);
      input.off('end', onEnd);
      input.pause();
      resolve({ result, why });
    };
    const timer = setTimeout(() => done('failed', `no answer to the proof within ${timeoutMs} ms`), timeoutMs);
    const onEnd = () => done('failed', 'the connection closed before the proof');
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length > 8192) return done('failed', 'an oversized answer to the proof');
      const headEnd = buf.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = buf.subarray(0, headEnd).toString('latin1');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1]);
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1]);
      if (!Number.isInteger(length)) return done('failed', `an answer to the proof without a length (HTTP ${status || '?'})`);
      const total = headEnd + 4 + length;
      if (buf.length < total) return;
      if (buf.length > total) return done('failed', 'bytes after the answer to the proof');
      if (status === 404) return done('unsupported', 'the server does not know the proof (an older exec-server?)');
      const body = buf.subarray(headEnd + 4).toString('utf8').trim();
      if (status === 200 && sameHex(body, mac(token, 'server', nonce))) return done('proven', 'proven');
      done('failed', `a wrong proof (HTTP ${status || '?'})`);
    };
    input.on('data', onData);
    input.on('end', onEnd);
    output.write(`GET ${PROOF_PATH}?nonce=${nonce} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${PROOF_HEADER}: ${mac(token, 'client', nonce)}\r\nConnection: keep-alive\r\n\r\n`);
  });
}

/**
 * Local addresses (as /proc/net/tcp{,6} write them) of a listener that receives a connection to
 * 127.0.0.1, where the detached server listens and its clients connect: 127.0.0.1, 0.0.0.0 and
 * ::ffff:127.0.0.1. Not `::`: a `[::]:PORT` listener that coexists with one on 127.0.0.1:PORT
 * is IPv6-only (a dual-stack one could not be bound beside it, nor it beside one), so it never
 * sees that connection; counting it let another user's IPv6-only listener make --detach give
 * up the live server.
 */
const RECEIVES_LOOPBACK = new Set(['0100007F', '00000000', '0000000000000000FFFF00000100007F']);

/** Listening TCP sockets on `port` that receive connections to 127.0.0.1 (RECEIVES_LOOPBACK): owner uid and inode; undefined without /proc/net. */
function listeningSockets(port: number): { uid: number; inode: string }[] | undefined {
  const found: { uid: number; inode: string }[] = [];
  let readAny = false;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    readAny = true;
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue; // 0A: LISTEN
      const [addr, portHex] = f[1].split(':');
      if (parseInt(portHex ?? '', 16) !== port || !RECEIVES_LOOPBACK.has(addr.toUpperCase())) continue;
      found.push({ uid: Number(f[7]), inode: f[9] });
    }
  }
  return readAny ? found : undefined;
}

/** Socket inodes among `pid`'s descriptors; undefined when they cannot be read (not ours, gone). */
function socketInodes(pid: number): Set<string> | undefined {
  const dir = `/proc/${pid}/fd`;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return undefined;
  }
  const inodes = new Set<string>();
  for (const n of names) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`${dir}/${n}`));
      if (m) inodes.add(m[1]);
    } catch {
      /* closed meanwhile */
    }
  }
  return inodes;
}

/**
 * Is the listener on `port` held by `pid` as this user (Linux)? 'yes': at least one listening
 * socket on the port and every one of them is owned by our uid and open in `pid`; 'no': otherwise;
 * 'unknown': no /proc/net to read (not Linux) — the token proof alone decides then.
 */
export function listenerHeldBy(port: number, pid: number): 'yes' | 'no' | 'unknown' {
  if (process.platform !== 'linux' || !process.getuid) return 'unknown';
  const sockets = listeningSockets(port);
  if (!sockets) return 'unknown';
  if (sockets.length === 0) return 'no';
  const uid = process.getuid();
  if (sockets.some((s) => s.uid !== uid)) return 'no';
  const held = socketInodes(pid);
  return held && sockets.every((s) => held.has(s.inode)) ? 'yes' : 'no';
}

/** What `exec-server --detach` prints on stdout (one JSON line) about the server it started or found. */
export interface DetachAnswer {
  port: number;
  token: string;
  pid: number;
  started: boolean;
}

/**
 * The `--detach` answer line of `stdout`, or undefined when there is none or it is not one. What a
 * host prints goes into ssh's -W argument and an HTTP header, so only a port and a token of
 * URL-safe characters pass. The token is never quoted back in an error.
 */
export function parseDetachAnswer(stdout: string): DetachAnswer | undefined {
  const line = stdout.split('\n').find((l) => l.startsWith('{') && l.includes('"port"'));
  let parsed: Partial<DetachAnswer> | undefined;
  try {
    parsed = line ? (JSON.parse(line) as Partial<DetachAnswer>) : undefined;
  } catch {
    return undefined;
  }
  const port = Number(parsed?.port);
  if (!parsed || !Number.isInteger(port) || port < 1 || port > 65535 || typeof parsed.token !== 'string' || !/^[A-Za-z0-9._~+/=-]{16,512}$/.test(parsed.token)) return undefined;
  return { port, token: parsed.token, pid: Number(parsed.pid), started: parsed.started === true };
}
