// http/request to pinned addresses: the agent gate judged where the URL's host name leads
// (src/extension/agent/http.ts); the request must connect there and nowhere else, even if
// the name resolves elsewhere a moment later (DNS rebinding). Node's fetch cannot be given a
// lookup, so this goes through node:http/https with a `lookup` that answers only the pinned
// addresses; the Host header and TLS server name (SNI, certificate check) stay the name. No
// connection is reused (`agent: false`): a pooled socket is keyed by host and port, not by
// the address it reached. Otherwise it behaves as the fetch path in ./http.ts: the same
// default and refused request headers, compressed bodies decoded, headers listed the same
// way, redirects never followed (the gate only pins requests it sends with redirectPolicy
// stop; a 3xx comes back as it is).
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import net from 'node:net';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { HttpHeader } from '../protocol/types';

/**
 * The addresses a host name was judged by (in process only): the engine connects to these and
 * to nothing else, whatever the name resolves to by then. `addresses` empty: the name did not
 * resolve when judged (`error` says why); the request then fails without resolving it again.
 */
export interface PinnedAddresses {
  host: string;
  addresses: readonly { address: string; family: 4 | 6 }[];
  error?: string;
}

export interface HttpRequestInput {
  method: string;
  url: string;
  headers: HttpHeader[];
  body?: Buffer;
  timeoutMs?: number;
  redirectPolicy: 'follow' | 'stop';
  requestId: string;
  streamResponse: boolean;
  /** Connect only to these (in process only, see PINNED_HTTP_ADDRESSES in ./http.ts). */
  pinned?: PinnedAddresses;
}

/** A response as both ways of fetching deliver it. */
export interface Fetched {
  status: number;
  headers: HttpHeader[];
  body: AsyncIterable<Uint8Array> | null;
  /** Drops the body unread (the connection is closed). */
  discard(): Promise<void>;
}

/** What fetch adds when the caller did not set it (as Node's fetch sends them). */
const DEFAULT_HEADERS: [string, string][] = [
  ['accept', '*/*'],
  ['accept-language', '*'],
  ['sec-fetch-mode', 'cors'],
  ['user-agent', 'node'],
  ['accept-encoding', 'gzip, deflate'],
];
/** Request headers fetch refuses (the request fails with this reason). */
const REFUSED_HEADERS = ['transfer-encoding', 'keep-alive', 'upgrade'];
/** Statuses whose response has no body (fetch decodes nothing for them). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** A lookup that answers only the pinned addresses of the pinned host. */
export function pinnedLookup(pin: PinnedAddresses): LookupFunction {
  return (hostname, options, callback) => {
    const fail = (why: string) => {
      const e = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname} (${why})`), { code: 'ENOTFOUND', hostname });
      process.nextTick(() => callback(e, '', 0));
    };
    if (hostname !== pin.host) return fail(`only ${pin.host} was approved`);
    const family = options.family === 4 || options.family === 6 ? options.family : undefined;
    const list = pin.addresses.filter((a) => family === undefined || a.family === family);
    if (list.length === 0) return fail(pin.error ?? 'no address was approved');
    process.nextTick(() => {
      if (options.all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, list.map((a) => ({ ...a })));
      else callback(null, list[0].address, list[0].family);
    });
  };
}

/** Response headers as fetch lists them: lower-case names in order, repeats joined (each set-cookie apart). */
export function headerList(h: Headers): HttpHeader[] {
  const headers: HttpHeader[] = [];
  h.forEach((value, name) => headers.push({ name, value }));
  return headers;
}

export function pinnedRequest(url: URL, req: HttpRequestInput, pin: PinnedAddresses, signal: AbortSignal): Promise<Fetched> {
  if (url.username !== '' || url.password !== '') throw new Error(`Request cannot be constructed from a URL that includes credentials: ${url.href}`);
  const method = req.method;
  const body = req.body && req.body.length > 0 ? req.body : undefined;
  if (body && /^(GET|HEAD)$/i.test(method)) throw new Error('Request with GET/HEAD method cannot have body.');
  // Validated and joined exactly as fetch does (repeats joined with ", ").
  const given = new Headers(req.headers.map((h) => [h.name, h.value] as [string, string]));
  for (const name of REFUSED_HEADERS) if (given.has(name)) throw new Error(`invalid ${name} header`);
  if (given.has('expect')) throw new Error('expect header not supported');
  const headers: Record<string, string> = {};
  given.forEach((value, name) => {
    // The Host header is the URL's (the name shown to the user); the length is the body's.
    if (name !== 'host' && name !== 'content-length') headers[name] = value;
  });
  for (const [name, value] of DEFAULT_HEADERS) if (!(name in headers)) headers[name] = value;
  if (body) headers['content-length'] = String(body.length);
  else if (/^(POST|PUT)$/i.test(method)) headers['content-length'] = '0';
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const options: https.RequestOptions = {
    protocol: url.protocol,
    hostname,
    port: url.port === '' ? undefined : Number(url.port),
    path: `${url.pathname}${url.search}`,
    method,
    headers,
    agent: false,
    signal,
    lookup: pinnedLookup(pin),
    // TLS: the server name (SNI, and the name the certificate must hold) is the URL's host.
    ...(url.protocol === 'https:' && net.isIP(hostname) === 0 ? { servername: hostname } : {}),
  };
  return new Promise<Fetched>((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(options, (res) => resolve(response(res, method)));
    request.once('error', reject);
    request.end(body);
  });
}

function response(res: http.IncomingMessage, method: string): Fetched {
  const list = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    try {
      list.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
    } catch {
      // a header fetch would not accept either: left out, as fetch fails on none of them
    }
  }
  const headers = headerList(list);
  const status = res.statusCode ?? 0;
  let body: Readable = res;
  // fetch decodes gzip/deflate/br bodies (keeping the Content-Encoding header); so does this.
  const codings = (list.get('content-encoding') ?? '')
    .toLowerCase()
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '' && c !== 'identity');
  const decodable = codings.length > 0 && codings.every((c) => c === 'gzip' || c === 'x-gzip' || c === 'deflate' || c === 'br');
  if (decodable && !/^(HEAD|CONNECT)$/i.test(method) && !NULL_BODY.has(status)) {
    const lenient = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
    const stages = codings.reverse().map((c) => (c === 'br' ? zlib.createBrotliDecompress() : c === 'deflate' ? zlib.createInflate(lenient) : zlib.createGunzip(lenient)));
    // Errors and an early end travel both ways: a failing socket fails the decoded body, and
    // dropping the decoded body closes the socket.
    body = (pipeline as unknown as (...s: unknown[]) => Readable)(res, ...stages, () => undefined);
  }
  return {
    status,
    headers,
    body: NULL_BODY.has(status) || /^HEAD$/i.test(method) ? (res.resume(), null) : body,
    discard: async () => void res.destroy(),
  };
}
