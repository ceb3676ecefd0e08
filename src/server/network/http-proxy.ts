// The HTTP proxy of one proxied process, on one connection the child opened to its relay's HTTP
// port: `CONNECT host:port` (a tunnel, `200 OK` + date, then raw bytes) and absolute-form
// requests (`GET http://host:port/path`, forwarded in origin form without Proxy-Authorization /
// Proxy-Connection and without Via / X-Forwarded-For). Blocked → the reference's 403 (JSON body
// for HTTP, text for CONNECT; REFERENCE §1.5); an upstream that cannot be reached → 502.
// A forwarded request is sent with `Connection: close` and the rest of the connection is relayed
// raw to that origin only: a second request on the same connection can only reach the origin
// already judged (never another host).
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { CredentialBroker } from './credentials';
import { decide, type DecisionHost, type Outcome } from './decide';
import { upstreamRoots, type ProcessCa } from './mitm-ca';
import { connectPinned, CONNECT_TIMEOUT_MS, PrefixReader, splice } from './stream-io';

/**
 * Credential masking of one process (./credentials.ts): requests to a destination a credential
 * is bound to get its real value in place of the dummy — plain HTTP ones as they pass, HTTPS
 * ones by terminating the CONNECT tunnel with a leaf of the process's CA (./mitm-ca.ts) and
 * opening a verified TLS connection of the proxy's own to the origin.
 */
export interface Masking {
  broker: CredentialBroker;
  ca: ProcessCa;
}

/** Longest request head accepted (request line + headers). */
export const MAX_HEAD_BYTES = 64 * 1024;

const HOP_HEADERS = new Set(['proxy-authorization', 'proxy-connection', 'connection', 'keep-alive']);

function httpDate(): string {
  return new Date().toUTCString();
}

/**
 * The proxy's own answer; the connection ends after it. `close`: the request said
 * `Connection: close`, which the reference (hyper) echoes as a `connection: close` header.
 */
function respond(stream: Duplex, status: string, headers: [string, string][], body: string, close = false): void {
  const b = Buffer.from(body);
  const all: [string, string][] = [...headers, ...(close ? ([['connection', 'close']] as [string, string][]) : [])];
  const lines = [`HTTP/1.1 ${status}`, ...all.map(([k, v]) => `${k}: ${v}`), `content-length: ${b.length}`, `date: ${httpDate()}`];
  stream.end(Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n'), b]));
}

function blocked(stream: Duplex, o: Extract<Outcome, { ok: false }>, host: string, port: number, connect: boolean, close: boolean): void {
  if (connect) return respond(stream, '403 Forbidden', [['content-type', 'text/plain'], ['x-proxy-error', o.header]], o.message, close);
  const body = JSON.stringify({ status: 'blocked', host, reason: o.reason, decision: o.decision, source: o.source, protocol: 'http', port, message: o.message });
  respond(stream, '403 Forbidden', [['content-type', 'application/json'], ['x-proxy-error', o.header]], body, close);
}

const badRequest = (stream: Duplex, why: string, close = false) => respond(stream, '400 Bad Request', [['content-type', 'text/plain']], why, close);
const upstreamFailure = (stream: Duplex) => respond(stream, '502 Bad Gateway', [['content-type', 'text/plain']], 'upstream failure');

/** host:port of a CONNECT target ([v6]:port too); undefined when malformed. */
export function parseAuthority(s: string, defaultPort?: number): { host: string; port: number } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/@\s]+)(?::(\d{1,5}))?$/.exec(s);
  if (!m) return undefined;
  const port = m[2] !== undefined ? Number(m[2]) : defaultPort;
  if (port === undefined || port < 1 || port > 65535) return undefined;
  return { host: m[1].replace(/^\[(.*)\]$/, '$1'), port };
}

interface Head {
  method: string;
  target: string;
  headers: [string, string][];
  close: boolean;
}

/** Reads one request head (up to the blank line, however it is split across reads); a string is a 400 reason. */
async function readHead(reader: PrefixReader): Promise<Head | string | undefined> {
  const head = await reader.read((b) => {
    const i = b.indexOf('\r\n\r\n');
    return i < 0 ? undefined : i + 4;
  });
  if (!head) return undefined;
  const lines = head.toString('latin1').slice(0, -4).split('\r\n');
  const m = /^([A-Za-z]+) (\S+) HTTP\/1\.[01]$/.exec(lines[0]);
  if (!m) return 'malformed request line';
  const headers = lines.slice(1).map((l) => {
    const i = l.indexOf(':');
    return i <= 0 ? undefined : ([l.slice(0, i), l.slice(i + 1).trim()] as [string, string]);
  });
  if (headers.some((h) => h === undefined)) return 'malformed header';
  const close = (headers as [string, string][]).some(([k, v]) => k.toLowerCase() === 'connection' && /(^|,)\s*close\s*(,|$)/i.test(v));
  return { method: m[1].toUpperCase(), target: m[2], headers: headers as [string, string][], close };
}

/** The head sent upstream: origin form, hop-by-hop headers dropped, `Connection: close`. */
function upstreamHead(method: string, pathAndQuery: string, headers: [string, string][], hostHeader: string): Buffer {
  const kept = headers.filter(([k]) => !HOP_HEADERS.has(k.toLowerCase()));
  if (!kept.some(([k]) => k.toLowerCase() === 'host')) kept.unshift(['Host', hostHeader]);
  return Buffer.from([`${method} ${pathAndQuery} HTTP/1.1`, ...kept.map(([k, v]) => `${k}: ${v}`), 'Connection: close'].join('\r\n') + '\r\n\r\n', 'latin1');
}

export async function serveHttpProxy(stream: Duplex & { client: string }, host: DecisionHost, masking?: Masking): Promise<void> {
  const reader = new PrefixReader(stream, MAX_HEAD_BYTES);
  const parsed = await readHead(reader);
  if (parsed === undefined) return void stream.destroy();
  if (typeof parsed === 'string') return badRequest(stream, parsed);
  const { method, headers, close } = parsed;

  if (method === 'CONNECT') {
    const target = parseAuthority(parsed.target);
    if (!target) return badRequest(stream, 'malformed CONNECT target');
    const o = await decide(host, { protocol: 'https_connect', host: target.host, port: target.port, method: 'CONNECT', client: stream.client });
    if (!o.ok) return blocked(stream, o, target.host, target.port, true, close);
    let upstream;
    try {
      upstream = await connectPinned(o.addresses, target.port);
    } catch {
      return upstreamFailure(stream);
    }
    if (masking && masking.broker.interceptsTls(target.host, target.port)) return intercept(stream, reader, target, upstream, masking);
    const rest = reader.release();
    stream.write(`HTTP/1.1 200 OK\r\ndate: ${httpDate()}\r\n\r\n`);
    splice(stream, upstream, rest);
    return;
  }

  let url: URL;
  try {
    url = new URL(parsed.target);
  } catch {
    return badRequest(stream, 'this proxy takes absolute-form requests (GET http://host/path) and CONNECT');
  }
  if (url.protocol !== 'http:') return badRequest(stream, `unsupported scheme ${url.protocol}`);
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? 80 : Number(url.port);
  // As the reference (measured, 0.169/0.171): one Host header at most, and it names the target
  // (host case-insensitively, port 80 when absent); else 400 and nothing is judged or sent, so an
  // allowed origin never gets a request addressed to another virtual host.
  const hosts = (headers as [string, string][]).filter(([k]) => k.toLowerCase() === 'host');
  if (hosts.length > 1) return badRequest(stream, 'multiple Host headers', close);
  if (hosts.length === 1) {
    const h = parseAuthority(hosts[0][1].trim(), 80);
    if (!h || h.host.toLowerCase() !== hostname.toLowerCase() || h.port !== port) return badRequest(stream, 'Host header does not match request target', close);
  }
  const o = await decide(host, { protocol: 'http', host: hostname, port, method, client: stream.client });
  if (!o.ok) return blocked(stream, o, hostname, port, false, close);
  let upstream;
  try {
    upstream = await connectPinned(o.addresses, port);
  } catch {
    return upstreamFailure(stream);
  }
  const sent = masking ? masking.broker.swap(headers, 'http', hostname, port, rawPath(parsed.target)) : headers;
  upstream.write(upstreamHead(method, `${url.pathname}${url.search}`, sent, url.host));
  splice(stream, upstream, reader.release());
}

/** The path of a request target as sent (before URL normalization resolves dot segments). */
function rawPath(target: string): string {
  const t = target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '');
  const p = t.split(/[?#]/, 1)[0];
  return p === '' ? '/' : p;
}

/** Both ways until either side ends (for TLS sockets, which the recycled-block relay does not read). */
function pipeBoth(a: Duplex, b: Duplex): void {
  a.pipe(b);
  b.pipe(a);
  const kill = () => {
    a.destroy();
    b.destroy();
  };
  for (const s of [a, b]) {
    s.on('error', kill);
    s.on('close', kill);
  }
}

/**
 * An allowed CONNECT to a host a credential is bound to over HTTPS: the tunnel is answered
 * `200 OK` and terminated here with a leaf for that host; its first request is read, must name
 * the same host and port, gets the real credential where the broker allows it, and goes to the
 * origin over TLS verified against the usual roots (never this CA). One request per tunnel, as
 * for plain HTTP: the origin gets `Connection: close`, and anything after the first head is
 * relayed as it is to that same origin.
 */
async function intercept(stream: Duplex & { client: string }, reader: PrefixReader, target: { host: string; port: number }, raw: net.Socket, masking: Masking): Promise<void> {
  stream.once('close', () => raw.destroy());
  const early = reader.release();
  // A client that sends its TLS hello before the 200 is not served (those bytes would be lost
  // under the TLS layer, which reads the socket directly).
  if (early.length > 0) return void stream.destroy();
  if (!(stream instanceof net.Socket)) return void stream.destroy();
  const name = target.host.toLowerCase();
  let context: tls.SecureContext;
  try {
    context = masking.ca.contextFor(name);
  } catch {
    return upstreamFailure(stream);
  }
  stream.write(`HTTP/1.1 200 OK\r\ndate: ${httpDate()}\r\n\r\n`);
  const inner = new tls.TLSSocket(stream, { isServer: true, secureContext: context, ALPNProtocols: ['http/1.1'] });
  inner.on('error', () => inner.destroy());
  stream.on('close', () => inner.destroy());
  const innerReader = new PrefixReader(inner, MAX_HEAD_BYTES);
  const parsed = await readHead(innerReader);
  if (parsed === undefined) return void inner.destroy();
  if (typeof parsed === 'string') return badRequest(inner, parsed);
  let pathAndQuery = parsed.target;
  if (!pathAndQuery.startsWith('/')) {
    // Absolute form inside the tunnel: only for the tunnel's own origin.
    let u: URL;
    try {
      u = new URL(pathAndQuery);
    } catch {
      return badRequest(inner, 'malformed request target', parsed.close);
    }
    const p = u.port === '' ? 443 : Number(u.port);
    if (u.protocol !== 'https:' || u.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase() !== name || p !== target.port) return badRequest(inner, 'request target does not match the tunnel', parsed.close);
    pathAndQuery = `${u.pathname}${u.search}`;
  }
  const hosts = parsed.headers.filter(([k]) => k.toLowerCase() === 'host');
  if (hosts.length > 1) return badRequest(inner, 'multiple Host headers', parsed.close);
  if (hosts.length === 1) {
    const h = parseAuthority(hosts[0][1].trim(), 443);
    if (!h || h.host.toLowerCase() !== name || h.port !== target.port) return badRequest(inner, 'Host header does not match request target', parsed.close);
  }
  let upstream: tls.TLSSocket;
  try {
    upstream = await new Promise<tls.TLSSocket>((resolve, reject) => {
      const s = tls.connect({ socket: raw, servername: net.isIP(name) ? undefined : name, ca: upstreamRoots(), ALPNProtocols: ['http/1.1'] });
      const timer = setTimeout(() => s.destroy(new Error('TLS handshake timeout')), CONNECT_TIMEOUT_MS);
      s.once('secureConnect', () => {
        clearTimeout(timer);
        s.off('error', reject);
        resolve(s);
      });
      s.once('error', (e) => {
        clearTimeout(timer);
        raw.destroy();
        reject(e);
      });
    });
  } catch {
    return upstreamFailure(inner);
  }
  const hostHeader = target.port === 443 ? name : `${name}:${target.port}`;
  const sent = masking.broker.swap(parsed.headers, 'https', name, target.port, rawPath(pathAndQuery));
  upstream.write(upstreamHead(parsed.method, pathAndQuery, sent, hostHeader));
  const rest = innerReader.release();
  if (rest.length > 0) upstream.write(rest);
  pipeBoth(inner, upstream);
  inner.resume();
}
