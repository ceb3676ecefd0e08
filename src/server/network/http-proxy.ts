// The HTTP proxy of one proxied process, on one connection the child opened to its relay's HTTP
// port: `CONNECT host:port` (a tunnel, `200 OK` + date, then raw bytes) and absolute-form
// requests (`GET http://host:port/path`, forwarded in origin form without Proxy-Authorization /
// Proxy-Connection and without Via / X-Forwarded-For). Blocked → the reference's 403 (JSON body
// for HTTP, text for CONNECT; REFERENCE §1.5); an upstream that cannot be reached → 502.
// A forwarded request is sent with `Connection: close` and the rest of the connection is relayed
// raw to that origin only: a second request on the same connection can only reach the origin
// already judged (never another host).
import type { Duplex } from 'node:stream';
import { decide, type DecisionHost, type Outcome } from './decide';
import { connectPinned, PrefixReader, splice } from './stream-io';

/** Longest request head accepted (request line + headers). */
export const MAX_HEAD_BYTES = 64 * 1024;

const HOP_HEADERS = new Set(['proxy-authorization', 'proxy-connection', 'connection', 'keep-alive']);

function httpDate(): string {
  return new Date().toUTCString();
}

function respond(stream: Duplex, status: string, headers: [string, string][], body: string): void {
  const b = Buffer.from(body);
  const lines = [`HTTP/1.1 ${status}`, ...headers.map(([k, v]) => `${k}: ${v}`), `content-length: ${b.length}`, `date: ${httpDate()}`];
  stream.end(Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n'), b]));
}

function blocked(stream: Duplex, o: Extract<Outcome, { ok: false }>, host: string, port: number, connect: boolean): void {
  if (connect) return respond(stream, '403 Forbidden', [['content-type', 'text/plain'], ['x-proxy-error', o.header]], o.message);
  const body = JSON.stringify({ status: 'blocked', host, reason: o.reason, decision: o.decision, source: o.source, protocol: 'http', port, message: o.message });
  respond(stream, '403 Forbidden', [['content-type', 'application/json'], ['x-proxy-error', o.header]], body);
}

const badRequest = (stream: Duplex, why: string) => respond(stream, '400 Bad Request', [['content-type', 'text/plain']], why);
const upstreamFailure = (stream: Duplex) => respond(stream, '502 Bad Gateway', [['content-type', 'text/plain']], 'upstream failure');

/** host:port of a CONNECT target ([v6]:port too); undefined when malformed. */
export function parseAuthority(s: string, defaultPort?: number): { host: string; port: number } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/@\s]+)(?::(\d{1,5}))?$/.exec(s);
  if (!m) return undefined;
  const port = m[2] !== undefined ? Number(m[2]) : defaultPort;
  if (port === undefined || port < 1 || port > 65535) return undefined;
  return { host: m[1].replace(/^\[(.*)\]$/, '$1'), port };
}

export async function serveHttpProxy(stream: Duplex & { client: string }, host: DecisionHost): Promise<void> {
  const reader = new PrefixReader(stream, MAX_HEAD_BYTES);
  const head = await reader.read((b) => {
    const i = b.indexOf('\r\n\r\n');
    return i < 0 ? undefined : i + 4;
  });
  if (!head) return void stream.destroy();
  const lines = head.toString('latin1').slice(0, -4).split('\r\n');
  const m = /^([A-Za-z]+) (\S+) HTTP\/1\.[01]$/.exec(lines[0]);
  if (!m) return badRequest(stream, 'malformed request line');
  const method = m[1].toUpperCase();
  const headers = lines.slice(1).map((l) => {
    const i = l.indexOf(':');
    return i <= 0 ? undefined : ([l.slice(0, i), l.slice(i + 1).trim()] as [string, string]);
  });
  if (headers.some((h) => h === undefined)) return badRequest(stream, 'malformed header');

  if (method === 'CONNECT') {
    const target = parseAuthority(m[2]);
    if (!target) return badRequest(stream, 'malformed CONNECT target');
    const o = await decide(host, { protocol: 'https_connect', host: target.host, port: target.port, method: 'CONNECT', client: stream.client });
    if (!o.ok) return blocked(stream, o, target.host, target.port, true);
    let upstream;
    try {
      upstream = await connectPinned(o.addresses, target.port);
    } catch {
      return upstreamFailure(stream);
    }
    const rest = reader.release();
    stream.write(`HTTP/1.1 200 OK\r\ndate: ${httpDate()}\r\n\r\n`);
    splice(stream, upstream, rest);
    return;
  }

  let url: URL;
  try {
    url = new URL(m[2]);
  } catch {
    return badRequest(stream, 'this proxy takes absolute-form requests (GET http://host/path) and CONNECT');
  }
  if (url.protocol !== 'http:') return badRequest(stream, `unsupported scheme ${url.protocol}`);
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? 80 : Number(url.port);
  const o = await decide(host, { protocol: 'http', host: hostname, port, method, client: stream.client });
  if (!o.ok) return blocked(stream, o, hostname, port, false);
  let upstream;
  try {
    upstream = await connectPinned(o.addresses, port);
  } catch {
    return upstreamFailure(stream);
  }
  const kept = (headers as [string, string][]).filter(([k]) => !HOP_HEADERS.has(k.toLowerCase()));
  if (!kept.some(([k]) => k.toLowerCase() === 'host')) kept.unshift(['Host', url.host]);
  const out = [`${method} ${url.pathname}${url.search} HTTP/1.1`, ...kept.map(([k, v]) => `${k}: ${v}`), 'Connection: close'].join('\r\n') + '\r\n\r\n';
  upstream.write(Buffer.from(out, 'latin1'));
  splice(stream, upstream, reader.release());
}
