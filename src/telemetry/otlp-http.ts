// The HTTP/1.1 POST of the server's OTLP span batches, on a socket of our own. The SDK's node
// transport sends each batch through Node's http client with the body piped from a Readable
// (chunked), and that stream code is the server's own: the first export deoptimized
// Writable.write, writeOrBuffer, clearBuffer and writevGeneric, which the server's websocket
// writes then ran with the client's types too (`--trace-deopt`, docs/performance.md "Telemetry
// cost"). Here a request is written with one writev straight to the socket's descriptor (the
// stream only takes what the socket does not take at once: even the server's own stream code,
// met with this socket's shape, was deoptimized) and the response is read as the server reads
// (net's `onread` into a buffer of our own). Everything around the send is the SDK's:
// the configuration (endpoint, OTEL_EXPORTER_OTLP_* headers, timeout) from its converter, the
// export delegate (concurrency limit, timeout, partial-success logging) and the same retry
// policy (RetryingTransport's, below: not exported by the package). Only plain http: URLs without
// compression come here; https or gzip keep the SDK's transport (./otlp-proto.ts).
import { writevSync } from 'node:fs';
import { validateHeaderName, validateHeaderValue } from 'node:http';
import * as net from 'node:net';
import { OTLPExporterError, type ExportResponse, type IExporterTransport } from '@opentelemetry/otlp-exporter-base';
import { diag } from '@opentelemetry/api';

/**
 * The SDK transport's User-Agent (http-transport-utils.ts: `OTel-OTLP-Exporter-JavaScript/${VERSION}`
 * of @opentelemetry/otlp-exporter-base; the package does not export it). A test compares it with
 * what the SDK's exporter sends, so an upgrade cannot leave it behind.
 */
export const SDK_USER_AGENT = 'OTel-OTLP-Exporter-JavaScript/0.219.0';
/** The SDK's limit on a response body (http-transport-utils.ts MAX_RESPONSE_BODY_SIZE). */
const MAX_RESPONSE_BODY = 4 * 1024 * 1024;
/** A response head longer than this is not an HTTP server we can talk to. */
const MAX_HEAD = 64 * 1024;
/** The network errors the SDK retries (http-transport-utils.ts). */
const RETRYABLE_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND', 'ENETUNREACH', 'EHOSTUNREACH']);

/** What the transport needs of the SDK's OtlpNodeHttpConfiguration. */
export interface HttpTarget {
  url: string;
  headers: () => Promise<Record<string, string>>;
  userAgent?: string;
}

/** The SDK's is-export-retryable.ts, as is. */
function retryableStatus(code: number): boolean {
  return code === 429 || code === 502 || code === 503 || code === 504;
}
function retryAfterMs(v: string | undefined): number | undefined {
  if (v == null) return undefined;
  const seconds = Number.parseInt(v, 10);
  if (Number.isInteger(seconds)) return seconds > 0 ? seconds * 1000 : -1;
  const delay = new Date(v).getTime() - Date.now();
  return delay >= 0 ? delay : 0;
}

// Latin-1 by hand, as Buffer's 'latin1' encoding does it: an encoding name is looked up in
// Buffer's encoding dispatch (getEncodingOps, toString), which the server's websockets have
// optimized for UTF-8 alone; the export's 'latin1', met there later, deoptimized it
// (`--trace-deopt`, test/telemetry/server-spans.first-export.test.ts).
/** The bytes of a header block (validated: every character is below 0x100). */
function latin1Bytes(s: string): Buffer {
  // A Buffer, as the server's own writes are: a plain Uint8Array met in the socket's stream code
  // (a request the socket does not take at once) is another map there.
  const b = Buffer.allocUnsafe(s.length);
  for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
  return b;
}
/** The text of a response's head or chunk-size line. */
function latin1Text(b: Uint8Array, start: number, end: number): string {
  let s = '';
  for (let i = start; i < end; i++) s += String.fromCharCode(b[i]);
  return s;
}

interface Response {
  code: number;
  message: string;
  headers: Map<string, string>;
  body: Buffer;
  keepAlive: boolean;
}

/** One HTTP/1.1 response read from a socket's bytes (a 1xx interim response is skipped). */
class ResponseReader {
  private acc = Buffer.alloc(0);
  private state: 'head' | 'length' | 'chunked' | 'close' = 'head';
  private remaining = 0;
  private readonly parts: Buffer[] = [];
  private bodyBytes = 0;
  code = 0;
  message = '';
  private version = '1.1';
  headers = new Map<string, string>();
  /** Set when the response is complete. */
  done: Response | undefined;
  /** Set when the bytes are not a response we can read (or its body is over the limit). */
  error: Error | undefined;

  /** `chunk` is the socket's read buffer: what is kept is copied. */
  push(chunk: Buffer): void {
    if (this.done || this.error) return;
    this.acc = this.acc.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.acc, chunk]);
    this.parse();
  }

  /** The peer closed: a body read to the close ends here. */
  closed(): void {
    if (this.state === 'close' && !this.done && !this.error) this.finish(false);
  }

  private body(b: Buffer): boolean {
    this.bodyBytes += b.length;
    if (this.bodyBytes > MAX_RESPONSE_BODY) {
      this.error = new Error(`OTLP export response body exceeded size limit of ${MAX_RESPONSE_BODY} bytes`);
      return false;
    }
    this.parts.push(b);
    return true;
  }

  private finish(keepAlive: boolean): void {
    const conn = (this.headers.get('connection') ?? '').toLowerCase();
    const reusable = keepAlive && (this.version === '1.0' ? conn.includes('keep-alive') : !conn.includes('close'));
    this.done = { code: this.code, message: this.message, headers: this.headers, body: Buffer.concat(this.parts), keepAlive: reusable };
  }

  private parse(): void {
    for (;;) {
      if (this.state === 'head') {
        const end = this.acc.indexOf('\r\n\r\n');
        if (end < 0) {
          if (this.acc.length > MAX_HEAD) this.error = new Error('OTLP export response head too long');
          return;
        }
        const lines = latin1Text(this.acc, 0, end).split('\r\n');
        this.acc = this.acc.subarray(end + 4);
        const m = /^HTTP\/(\d\.\d) (\d{3})(?: (.*))?$/.exec(lines[0]);
        if (!m) {
          this.error = new Error(`OTLP export: not an HTTP response (${JSON.stringify(lines[0].slice(0, 60))})`);
          return;
        }
        this.version = m[1];
        this.code = Number(m[2]);
        this.message = m[3] ?? '';
        this.headers = new Map();
        for (const line of lines.slice(1)) {
          const c = line.indexOf(':');
          if (c <= 0) continue;
          const k = line.slice(0, c).trim().toLowerCase();
          const v = line.slice(c + 1).trim();
          const had = this.headers.get(k);
          this.headers.set(k, had === undefined ? v : `${had}, ${v}`);
        }
        if (this.code >= 100 && this.code < 200) continue; // 100 Continue and the like: the real response follows
        const te = this.headers.get('transfer-encoding');
        const cl = this.headers.get('content-length');
        if (te !== undefined && /chunked/i.test(te)) this.state = 'chunked';
        else if (cl !== undefined) {
          this.state = 'length';
          this.remaining = Number(cl);
          if (!Number.isSafeInteger(this.remaining) || this.remaining < 0) {
            this.error = new Error(`OTLP export: bad Content-Length ${JSON.stringify(cl)}`);
            return;
          }
        } else if (this.code === 204 || this.code === 304) {
          this.state = 'length';
          this.remaining = 0;
        } else this.state = 'close';
        continue;
      }
      if (this.state === 'length') {
        const n = Math.min(this.remaining, this.acc.length);
        if (n > 0 && !this.body(this.acc.subarray(0, n))) return;
        this.acc = this.acc.subarray(n);
        this.remaining -= n;
        if (this.remaining === 0) this.finish(true);
        return;
      }
      if (this.state === 'close') {
        if (this.acc.length > 0 && !this.body(this.acc)) return;
        this.acc = Buffer.alloc(0);
        return;
      }
      // chunked: size line, data, CRLF; a zero size, then trailers up to an empty line.
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, this.acc.length);
        if (n > 0 && !this.body(this.acc.subarray(0, n))) return;
        this.acc = this.acc.subarray(n);
        this.remaining -= n;
        if (this.remaining > 0) return;
        this.remaining = -2; // the CRLF after the data
      }
      if (this.remaining === -2) {
        if (this.acc.length < 2) return;
        this.acc = this.acc.subarray(2);
        this.remaining = 0;
      }
      if (this.remaining === -1) {
        // trailers after the last chunk
        const end = this.acc.indexOf('\r\n');
        if (end < 0) return;
        this.acc = this.acc.subarray(end + 2);
        if (end === 0) {
          this.finish(true);
          return;
        }
        continue;
      }
      const eol = this.acc.indexOf('\r\n');
      if (eol < 0) {
        if (this.acc.length > MAX_HEAD) this.error = new Error('OTLP export: chunk size line too long');
        return;
      }
      const size = Number.parseInt(latin1Text(this.acc, 0, eol).split(';')[0].trim(), 16);
      this.acc = this.acc.subarray(eol + 2);
      if (!Number.isInteger(size) || size < 0) {
        this.error = new Error('OTLP export: bad chunk size');
        return;
      }
      this.remaining = size === 0 ? -1 : size;
    }
  }
}

/** One request on one connection: settles once with the SDK transport's ExportResponse. */
interface Exchange {
  reader: ResponseReader;
  written: boolean;
  resolve: (r: ExportResponse) => void;
}

/** A keep-alive connection to the collector; reads go into a buffer of its own (net's `onread`). */
class Connection {
  readonly socket: net.Socket;
  private exchange: Exchange | undefined;
  dead = false;

  constructor(
    host: string,
    port: number,
    private readonly onIdleClose: (c: Connection) => void,
  ) {
    const readBuf = Buffer.allocUnsafe(16 * 1024);
    this.socket = net.connect({
      host,
      port,
      onread: {
        buffer: readBuf,
        callback: (n: number, buf: Uint8Array) => {
          this.data(Buffer.from(buf.buffer, buf.byteOffset, n));
          return true;
        },
      },
    });
    this.socket.setNoDelay(true);
    this.socket.on('error', (e: NodeJS.ErrnoException) => this.fail(e));
    this.socket.on('end', () => this.ended());
    this.socket.on('close', () => {
      this.dead = true;
      if (this.exchange) this.ended();
      else this.onIdleClose(this);
    });
    this.socket.on('timeout', () => {
      const x = this.exchange;
      this.exchange = undefined;
      this.socket.destroy();
      x?.resolve({ status: 'retryable', error: new Error('Request timed out') });
    });
  }

  send(head: Buffer, body: Uint8Array, timeoutMs: number): Promise<ExportResponse> {
    return new Promise((resolve) => {
      const x: Exchange = { reader: new ResponseReader(), written: false, resolve };
      this.exchange = x;
      this.socket.ref();
      this.socket.setTimeout(timeoutMs);
      // A new connection's request waits for the connect rather than queueing in the stream
      // (an error before it fails the exchange through the socket's 'error').
      if (this.socket.connecting) this.socket.once('connect', () => this.write(x, head, body));
      else this.write(x, head, body);
    });
  }

  private write(x: Exchange, head: Buffer, body: Uint8Array): void {
    if (this.exchange !== x) return; // failed meanwhile
    const sent = this.writeDirect(head, body);
    if (sent === head.length + body.length) {
      x.written = true;
      return;
    }
    // The rest through the stream. Corked: head and body leave in one writev, as the server's
    // own frames do.
    const socket = this.socket;
    socket.cork();
    if (sent < head.length) socket.write(head.subarray(sent));
    socket.write(body.subarray(Math.max(0, sent - head.length)), () => {
      x.written = true;
    });
    socket.uncork();
  }

  /**
   * Writes what the socket takes at once straight to its descriptor, as libuv's own first try
   * does, so a request on a connected keep-alive socket never runs Node's stream code (its
   * Writable.write and writev, compiled for the server's accepted sockets, were deoptimized by
   * this socket's other shape: docs/performance.md "Telemetry cost"). Returns the bytes written:
   * 0 with anything queued in the stream, where the descriptor is not known, when the socket
   * takes nothing now (EAGAIN) or on an error, which the stream's own write then meets and
   * reports as before.
   */
  private writeDirect(head: Buffer, body: Uint8Array): number {
    const socket = this.socket;
    if (socket.writableLength !== 0 || socket.destroyed) return 0;
    const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) return 0;
    try {
      return writevSync(fd, [head, body]);
    } catch {
      return 0;
    }
  }

  /** Waits for requests: no timeout, and it does not keep the process alive (as Node's agent keeps its free sockets). */
  idle(): void {
    this.socket.setTimeout(0);
    this.socket.unref();
  }

  private data(chunk: Buffer): void {
    const x = this.exchange;
    if (!x) {
      // Bytes nobody asked for: the connection's state is unknown.
      this.socket.destroy();
      return;
    }
    x.reader.push(chunk);
    if (x.reader.error) {
      this.exchange = undefined;
      this.socket.destroy();
      x.resolve({ status: 'failure', error: x.reader.error });
    } else if (x.reader.done) this.complete(x, x.reader.done);
  }

  private complete(x: Exchange, r: Response): void {
    this.exchange = undefined;
    // A response before the whole request was written (an early 4xx): the rest is not sent on.
    if (!r.keepAlive || !x.written) this.socket.destroy();
    if (r.code <= 299) x.resolve({ status: 'success', data: r.body });
    else if (retryableStatus(r.code)) x.resolve({ status: 'retryable', retryInMillis: retryAfterMs(r.headers.get('retry-after')) });
    else x.resolve({ status: 'failure', error: new OTLPExporterError(r.message, r.code, r.body.toString()) });
  }

  /** The peer ended or closed: a body read to the close is complete, anything else was cut. */
  private ended(): void {
    const x = this.exchange;
    if (!x) return;
    x.reader.closed();
    if (x.reader.done) {
      this.complete(x, { ...x.reader.done, keepAlive: false });
      return;
    }
    const e = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    this.fail(e);
  }

  private fail(e: NodeJS.ErrnoException): void {
    this.dead = true;
    const x = this.exchange;
    this.exchange = undefined;
    this.socket.destroy();
    if (!x) return;
    // As the SDK's response 'error' handler: a status already read decides.
    const code = x.reader.code;
    if (code >= 200 && code <= 299) x.resolve({ status: 'success' });
    else if (code > 0 && retryableStatus(code)) x.resolve({ status: 'retryable', error: e, retryInMillis: retryAfterMs(x.reader.headers.get('retry-after')) });
    else if (code === 0 && typeof e.code === 'string' && RETRYABLE_CODES.has(e.code)) x.resolve({ status: 'retryable', error: e });
    else x.resolve({ status: 'failure', error: e });
  }
}

/**
 * An IExporterTransport that POSTs to `target.url` (http: only) over keep-alive connections of
 * its own: the same request as the SDK's transport (method, path, its headers, its User-Agent)
 * with a Content-Length instead of a chunked body, the same outcome for every response (success,
 * retryable with Retry-After, failure with OTLPExporterError) and network error, the timeout as
 * Node's req.setTimeout (no socket activity for that long).
 */
export function rawHttpTransport(target: HttpTarget): IExporterTransport {
  const url = new URL(target.url);
  if (url.protocol !== 'http:') throw new Error(`rawHttpTransport: ${url.protocol} is not supported`);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port ? Number(url.port) : 80;
  const requestLine = `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n`;
  const userAgent = target.userAgent ? `${target.userAgent} ${SDK_USER_AGENT}` : SDK_USER_AGENT;
  const free: Connection[] = [];
  let stopped = false;
  const dropFree = (c: Connection) => {
    const i = free.indexOf(c);
    if (i >= 0) free.splice(i, 1);
  };
  return {
    async send(data: Uint8Array, timeoutMillis: number): Promise<ExportResponse> {
      const headers = await target.headers();
      let head = requestLine;
      for (const [k, v] of Object.entries(headers)) {
        const lk = k.toLowerCase();
        if (lk === 'user-agent' || lk === 'content-length' || lk === 'host' || lk === 'transfer-encoding' || lk === 'connection') continue;
        // Node's own checks, as its client makes them (a CR or LF in OTEL_EXPORTER_OTLP_HEADERS
        // must not reach the wire): the export fails with the same TypeError.
        validateHeaderName(k);
        validateHeaderValue(k, v);
        head += `${k}: ${v}\r\n`;
      }
      head += `User-Agent: ${userAgent}\r\nConnection: keep-alive\r\nContent-Length: ${data.length}\r\n\r\n`;
      let c = free.pop();
      while (c && c.dead) c = free.pop();
      c ??= new Connection(host, port, dropFree);
      const conn = c;
      const r = await conn.send(latin1Bytes(head), data, timeoutMillis);
      if (!conn.dead && !conn.socket.destroyed && !stopped) {
        conn.idle();
        free.push(conn);
      }
      return r;
    },
    shutdown(): void {
      stopped = true;
      for (const c of free.splice(0)) c.socket.destroy();
    },
  };
}

/** The SDK's RetryingTransport (retrying-transport.ts), same constants and rules: up to 5 retries of a retryable outcome within the export's timeout. */
const MAX_ATTEMPTS = 5;
const INITIAL_BACKOFF = 1000;
const MAX_BACKOFF = 5000;
const BACKOFF_MULTIPLIER = 1.5;
const JITTER = 0.2;

export function retryingTransport(transport: IExporterTransport): IExporterTransport {
  const retry = (data: Uint8Array, timeoutMillis: number, inMillis: number) =>
    new Promise<ExportResponse>((resolve, reject) => {
      setTimeout(() => transport.send(data, timeoutMillis).then(resolve, reject), inMillis);
    });
  return {
    async send(data: Uint8Array, timeoutMillis: number): Promise<ExportResponse> {
      let attempts = MAX_ATTEMPTS;
      let nextBackoff = INITIAL_BACKOFF;
      const deadline = Date.now() + timeoutMillis;
      let result = await transport.send(data, timeoutMillis);
      while (result.status === 'retryable' && attempts > 0) {
        attempts--;
        const backoff = Math.max(Math.min(nextBackoff * (1 + (Math.random() * (2 * JITTER) - JITTER)), MAX_BACKOFF), 0);
        nextBackoff = nextBackoff * BACKOFF_MULTIPLIER;
        const retryInMillis = result.retryInMillis ?? backoff;
        const remainingTimeoutMillis = deadline - Date.now();
        if (retryInMillis > remainingTimeoutMillis) {
          diag.info(`Export retry time ${Math.round(retryInMillis)}ms exceeds remaining timeout ${Math.round(remainingTimeoutMillis)}ms, not retrying further.`);
          return result;
        }
        diag.verbose(`Scheduling export retry in ${Math.round(retryInMillis)}ms`);
        result = await retry(data, remainingTimeoutMillis, retryInMillis);
      }
      if (result.status === 'success') diag.verbose(`Export succeeded after ${MAX_ATTEMPTS - attempts} retry attempts.`);
      else if (result.status === 'retryable') diag.info(`Export failed after maximum retry attempts (${MAX_ATTEMPTS}).`);
      else diag.info(`Export failed with non-retryable error: ${result.error}`);
      return result;
    },
    shutdown: () => transport.shutdown(),
  };
}
