// Shared helpers of the telemetry tests: a real OTLP/HTTP receiver (a small HTTP server that
// decodes both http/json and http/protobuf trace exports into one span shape), a scripted
// collector on raw sockets (for the exporters' HTTP transports), a raw websocket JSON-RPC client
// (to put exact `trace` members on the wire), and the built CLI.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import WebSocket from 'ws';
import { waitFor } from './wait';

export const repoRoot = process.env.EXEC_SERVER_REPO ?? path.resolve(__dirname, '../../..');
export const cliPath = path.join(repoRoot, 'dist/cli.js');
export const telemetryBundle = path.join(repoRoot, 'dist/telemetry.js');

/** Builds dist/ when it is missing or predates the telemetry flags. */
export function ensureBuilt(): void {
  if (existsSync(cliPath) && existsSync(telemetryBundle) && readFileSync(cliPath, 'utf8').includes('--otlp-endpoint')) return;
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'esbuild.mjs')], { cwd: repoRoot, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`build failed: ${r.stderr}`);
}

export type AttrValue = string | number | boolean;
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span */
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client */
  kind: number;
  attributes: Record<string, AttrValue>;
  /** The attribute keys as sent, in order and with any repeats (the map above keeps the last). */
  attributeKeys: string[];
  /** OTLP StatusCode: 0 unset, 1 ok, 2 error */
  statusCode: number;
  serviceName: string;
  /** start/end, nanoseconds since the epoch */
  startNs: bigint;
  endNs: bigint;
  /** W3C tracestate ('' when none) */
  traceState: string;
  /** Span.flags (trace flags, has-is-remote 0x100, is-remote 0x200); 0 when absent */
  flags: number;
}

// ------------------------------------------------------------------ protobuf (wire format)

type Field = { wt: number; v: bigint | Buffer };
function readVarint(b: Buffer, pos: { i: number }): bigint {
  let r = 0n;
  let shift = 0n;
  for (;;) {
    const byte = b[pos.i++];
    if (byte === undefined) throw new Error('truncated varint');
    r |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return r;
    shift += 7n;
  }
}
/** Decodes one protobuf message into its fields (field number → occurrences). */
function pbFields(b: Buffer): Map<number, Field[]> {
  const out = new Map<number, Field[]>();
  const pos = { i: 0 };
  while (pos.i < b.length) {
    const key = Number(readVarint(b, pos));
    const no = key >>> 3;
    const wt = key & 7;
    let v: bigint | Buffer;
    if (wt === 0) v = readVarint(b, pos);
    else if (wt === 1) {
      v = b.subarray(pos.i, pos.i + 8);
      pos.i += 8;
    } else if (wt === 2) {
      const len = Number(readVarint(b, pos));
      v = b.subarray(pos.i, pos.i + len);
      pos.i += len;
    } else if (wt === 5) {
      v = b.subarray(pos.i, pos.i + 4);
      pos.i += 4;
    } else throw new Error(`unsupported wire type ${wt}`);
    if (pos.i > b.length) throw new Error('truncated message');
    const list = out.get(no) ?? [];
    list.push({ wt, v });
    out.set(no, list);
  }
  return out;
}
const bytesOf = (f: Map<number, Field[]>, no: number): Buffer => (f.get(no)?.[0]?.v as Buffer | undefined) ?? Buffer.alloc(0);
const all = (f: Map<number, Field[]>, no: number): Buffer[] => (f.get(no) ?? []).map((x) => x.v as Buffer);
const num = (f: Map<number, Field[]>, no: number): number => Number((f.get(no)?.[0]?.v as bigint | undefined) ?? 0n);

function pbAttributes(kvs: Buffer[]): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of kvs) {
    const f = pbFields(kv);
    const key = bytesOf(f, 1).toString('utf8');
    const any = pbFields(bytesOf(f, 2));
    if (any.has(1)) out[key] = bytesOf(any, 1).toString('utf8');
    else if (any.has(2)) out[key] = num(any, 2) !== 0;
    else if (any.has(3)) out[key] = Number(BigInt.asIntN(64, any.get(3)![0].v as bigint));
    else if (any.has(4)) out[key] = (any.get(4)![0].v as Buffer).readDoubleLE(0);
  }
  return out;
}

/** ExportTraceServiceRequest (protobuf) → spans. */
export function decodeProtobufTraces(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of all(pbFields(body), 1)) {
    const rsf = pbFields(rs);
    const resource = pbAttributes(all(pbFields(bytesOf(rsf, 1)), 1));
    for (const ss of all(rsf, 2)) {
      for (const sp of all(pbFields(ss), 2)) {
        const f = pbFields(sp);
        spans.push({
          traceId: bytesOf(f, 1).toString('hex'),
          spanId: bytesOf(f, 2).toString('hex'),
          parentSpanId: bytesOf(f, 4).toString('hex'),
          name: bytesOf(f, 5).toString('utf8'),
          kind: num(f, 6),
          attributes: pbAttributes(all(f, 9)),
          attributeKeys: all(f, 9).map((kv) => bytesOf(pbFields(kv), 1).toString('utf8')),
          statusCode: num(pbFields(bytesOf(f, 15)), 3),
          serviceName: String(resource['service.name'] ?? ''),
          startNs: bytesOf(f, 7).length === 8 ? bytesOf(f, 7).readBigUInt64LE(0) : 0n,
          endNs: bytesOf(f, 8).length === 8 ? bytesOf(f, 8).readBigUInt64LE(0) : 0n,
          traceState: bytesOf(f, 3).toString('utf8'),
          flags: bytesOf(f, 16).length === 4 ? bytesOf(f, 16).readUInt32LE(0) : 0,
        });
      }
    }
  }
  return spans;
}

// ------------------------------------------------------------------ JSON

interface JsonKv {
  key: string;
  value: { stringValue?: string; boolValue?: boolean; intValue?: number | string; doubleValue?: number };
}
function jsonAttributes(kvs: JsonKv[] | undefined): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const { key, value } of kvs ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
  }
  return out;
}
/** ExportTraceServiceRequest (OTLP/JSON: hex ids) → spans. */
export function decodeJsonTraces(body: Buffer): ReceivedSpan[] {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const req = JSON.parse(body.toString('utf8')) as any;
  const spans: ReceivedSpan[] = [];
  for (const rs of req.resourceSpans ?? []) {
    const resource = jsonAttributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        spans.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          attributes: jsonAttributes(s.attributes),
          attributeKeys: ((s.attributes ?? []) as Array<{ key: string }>).map((a) => a.key),
          statusCode: s.status?.code ?? 0,
          serviceName: String(resource['service.name'] ?? ''),
          startNs: BigInt(s.startTimeUnixNano ?? 0),
          endNs: BigInt(s.endTimeUnixNano ?? 0),
          traceState: s.traceState ?? '',
          flags: s.flags ?? 0,
        });
      }
    }
  }
  return spans;
}

// ------------------------------------------------------------------ the receiver

export interface OtlpReceiver {
  /** Base URL (OTEL_EXPORTER_OTLP_ENDPOINT): http://127.0.0.1:PORT */
  readonly url: string;
  /** Every export request received, in order. */
  readonly requests: { path: string; contentType: string; body: Buffer }[];
  /** All spans received so far (both encodings decoded). */
  spans(): ReceivedSpan[];
  /** Waits until `pred` holds for the spans received (polling), or fails after `ms`. */
  waitFor(pred: (spans: ReceivedSpan[]) => boolean, ms?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<OtlpReceiver> {
  const requests: OtlpReceiver['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', contentType: String(req.headers['content-type'] ?? ''), body: Buffer.concat(chunks) });
      // An empty ExportTraceServiceResponse in the request's encoding.
      if (String(req.headers['content-type']).includes('json')) res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const spans = () =>
    requests.flatMap((r) => (r.path !== '/v1/traces' ? [] : r.contentType.includes('json') ? decodeJsonTraces(r.body) : decodeProtobufTraces(r.body)));
  return {
    url,
    requests,
    spans,
    async waitFor(pred, ms = 15_000) {
      return waitFor(() => (pred(spans()) ? spans() : undefined), {
        timeout: ms,
        what: 'spans',
        interval: 50,
        detail: () => `got ${JSON.stringify(spans().map((x) => x.name))}`,
      });
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

// ------------------------------------------------------------------ Prometheus text

/** The value of one sample line (`name{labels} value`) of a Prometheus scrape, or undefined when absent. */
export function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

// ------------------------------------------------------------------ raw JSON-RPC over a websocket

/** One request as a raw collector read it. */
export interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  connection: number;
}

/** What a raw collector does with its n-th request: answers with these bytes, hangs up, or says nothing. */
export type Answer = (req: Seen, n: number) => string | 'hang-up' | 'silence';

export interface RawCollector {
  url: string;
  seen: Seen[];
  connections: () => number;
  /** The accepted sockets, in order (a test may pause one: the collector then reads nothing). */
  sockets: net.Socket[];
  close(): Promise<void>;
}

/**
 * A collector on a raw socket: reads each request (Content-Length or chunked) and answers as
 * scripted. A request's bytes are joined once they are all in, so a large body costs one copy.
 */
export async function rawCollector(answer: Answer): Promise<RawCollector> {
  const seen: Seen[] = [];
  let connections = 0;
  const sockets: net.Socket[] = [];
  const server = net.createServer((s) => {
    const connection = ++connections;
    sockets.push(s);
    s.on('error', () => {});
    const parts: Buffer[] = [];
    let have = 0;
    // Head and body bytes of the request being read, once its head says (Content-Length).
    let need = -1;
    s.on('data', (d: Buffer) => {
      parts.push(d);
      have += d.length;
      if (need >= 0 && have < need) return;
      let acc = parts.length === 1 ? parts[0] : Buffer.concat(parts);
      parts.length = 0;
      for (;;) {
        const end = acc.indexOf('\r\n\r\n');
        if (end < 0) break;
        const lines = acc.toString('latin1', 0, end).split('\r\n');
        const headers: Record<string, string> = {};
        for (const l of lines.slice(1)) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
        let rest = acc.subarray(end + 4);
        let body: Buffer;
        if (headers['content-length'] !== undefined) {
          const n = Number(headers['content-length']);
          need = end + 4 + n;
          if (rest.length < n) break;
          body = Buffer.from(rest.subarray(0, n));
          rest = rest.subarray(n);
        } else {
          // chunked (Node's http client piping a Readable)
          const chunks: Buffer[] = [];
          let r = rest;
          let complete = false;
          for (;;) {
            const eol = r.indexOf('\r\n');
            if (eol < 0) break;
            const size = parseInt(r.toString('latin1', 0, eol), 16);
            if (r.length < eol + 2 + size + 2) break;
            chunks.push(r.subarray(eol + 2, eol + 2 + size));
            r = r.subarray(eol + 2 + size + 2);
            if (size === 0) {
              complete = true;
              break;
            }
          }
          if (!complete) break;
          body = Buffer.concat(chunks);
          rest = r;
        }
        acc = rest;
        need = -1;
        const [method, path] = lines[0].split(' ');
        const req = { method, path, headers, body, connection };
        seen.push(req);
        const a = answer(req, seen.length);
        if (a === 'hang-up') s.destroy();
        else if (a !== 'silence') s.write(a);
      }
      if (acc.length > 0) parts.push(acc);
      have = acc.length;
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    seen,
    connections: () => connections,
    sockets,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

export interface RawClient {
  ws: WebSocket;
  /** Sends a frame as is; resolves with the response of `msg.id`. */
  call(msg: Record<string, unknown>): Promise<{ result?: unknown; error?: { code: number; message: string } }>;
  send(msg: Record<string, unknown>): void;
  notifications: { method: string; params: Record<string, unknown> }[];
  close(): void;
}

export async function rawClient(url: string, headers?: Record<string, string>): Promise<RawClient> {
  const ws = new WebSocket(url, { headers });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  const waiting = new Map<unknown, (m: Record<string, unknown>) => void>();
  const notifications: RawClient['notifications'] = [];
  ws.on('message', (d) => {
    const m = JSON.parse(String(d)) as Record<string, unknown>;
    if ('id' in m && !('method' in m)) {
      waiting.get(m.id)?.(m);
      waiting.delete(m.id);
    } else notifications.push(m as RawClient['notifications'][number]);
  });
  return {
    ws,
    notifications,
    call: (msg) =>
      new Promise((resolve) => {
        waiting.set(msg.id, resolve as (m: Record<string, unknown>) => void);
        ws.send(JSON.stringify(msg));
      }),
    send: (msg) => ws.send(JSON.stringify(msg)),
    close: () => ws.close(),
  };
}

/** initialize + initialized on a raw client. */
export async function handshake(c: RawClient): Promise<void> {
  const r = await c.call({ id: 'init', method: 'initialize', params: { clientName: 'telemetry-test' } });
  if (r.error) throw new Error(`initialize failed: ${r.error.message}`);
  c.send({ method: 'initialized', params: {} });
}

/** A clean env for a child CLI: no inherited OTEL_* (the developer's shell may set some). */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OTEL_')) env[k] = v;
  return { ...env, ...extra };
}
