// OTLP/HTTP protobuf export of the server's span records (./server-spans.ts) with a serializer
// of our own: ids are written from their hex with one native Buffer.write, strings with one
// utf8 write, and the resource is encoded once per exporter. The SDK's serializer took about
// half of a traced request's telemetry CPU in a fresh server (hexToBinary char by char, a
// generic attribute writer); the HTTP side (endpoint, OTEL_EXPORTER_OTLP_* headers, timeout,
// compression, retries) stays the SDK's own export delegate. The bytes follow
// opentelemetry/proto/collector/trace/v1/trace_service.proto: ExportTraceServiceRequest.
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
// The package's "./node-http" export (its typings by file: this tsconfig's resolution ignores "exports").
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { convertLegacyHttpOptions, createOtlpHttpExportDelegate } = require('@opentelemetry/otlp-exporter-base/node-http') as typeof import('@opentelemetry/otlp-exporter-base/build/src/index-node-http');
import { TraceFlags, type Attributes, type AttributeValue, type HrTime, type SpanContext, type TraceState } from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { hrTimeOf, RPC_KEYS, SpanRecord } from './server-spans';

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;
/** Span.flags: the context's trace flags plus "has is_remote" and "is_remote" (as the SDK writes them). */
const FLAGS_HAS_IS_REMOTE = 0x100;
const FLAGS_IS_REMOTE = 0x200;

/** Hex digit values by character code (lowercase and uppercase). */
const HEX = new Uint8Array(128);
for (let i = 0; i < 16; i++) {
  HEX['0123456789abcdef'.charCodeAt(i)] = i;
  HEX['0123456789ABCDEF'.charCodeAt(i)] = i;
}

/** A growable protobuf writer; length-delimited fields reserve one length byte and shift when longer. */
class Writer {
  buf = Buffer.allocUnsafe(64 * 1024);
  pos = 0;
  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }
  varint(v: number): void {
    this.ensure(10);
    if (v < 0) {
      // int64 two's complement: ten bytes.
      let b = BigInt.asUintN(64, BigInt(v));
      while (b > 0x7fn) {
        this.buf[this.pos++] = Number(b & 0x7fn) | 0x80;
        b >>= 7n;
      }
      this.buf[this.pos++] = Number(b);
      return;
    }
    while (v > 0x7f) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
  }
  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }
  string(field: number, s: string): void {
    this.tag(field, WIRE_LEN);
    // Short ASCII (method names, ids, attribute keys): byte by byte, without Buffer.write's call cost.
    if (s.length < 128) {
      this.ensure(s.length + 1);
      const at = this.pos;
      this.buf[at] = s.length;
      let i = 0;
      for (; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        this.buf[at + 1 + i] = c;
      }
      if (i === s.length) {
        this.pos = at + 1 + i;
        return;
      }
    }
    const n = Buffer.byteLength(s, 'utf8');
    this.varint(n);
    this.ensure(n);
    this.pos += this.buf.write(s, this.pos, n, 'utf8');
  }
  /** A hex id (trace or span id; lowercase, as generated or validated by the W3C propagator) as its bytes. */
  hex(field: number, hex: string): void {
    this.tag(field, WIRE_LEN);
    const n = hex.length >> 1;
    this.varint(n);
    this.ensure(n);
    for (let i = 0; i < n; i++) this.buf[this.pos + i] = (HEX[hex.charCodeAt(2 * i)] << 4) | HEX[hex.charCodeAt(2 * i + 1)];
    this.pos += n;
  }
  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
  fixed32(field: number, v: number): void {
    this.tag(field, WIRE_I32);
    this.ensure(4);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }
  /** Nanoseconds since the epoch from [seconds, nanoseconds], as a fixed64 (exact: 16-bit halves of the seconds). */
  time(field: number, s: number, ns: number): void {
    this.tag(field, WIRE_I64);
    this.ensure(8);
    // s * 1e9 + ns = hi16 * 1e9 * 2^16 + lo16 * 1e9 + ns; each product < 2^53.
    const lo = (s % 0x10000) * 1e9 + ns;
    const hi = Math.floor(s / 0x10000) * 1e9;
    // value = hi * 2^16 + lo: split into 32-bit words with exact integer arithmetic.
    const hiLow16 = hi % 0x10000;
    const hiHigh = (hi - hiLow16) / 0x10000;
    const low = hiLow16 * 0x10000 + lo;
    const lowWord = low % 0x1_0000_0000;
    const highWord = hiHigh + (low - lowWord) / 0x1_0000_0000;
    this.buf.writeUInt32LE(lowWord, this.pos);
    this.buf.writeUInt32LE(highWord >>> 0, this.pos + 4);
    this.pos += 8;
  }
  double(field: number, v: number): void {
    this.tag(field, WIRE_I64);
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }
  /** Starts a length-delimited field; returns where its content starts (pass it to end). */
  begin(field: number): number {
    this.tag(field, WIRE_LEN);
    this.ensure(1);
    this.pos++;
    return this.pos;
  }
  end(start: number): void {
    const len = this.pos - start;
    let extra = 0;
    for (let v = len; v > 0x7f; v = Math.floor(v / 0x80)) extra++;
    if (extra > 0) {
      this.ensure(extra);
      this.buf.copyWithin(start + extra, start, this.pos);
      this.pos += extra;
    }
    let at = start - 1;
    let v = len;
    while (v > 0x7f) {
      this.buf[at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[at] = v;
  }
}

function anyValue(w: Writer, v: AttributeValue): void {
  if (typeof v === 'string') w.string(1, v);
  else if (typeof v === 'boolean') {
    w.tag(2, WIRE_VARINT);
    w.varint(v ? 1 : 0);
  } else if (typeof v === 'number') {
    if (Number.isSafeInteger(v)) {
      w.tag(3, WIRE_VARINT);
      w.varint(v);
    } else w.double(4, v);
  } else if (Array.isArray(v)) {
    const arr = w.begin(5); // ArrayValue
    for (const x of v) {
      if (x === null || x === undefined) continue;
      const item = w.begin(1);
      anyValue(w, x);
      w.end(item);
    }
    w.end(arr);
  }
}

function attributes(w: Writer, field: number, attrs: Attributes): void {
  for (const key in attrs) {
    const v = attrs[key];
    if (v === undefined || v === null) continue;
    const kv = w.begin(field);
    w.string(1, key);
    const any = w.begin(2);
    anyValue(w, v);
    w.end(any);
    w.end(kv);
  }
}

/** A KeyValue {key, string_value} of `field`. */
function stringAttribute(w: Writer, field: number, key: string, value: string): void {
  const kv = w.begin(field);
  w.string(1, key);
  const any = w.begin(2);
  w.string(1, value);
  w.end(any);
  w.end(kv);
}

/** The server span's constant attribute, encoded once: rpc.system = "jsonrpc" as Span.attributes (9). */
const RPC_SYSTEM = (() => {
  const w = new Writer();
  stringAttribute(w, 9, RPC_KEYS[0], 'jsonrpc');
  return Buffer.from(w.buf.subarray(0, w.pos));
})();

/**
 * A Span up to its attributes (ids, tracestate, parent, name, kind, times); returns where it
 * starts, for spanEnd. Both writers below share it and spanEnd, and differ in where the fields
 * come from.
 */
function spanStart(w: Writer, traceId: string, spanId: string, traceState: TraceState | undefined, parent: SpanContext | undefined, name: string, kind: number, start: HrTime, end: HrTime): number {
  const at = w.begin(2); // ScopeSpans.spans
  w.hex(1, traceId);
  w.hex(2, spanId);
  const state = traceState?.serialize();
  if (state) w.string(3, state);
  if (parent?.spanId) w.hex(4, parent.spanId);
  w.string(5, name);
  w.tag(6, WIRE_VARINT);
  w.varint(kind + 1); // OTLP's SpanKind counts from UNSPECIFIED = 0
  w.time(7, start[0], start[1]);
  w.time(8, end[0], end[1]);
  return at;
}

/** The rest of a Span after its attributes: status, flags (trace flags, is_remote of the parent). */
function spanEnd(w: Writer, at: number, statusMessage: string | undefined, statusCode: number, traceFlags: number, parent: SpanContext | undefined): void {
  const st = w.begin(15);
  if (statusMessage) w.string(2, statusMessage);
  if (statusCode) {
    w.tag(3, WIRE_VARINT);
    w.varint(statusCode);
  }
  w.end(st);
  w.fixed32(16, (traceFlags & 0xff) | FLAGS_HAS_IS_REMOTE | (parent?.isRemote ? FLAGS_IS_REMOTE : 0));
  w.end(at);
}

/**
 * A span record of this server, from its own fields: the same bytes as span() reading it
 * through ReadableSpan (test/telemetry/otlp-proto.test.ts), without the objects its getters
 * build (span context, attributes, status) for every span of every batch.
 */
function record(w: Writer, s: SpanRecord): void {
  const parent = s.parentSpanContext;
  const at = spanStart(w, s.traceId, s.spanId, s.traceState, parent, s.name, s.kind, hrTimeOf(s.startMs), hrTimeOf(s.endMs < 0 ? s.startMs : s.endMs));
  const method = s.rpcMethod;
  if (method !== undefined) {
    w.bytes(RPC_SYSTEM);
    stringAttribute(w, 9, RPC_KEYS[1], method);
    const id = s.rpcRequestId;
    if (id !== undefined) stringAttribute(w, 9, RPC_KEYS[2], id);
  }
  if (s.extra) attributes(w, 9, s.extra);
  spanEnd(w, at, s.statusMessage, s.statusCode, TraceFlags.SAMPLED, parent);
}

/** Whether record() may write `s`: one of ours whose extra attributes do not rename a derived one (span() merges those). */
function plainRecord(s: ReadableSpan): s is SpanRecord {
  if (!(s instanceof SpanRecord)) return false;
  const x = s.extra;
  return s.method === undefined || x === undefined || !RPC_KEYS.some((k) => k in x);
}

function span(w: Writer, s: ReadableSpan): void {
  if (plainRecord(s)) return record(w, s);
  const ctx = s.spanContext();
  const parent = s.parentSpanContext;
  const at = spanStart(w, ctx.traceId, ctx.spanId, ctx.traceState, parent, s.name, s.kind, s.startTime, s.endTime);
  attributes(w, 9, s.attributes);
  const status = s.status;
  spanEnd(w, at, status.message, status.code, ctx.traceFlags, parent);
}

/** ExportTraceServiceRequest bytes of `spans`, all of one resource and scope (the server's). */
export class ProtoSpanSerializer {
  private resourceBytes: Buffer | undefined;
  private scopeBytes: Buffer | undefined;
  private readonly w = new Writer();

  private encodeOnce(resource: Resource, scope: InstrumentationScope): void {
    if (this.resourceBytes) return;
    const w = new Writer();
    const r = w.begin(1); // ResourceSpans.resource
    attributes(w, 1, resource.attributes);
    w.end(r);
    this.resourceBytes = Buffer.from(w.buf.subarray(0, w.pos));
    const s = new Writer();
    const sc = s.begin(1); // ScopeSpans.scope
    s.string(1, scope.name);
    if (scope.version) s.string(2, scope.version);
    s.end(sc);
    this.scopeBytes = Buffer.from(s.buf.subarray(0, s.pos));
  }

  serializeRequest(spans: ReadableSpan[]): Uint8Array | undefined {
    if (spans.length === 0) return undefined;
    this.encodeOnce(spans[0].resource, spans[0].instrumentationScope);
    const w = this.w;
    w.pos = 0;
    const rs = w.begin(1); // ExportTraceServiceRequest.resource_spans
    w.bytes(this.resourceBytes!);
    const ss = w.begin(2); // ResourceSpans.scope_spans
    w.bytes(this.scopeBytes!);
    for (const s of spans) span(w, s);
    w.end(ss);
    w.end(rs);
    // A copy: the writer's buffer is reused by the next batch while this one may still be sent.
    return Buffer.from(w.buf.subarray(0, w.pos));
  }

  /** ExportTraceServiceResponse: only a partial success would say anything; nothing to report here. */
  deserializeResponse(): object {
    return {};
  }
}

/**
 * An OTLP/HTTP protobuf exporter of server span records: the SDK's HTTP delegate (configuration
 * from `url` and the OTEL_EXPORTER_OTLP_* variables, as the SDK's own exporter) with our serializer.
 */
export function protoSpanExporter(url: string): SpanExporter {
  const options = convertLegacyHttpOptions({ url }, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' });
  return new OTLPExporterBase<ReadableSpan[]>(createOtlpHttpExportDelegate(options, new ProtoSpanSerializer()));
}
