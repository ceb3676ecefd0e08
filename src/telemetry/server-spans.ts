// The server's spans: records of our own, written as OTLP protobuf the moment they end into the
// batch being filled, and exported in batches off the request path. A request's span is one small
// object while the request runs: its ids are 32 bytes of a shared pool of random bytes, its times
// numbers, its rpc.* attributes the method and id as received. Nothing of an ended span is left
// but its bytes, so no span outlives a young collection: queued span objects (and the id strings
// and times they held) were what made scavenges 2-3x longer with every request traced
// (docs/performance.md, "Telemetry cost"). No OpenTelemetry import: the SDK's span, context,
// sampler and processor are not used, nor loaded, on this path.
// Imported: Node's global `performance` is a lazy accessor, and every request's read of it ran its getter.
import { performance } from 'node:perf_hooks';
import type { RequestId } from '../protocol/types';
import { attributes, hexInto, stringAttribute, varintLength, WIRE_LEN, WIRE_VARINT, Writer, written, type AttrValue, type Attrs } from './proto-writer';
import type { WireParent } from './trace-context';

/** Longest string attribute value recorded from the wire (a client may send any string). */
export const MAX_ATTRIBUTE_CHARS = 128;
/** Longest error message recorded (attribute and status). */
const MAX_MESSAGE_CHARS = 256;

/** SpanKind as OpenTelemetry's API numbers it (OTLP adds one: UNSPECIFIED is 0 there). */
export const KIND_INTERNAL = 0;
export const KIND_SERVER = 1;
/** Status codes (OTLP and the API alike). */
export const STATUS_UNSET = 0;
export const STATUS_ERROR = 2;

/** Span.flags: sampled, plus "has is_remote" and "is_remote" of the parent (as the SDK writes them). */
const FLAGS_SAMPLED = 0x01;
const FLAGS_HAS_IS_REMOTE = 0x100;
const FLAGS_IS_REMOTE = 0x200;

/** A span's ids in its pool slot: trace id at 0, span id at 16, parent span id at 24. */
const SLOT = 32;
const POOL_WORDS = (64 * 1024) / 4;
/**
 * The first pool's slots, an eighth of a full pool's: its replacement runs while the span code is still
 * interpreted and records its type feedback. Met first by optimized code, the replacement's
 * operations had none and threw the span constructor's optimized code away (docs/performance.md,
 * "Telemetry cost").
 */
const FIRST_POOL_WORDS = (256 * SLOT) / 4;

/**
 * Slots for span ids in shared 64 KiB buffers. A full buffer is replaced, never rewritten, since
 * an open span (a process's, for its life) still reads its slot. The ids are random words from
 * Math.random(), as the SDK's RandomIdGenerator makes them: crypto's randomFillSync cost ~180 ns
 * a span, a tenth of a traced request's telemetry CPU.
 */
class IdPool {
  buf = Buffer.allocUnsafe(0);
  words = new Uint32Array(0);
  private at = 0;
  /** The byte offset of a fresh slot in `buf` (read `buf` and `words` after this call). */
  slot(): number {
    if (this.at + SLOT > this.buf.length) {
      this.words = new Uint32Array(this.buf.length === 0 ? FIRST_POOL_WORDS : POOL_WORDS);
      this.buf = Buffer.from(this.words.buffer);
      this.at = 0;
    }
    const at = this.at;
    this.at += SLOT;
    return at;
  }
}

export const ids = new IdPool();

/** `n` random 32-bit words from word `w` on; an all-zero id is invalid (W3C): vanishingly rare, but never emitted. */
function randomWords(words: Uint32Array, w: number, n: number): void {
  let any = 0;
  for (let i = w; i < w + n; i++) any |= words[i] = (Math.random() * 0x1_0000_0000) >>> 0;
  if (any === 0) words[w] = 1;
}

/** Where a span goes when it ends. */
export interface SpanSink {
  ended(span: ServerSpan, endMs: number): void;
}

/**
 * One server span: a request's (kind SERVER, with the rpc.* attributes derived from `method`
 * and `requestId` when written) or a process's (kind INTERNAL).
 */
export class ServerSpan {
  /** The pool buffer and offset of this span's ids. */
  readonly idBuf: Buffer;
  readonly idOff: number;
  readonly hasParent: boolean;
  readonly parentRemote: boolean;
  /** W3C tracestate, serialized (inherited from the remote parent). */
  readonly traceState: string | undefined;
  statusCode = STATUS_UNSET;
  statusMessage: string | undefined;
  /** Attributes set after the start (errors, a process's outcome), in the order set. */
  extra: Attrs | undefined;
  private ended = false;

  constructor(
    private readonly sink: SpanSink,
    readonly name: string,
    readonly kind: number,
    /** A request span's method and JSON-RPC id, as received (undefined for a process span). */
    readonly method: string | undefined,
    readonly requestId: RequestId | undefined,
    parent: ServerSpan | WireParent | undefined,
    /** performance.now() at the start (the request's own reading, when it has one). */
    readonly startMs = performance.now(),
  ) {
    const at = ids.slot();
    const buf = ids.buf;
    this.idBuf = buf;
    this.idOff = at;
    randomWords(ids.words, (at + 16) >> 2, 2);
    if (parent === undefined) {
      this.hasParent = false;
      this.parentRemote = false;
      this.traceState = undefined;
      randomWords(ids.words, at >> 2, 4);
    } else if (parent instanceof ServerSpan) {
      this.hasParent = true;
      this.parentRemote = false;
      this.traceState = parent.traceState;
      parent.idBuf.copy(buf, at, parent.idOff, parent.idOff + 16);
      parent.idBuf.copy(buf, at + 24, parent.idOff + 16, parent.idOff + 24);
    } else {
      this.hasParent = true;
      this.parentRemote = true;
      this.traceState = parent.traceState;
      hexInto(buf, at, parent.traceId);
      hexInto(buf, at + 24, parent.spanId);
    }
  }

  /** Trace id, lowercase hex (tests, logs; the exporter copies the bytes). */
  get traceId(): string {
    return this.idBuf.toString('hex', this.idOff, this.idOff + 16);
  }
  get spanId(): string {
    return this.idBuf.toString('hex', this.idOff + 16, this.idOff + 24);
  }

  setAttribute(key: string, value: AttrValue): void {
    (this.extra ??= {})[key] = value;
  }

  fail(code: number, message: string): void {
    this.setAttribute('rpc.jsonrpc.error_code', code);
    this.setAttribute('rpc.jsonrpc.error_message', message.slice(0, MAX_MESSAGE_CHARS));
    this.setStatus(STATUS_ERROR, message.slice(0, MAX_MESSAGE_CHARS));
  }

  setStatus(code: number, message?: string): void {
    this.statusCode = code;
    this.statusMessage = message;
  }

  /** Ends the span at `endMs` (performance.now(); the request's own reading, when it has one). */
  end(endMs = performance.now()): void {
    if (this.ended) return;
    this.ended = true;
    this.sink.ended(this, endMs);
  }
}

/** The attribute keys a request span derives from its method and id. */
export const RPC_KEYS = ['rpc.system', 'rpc.method', 'rpc.jsonrpc.request_id'] as const;

/** rpc.system = "jsonrpc" as Span.attributes (9), encoded once. */
const RPC_SYSTEM = (() => {
  const w = new Writer(64);
  stringAttribute(w, 9, RPC_KEYS[0], 'jsonrpc');
  return written(w);
})();

/**
 * The bytes of a request span that depend only on its name and method: its name and kind
 * fields, and its rpc.system and rpc.method attributes followed by the key half of
 * rpc.jsonrpc.request_id. Written once for the last method seen: a server's requests come in
 * runs of one method, and copying ~60 bytes is a third of writing them field by field.
 */
interface MethodBytes {
  name: string;
  method: string;
  /** Span.name (5) and Span.kind (6). */
  head: Buffer;
  /** The two attributes (9); the request id's KeyValue is written after them. */
  attrs: Buffer;
}
let lastMethod: MethodBytes | undefined;

function methodBytes(name: string, method: string): MethodBytes {
  const h = new Writer(256);
  h.string(5, name);
  h.tag(6, WIRE_VARINT);
  h.varint(KIND_SERVER + 1);
  const a = new Writer(512);
  a.bytes(RPC_SYSTEM);
  stringAttribute(a, 9, RPC_KEYS[1], method, MAX_ATTRIBUTE_CHARS);
  return { name, method, head: written(h), attrs: written(a) };
}

/** The key of rpc.jsonrpc.request_id's KeyValue, copied into it. */
const REQUEST_ID_KEY = Buffer.from(RPC_KEYS[2], 'latin1');

function copy(b: Buffer, p: number, src: Buffer): number {
  const n = src.length;
  for (let i = 0; i < n; i++) b[p + i] = src[i];
  return p + n;
}

/** Writes an ended span as ScopeSpans.spans (2). */
export function writeSpan(w: Writer, s: ServerSpan, endMs: number): void {
  if (s.method !== undefined && s.kind === KIND_SERVER && s.extra === undefined && s.statusCode === STATUS_UNSET && s.traceState === undefined) {
    writeRequestSpan(w, s, endMs);
    return;
  }
  writeAnySpan(w, s, endMs);
}

/**
 * The common span: a request's, with no status, later attributes or tracestate. The same bytes
 * as writeAnySpan (test/telemetry/otlp-proto.test.ts compares both with the SDK's), with the
 * per-method part copied and every length known up front, so nothing is shifted or checked twice.
 */
function writeRequestSpan(w: Writer, s: ServerSpan, endMs: number): void {
  const method = s.method!;
  let m = lastMethod;
  if (m === undefined || m.method !== method || m.name !== s.name) m = lastMethod = methodBytes(s.name, method);
  const id = s.requestId;
  const numericId = typeof id === 'number' && Number.isSafeInteger(id) && id >= 0;
  if (!numericId && id !== undefined) {
    writeAnySpan(w, s, endMs);
    return;
  }
  let digits = 0;
  if (numericId) {
    digits = 1;
    for (let v = id; v >= 10; v = Math.floor(v / 10)) digits++;
  }
  // ids 18 + 10 (+ parent 10), name/kind, two times 18, attributes, the id's KeyValue, status 2, flags 6.
  const len = 28 + (s.hasParent ? 10 : 0) + m.head.length + 18 + m.attrs.length + (numericId ? 30 + digits : 0) + 2 + 6;
  if (len < 0x80 || len > 0x3fff) {
    // Its length is written in two bytes below.
    writeAnySpan(w, s, endMs);
    return;
  }
  w.ensure(len + 3);
  const b = w.buf;
  let p = w.pos;
  b[p++] = 0x12; // ScopeSpans.spans
  b[p++] = (len & 0x7f) | 0x80;
  b[p++] = len >> 7;
  const ib = s.idBuf;
  const io = s.idOff;
  b[p++] = 0x0a; // trace_id
  b[p++] = 16;
  for (let i = 0; i < 16; i++) b[p + i] = ib[io + i];
  p += 16;
  b[p++] = 0x12; // span_id
  b[p++] = 8;
  for (let i = 0; i < 8; i++) b[p + i] = ib[io + 16 + i];
  p += 8;
  if (s.hasParent) {
    b[p++] = 0x22; // parent_span_id
    b[p++] = 8;
    for (let i = 0; i < 8; i++) b[p + i] = ib[io + 24 + i];
    p += 8;
  }
  p = copy(b, p, m.head);
  w.pos = p;
  w.timeMs(7, s.startMs);
  w.timeMs(8, endMs);
  p = copy(b, w.pos, m.attrs);
  if (numericId) {
    b[p++] = 0x4a; // attributes
    b[p++] = 28 + digits;
    b[p++] = 0x0a; // key
    b[p++] = 22;
    p = copy(b, p, REQUEST_ID_KEY);
    b[p++] = 0x12; // value: AnyValue
    b[p++] = 2 + digits;
    b[p++] = 0x0a; // string_value
    b[p++] = digits;
    for (let i = digits - 1, v = id; i >= 0; i--, v = Math.floor(v / 10)) b[p + i] = 48 + (v % 10);
    p += digits;
  }
  b[p++] = 0x7a; // status: empty
  b[p++] = 0;
  b[p++] = 0x85; // flags (fixed32, field 16)
  b[p++] = 0x01;
  b[p++] = FLAGS_SAMPLED | 0; // low byte
  b[p++] = (FLAGS_HAS_IS_REMOTE | (s.parentRemote ? FLAGS_IS_REMOTE : 0)) >> 8;
  b[p++] = 0;
  b[p++] = 0;
  w.pos = p;
}

/** Any span, field by field. */
function writeAnySpan(w: Writer, s: ServerSpan, endMs: number): void {
  // A span is 128 bytes or more, mostly: its length gets two bytes at once, so end() does not shift it.
  const at = w.begin(2, 2);
  const ib = s.idBuf;
  const io = s.idOff;
  w.raw(1, ib, io, 16);
  w.raw(2, ib, io + 16, 8);
  if (s.traceState !== undefined) w.string(3, s.traceState);
  if (s.hasParent) w.raw(4, ib, io + 24, 8);
  w.string(5, s.name);
  w.tag(6, WIRE_VARINT);
  w.varint(s.kind + 1);
  w.timeMs(7, s.startMs);
  w.timeMs(8, endMs);
  const x = s.extra;
  if (s.method !== undefined) {
    // Derived attributes first; one set later under the same key replaces it in place (as in
    // the SDK's attribute map), which only the general writer below does.
    if (x !== undefined && (RPC_KEYS[1] in x || RPC_KEYS[2] in x || RPC_KEYS[0] in x)) {
      attributes(w, 9, { ...derived(s), ...x });
      spanTail(w, at, s);
      return;
    }
    w.bytes(RPC_SYSTEM);
    stringAttribute(w, 9, RPC_KEYS[1], s.method, MAX_ATTRIBUTE_CHARS);
    const id = s.requestId;
    if (typeof id === 'number' && Number.isSafeInteger(id) && id >= 0) {
      const kv = w.begin(9);
      w.string(1, RPC_KEYS[2]);
      const any = w.begin(2);
      w.decimal(1, id);
      w.end(any);
      w.end(kv);
    } else if (id !== undefined) stringAttribute(w, 9, RPC_KEYS[2], String(id), MAX_ATTRIBUTE_CHARS);
  }
  if (x !== undefined) attributes(w, 9, x);
  spanTail(w, at, s);
}

/** The rpc.* attributes of a request span as values (the rare path that merges later ones). */
function derived(s: ServerSpan): Attrs {
  const a: Attrs = { [RPC_KEYS[0]]: 'jsonrpc', [RPC_KEYS[1]]: s.method!.slice(0, MAX_ATTRIBUTE_CHARS) };
  if (s.requestId !== undefined) a[RPC_KEYS[2]] = String(s.requestId).slice(0, MAX_ATTRIBUTE_CHARS);
  return a;
}

/** Status and flags, then the span's length. */
function spanTail(w: Writer, at: number, s: ServerSpan): void {
  const st = w.begin(15);
  if (s.statusMessage) w.string(2, s.statusMessage);
  if (s.statusCode) {
    w.tag(3, WIRE_VARINT);
    w.varint(s.statusCode);
  }
  w.end(st);
  w.fixed32(16, FLAGS_SAMPLED | FLAGS_HAS_IS_REMOTE | (s.parentRemote ? FLAGS_IS_REMOTE : 0));
  w.end(at);
}

/** The resource and instrumentation scope of every span of a server, as export requests carry them. */
export interface SpanOrigin {
  resource: Attrs;
  scope: { name: string; version?: string };
}

/** Sends one ExportTraceServiceRequest's bytes; `done` once they are no longer read. */
export interface BatchExporter {
  export(request: Uint8Array, spans: number, done: (r: { code: number; error?: Error }) => void): void;
  shutdown(): Promise<void>;
}

export interface BatchOptions {
  /** Spans held at most; more are dropped (OTEL_BSP_MAX_QUEUE_SIZE, default 2048). */
  maxQueue: number;
  /** Spans per export (OTEL_BSP_MAX_EXPORT_BATCH_SIZE, default 512). */
  maxBatch: number;
  /** Longest wait before a partial batch is exported, ms (OTEL_BSP_SCHEDULE_DELAY, default 5000). */
  delayMs: number;
}

function envInt(env: NodeJS.ProcessEnv, name: string, dflt: number): number {
  const v = Number(env[name]);
  return Number.isInteger(v) && v > 0 ? v : dflt;
}

/** The batch limits from the standard OTEL_BSP_* variables (the SDK's BatchSpanProcessor defaults). */
export function batchOptions(env: NodeJS.ProcessEnv = process.env): BatchOptions {
  const maxQueue = envInt(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048);
  return { maxQueue, maxBatch: Math.min(maxQueue, envInt(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512)), delayMs: envInt(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000) };
}

/**
 * Exports under way at once. The SDK's BatchSpanProcessor has one; a pipelined burst then filled
 * the 2048-span queue while that one export waited for its answer (~0.5 % of the benchmark's
 * spans dropped at 100 %), so a full batch goes out while others are still under way: on the
 * 2-core benchmark machine an export's answer took 1-3 ms, but 20 ms for one in ten and up to
 * 56 ms, while a burst ends ~100 spans a millisecond. The export delegate allows 30 (its
 * concurrencyLimit); each export holds its batch's buffer until its answer, and two buffers are
 * kept for reuse, as before.
 */
const EXPORTS_IN_FLIGHT = 8;

/** Bytes reserved per span in a new batch buffer (a request span is ~170; longer ones may grow it). */
const BATCH_BYTES_PER_SPAN = 256;

/** One batch being filled or waiting: spans written after room for the request's header. */
interface Batch {
  w: Writer;
  spans: number;
}

/**
 * Ended spans written into batches and exported off the request path: a full batch is handed to
 * the exporter when it fills (sent once the current code returns), a partial one after
 * `delayMs`; up to EXPORTS_IN_FLIGHT exports at a time. A batch's buffer is reused once its
 * export is done.
 */
export class SpanBatcher implements SpanSink {
  private readonly resource: Buffer;
  private readonly scope: Buffer;
  /** Bytes reserved before the spans for the request's header (its lengths take at most 5 bytes each). */
  private readonly headerRoom: number;
  /**
   * A new batch buffer's size: room for a full batch of request spans (~170 bytes each), so it
   * does not grow while being filled. Its growth, first met by the optimized span writer, threw
   * that code away (docs/performance.md, "Telemetry cost").
   */
  private readonly batchBytes: number;
  private current: Batch;
  private readonly full: Batch[] = [];
  private readonly free: Writer[] = [];
  private queued = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The partial batch's delay ended while EXPORTS_IN_FLIGHT were under way. */
  private due = false;
  /** Exports under way (at most EXPORTS_IN_FLIGHT). */
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;
  /** Spans dropped because the queue was full. */
  dropped = 0;
  /** Spans handed to the exporter (tests: nothing lost). */
  exported = 0;
  readonly maxQueue: number;

  constructor(
    private readonly exporter: BatchExporter,
    origin: SpanOrigin,
    private readonly opts: BatchOptions = batchOptions(),
    private readonly onError: (message: string) => void = () => {},
  ) {
    this.maxQueue = opts.maxQueue;
    const r = new Writer(1024);
    const rs = r.begin(1); // ResourceSpans.resource
    attributes(r, 1, origin.resource);
    r.end(rs);
    this.resource = written(r);
    const s = new Writer(256);
    const sc = s.begin(1); // ScopeSpans.scope
    s.string(1, origin.scope.name);
    if (origin.scope.version) s.string(2, origin.scope.version);
    s.end(sc);
    this.scope = written(s);
    this.headerRoom = 1 + 5 + this.resource.length + 1 + 5 + this.scope.length;
    this.batchBytes = Math.max(64 * 1024, this.headerRoom + opts.maxBatch * BATCH_BYTES_PER_SPAN);
    this.current = this.batch();
  }

  private batch(): Batch {
    const w = this.free.pop() ?? new Writer(this.batchBytes);
    w.pos = this.headerRoom;
    return { w, spans: 0 };
  }

  ended(span: ServerSpan, endMs: number): void {
    if (this.stopped) return;
    if (this.queued >= this.opts.maxQueue) {
      this.dropped++;
      return;
    }
    this.queued++;
    writeSpan(this.current.w, span, endMs);
    if (++this.current.spans >= this.opts.maxBatch) {
      this.full.push(this.current);
      this.current = this.batch();
      // Handed to the exporter now, as the SDK's BatchSpanProcessor does in the span's end(); its
      // bytes are written once this code returns (the transport awaits its headers first). After
      // the event-loop turn was too late: a pipelined burst's requests are answered in one
      // synchronous run (fs/getMetadata's lstat is synchronous), and its 2 000 spans filled the
      // queue's 2048 before any export started (~0.5 % of the benchmark's spans dropped at 100 %).
      this.exportOne();
    } else if (!this.timer) this.startTimer();
  }

  /**
   * Before any export, the first span goes out at once, not after `delayMs`. The export is the
   * only code in the server's thread that uses a second kind of socket, other Buffer sizes and
   * its own timers. Met first 5 s into a 1 %-sampled server's traffic, when Node's Buffer,
   * stream, timer and emitter functions were optimized for the websockets alone, it deoptimized
   * them (`--trace-deopt`: allocUnsafe, toString, subarray, _unrefTimer, getEncodingOps,
   * onStreamRead, clearBuffer...) and the compiler threads made them again, a few per cent of
   * such a server's CPU in its first minute. Met at its first span, while that code still records
   * its types, it is part of what the functions are optimized for (docs/performance.md,
   * "Telemetry cost"). The operator sees the first span at once too.
   */
  private startTimer(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // At the limit: the partial batch goes when an export ends.
      if (!this.exportOne()) this.due = true;
    }, this.exported === 0 ? 0 : this.opts.delayMs);
    this.timer.unref();
  }

  /** The ExportTraceServiceRequest of a batch: its header written just before its spans. */
  private request(b: Batch): Uint8Array {
    const w = b.w;
    const spansLen = w.pos - this.headerRoom;
    const scopeSpans = this.scope.length + spansLen;
    const resourceSpans = this.resource.length + 1 + varintLength(scopeSpans) + scopeSpans;
    const start = this.headerRoom - (1 + varintLength(resourceSpans) + this.resource.length + 1 + varintLength(scopeSpans) + this.scope.length);
    const end = w.pos;
    w.pos = start;
    w.tag(1, WIRE_LEN); // ExportTraceServiceRequest.resource_spans
    w.varint(resourceSpans);
    w.bytes(this.resource);
    w.tag(2, WIRE_LEN); // ResourceSpans.scope_spans
    w.varint(scopeSpans);
    w.bytes(this.scope);
    w.pos = end;
    return w.buf.subarray(start, end);
  }

  /**
   * Starts the export of one batch (a full one first), unless EXPORTS_IN_FLIGHT are under way:
   * the end of one starts the next. Returns the export, or undefined when none was started.
   */
  private exportOne(): Promise<void> | undefined {
    if (this.inFlight.size >= EXPORTS_IN_FLIGHT) return undefined;
    let b = this.full.shift();
    if (!b && this.current.spans > 0) {
      b = this.current;
      this.current = this.batch();
    }
    if (!b) return undefined;
    const batch = b;
    this.queued -= batch.spans;
    if (this.queued === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.exported += batch.spans;
    const flight: Promise<void> = new Promise<void>((resolve) => {
      this.exporter.export(this.request(batch), batch.spans, (r) => {
        if (r.code !== 0) this.onError(`traces: export of ${batch.spans} spans failed: ${r.error?.message ?? 'unknown error'}`);
        // A failed export may have left a request writing its bytes: that buffer is not reused.
        else if (this.free.length < 2) this.free.push(batch.w);
        resolve();
      });
    }).finally(() => {
      this.inFlight.delete(flight);
      const due = this.due;
      this.due = false;
      while (this.full.length > 0 && this.exportOne());
      if (due && this.full.length === 0 && this.current.spans > 0) this.due = !this.exportOne();
      else if (this.current.spans > 0 && !this.timer && !this.due && !this.stopped) this.startTimer();
    });
    this.inFlight.add(flight);
    return flight;
  }

  /** Exports everything queued. */
  async forceFlush(): Promise<void> {
    while (this.queued > 0 || this.inFlight.size > 0) {
      while (this.queued > 0 && this.exportOne());
      if (this.inFlight.size > 0) await Promise.race(this.inFlight);
    }
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.exporter.shutdown();
  }
}
