// A protobuf writer for OTLP trace export (opentelemetry/proto/trace/v1/trace.proto), shared by
// the server's span encoder (./server-spans.ts) and the one-time resource/scope encoding. No
// OpenTelemetry import: with the protobuf exporter the server's spans never become SDK objects.
// Ids, times and short ASCII strings are written byte by byte from numbers and buffers, so
// writing a span allocates nothing (docs/performance.md, "Telemetry cost").

export const WIRE_VARINT = 0;
export const WIRE_I64 = 1;
export const WIRE_LEN = 2;
export const WIRE_I32 = 5;

/** An attribute value as OTLP's AnyValue carries it (the SDK's AttributeValue without its null entries). */
export type AttrValue = string | number | boolean | readonly (string | number | boolean | null | undefined)[];
export type Attrs = Record<string, AttrValue | undefined>;

/** Hex digit values by character code (lowercase and uppercase). */
const HEX = new Uint8Array(128);
for (let i = 0; i < 16; i++) {
  HEX['0123456789abcdef'.charCodeAt(i)] = i;
  HEX['0123456789ABCDEF'.charCodeAt(i)] = i;
}

/** Writes the bytes of a hex string into `buf` at `at` (hex.length / 2 bytes). */
export function hexInto(buf: Uint8Array, at: number, hex: string): void {
  const n = hex.length >> 1;
  for (let i = 0; i < n; i++) buf[at + i] = (HEX[hex.charCodeAt(2 * i)] << 4) | HEX[hex.charCodeAt(2 * i + 1)];
}

/** performance.timeOrigin as [seconds, nanoseconds]; a span's times are offsets from it. */
const ORIGIN_MS = performance.timeOrigin;
const ORIGIN_S = Math.trunc(ORIGIN_MS / 1000);
const ORIGIN_NS = Math.round((ORIGIN_MS - ORIGIN_S * 1000) * 1e6);

/** A growable protobuf writer; length-delimited fields reserve one length byte and shift when longer. */
export class Writer {
  buf: Buffer;
  pos = 0;
  constructor(size = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(size);
  }
  ensure(n: number): void {
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
  /** A string field; at most `max` UTF-16 units of `s` (as s.slice(0, max)). */
  string(field: number, s: string, max = Infinity): void {
    this.tag(field, WIRE_LEN);
    const len = s.length < max ? s.length : max;
    // Short ASCII (method names, ids, attribute keys): byte by byte, without Buffer.write's call cost.
    if (len < 128) {
      this.ensure(len + 1);
      const at = this.pos;
      this.buf[at] = len;
      let i = 0;
      for (; i < len; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        this.buf[at + 1 + i] = c;
      }
      if (i === len) {
        this.pos = at + 1 + i;
        return;
      }
    }
    const t = len < s.length ? s.slice(0, len) : s;
    const n = Buffer.byteLength(t, 'utf8');
    this.varint(n);
    this.ensure(n);
    this.pos += this.buf.write(t, this.pos, n, 'utf8');
  }
  /** A non-negative safe integer as its decimal text (String(n)), without making the string. */
  decimal(field: number, n: number): void {
    let digits = 1;
    for (let v = n; v >= 10; v = Math.floor(v / 10)) digits++;
    this.tag(field, WIRE_LEN);
    this.ensure(digits + 1);
    this.buf[this.pos++] = digits;
    for (let i = digits - 1, v = n; i >= 0; i--, v = Math.floor(v / 10)) this.buf[this.pos + i] = 48 + (v % 10);
    this.pos += digits;
  }
  /** A hex id (lowercase, as generated or validated by the W3C rules) as its bytes. */
  hex(field: number, hex: string): void {
    this.tag(field, WIRE_LEN);
    const n = hex.length >> 1;
    this.varint(n);
    this.ensure(n);
    hexInto(this.buf, this.pos, hex);
    this.pos += n;
  }
  /** `n` (< 128) bytes of `src` from `at` as a bytes field (ids kept in a buffer). */
  raw(field: number, src: Uint8Array, at: number, n: number): void {
    this.tag(field, WIRE_LEN);
    this.ensure(n + 1);
    const b = this.buf;
    let p = this.pos;
    b[p++] = n;
    for (let i = 0; i < n; i++) b[p + i] = src[at + i];
    this.pos = p + n;
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
  /**
   * The absolute time of a performance.now() reading, as the SDK's span would have it (origin
   * plus offset, each as [seconds, nanoseconds], the nanoseconds rounded), as nanoseconds since
   * the epoch in a fixed64.
   * Without a branch on the value: a carry that first happened in optimized code (a second's
   * boundary, a 32-bit word's) met an operation without type feedback and threw away the
   * optimized code of the span writer it is inlined into, which was then compiled again
   * (docs/performance.md, "Telemetry cost").
   */
  timeMs(field: number, nowMs: number): void {
    const nowS = Math.trunc(nowMs / 1000);
    const ns0 = ORIGIN_NS + Math.round((nowMs - nowS * 1000) * 1e6);
    const carry = ns0 >= 1e9 ? 1 : 0;
    const s = ORIGIN_S + nowS + carry;
    const ns = ns0 - carry * 1e9;
    // s * 1e9 + ns in 32-bit words with exact integer arithmetic: hi16 * 1e9 * 2^16 + lo16 * 1e9 + ns,
    // each product below 2^53.
    const hi = Math.floor(s / 0x10000) * 1e9;
    const hiLow16 = hi % 0x10000;
    const low = hiLow16 * 0x10000 + (s % 0x10000) * 1e9 + ns;
    const lo = low % 0x1_0000_0000;
    const hiWord = (hi - hiLow16) / 0x10000 + (low - lo) / 0x1_0000_0000;
    this.tag(field, WIRE_I64);
    this.ensure(8);
    const b = this.buf;
    const p = this.pos;
    b[p] = lo & 0xff;
    b[p + 1] = (lo >>> 8) & 0xff;
    b[p + 2] = (lo >>> 16) & 0xff;
    b[p + 3] = lo >>> 24;
    b[p + 4] = hiWord & 0xff;
    b[p + 5] = (hiWord >>> 8) & 0xff;
    b[p + 6] = (hiWord >>> 16) & 0xff;
    b[p + 7] = hiWord >>> 24;
    this.pos = p + 8;
  }
  double(field: number, v: number): void {
    this.tag(field, WIRE_I64);
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }
  /**
   * Starts a length-delimited field with `room` bytes for its length (1, or 2 when it is likely
   * to be 128..16383 bytes long); returns where its content starts (pass it to end).
   */
  begin(field: number, room = 1): number {
    this.tag(field, WIRE_LEN);
    this.ensure(room);
    this.pos += room;
    this.buf[this.pos - 1] = room;
    return this.pos;
  }
  /** Writes the length of the field begun at `start`, moving its content if the room left for the length was not right. */
  end(start: number): void {
    const len = this.pos - start;
    const room = this.buf[start - 1];
    const need = varintLength(len);
    if (need !== room) {
      this.ensure(need - room);
      this.buf.copyWithin(start + need - room, start, this.pos);
      this.pos += need - room;
      start += need - room;
    }
    let at = start - need;
    let v = len;
    while (v > 0x7f) {
      this.buf[at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[at] = v;
  }
}

/** Bytes of a varint of `v` (v >= 0). */
export function varintLength(v: number): number {
  let n = 1;
  for (; v > 0x7f; v = Math.floor(v / 0x80)) n++;
  return n;
}

export function anyValue(w: Writer, v: AttrValue): void {
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

/** Each attribute as a KeyValue of `field`. */
export function attributes(w: Writer, field: number, attrs: Attrs): void {
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

/** A KeyValue {key, string_value} of `field`; the value cut to `max` characters. */
export function stringAttribute(w: Writer, field: number, key: string, value: string, max = Infinity): void {
  const kv = w.begin(field);
  w.string(1, key);
  const any = w.begin(2);
  w.string(1, value, max);
  w.end(any);
  w.end(kv);
}

/** The bytes written so far, copied out (for fields encoded once and reused). */
export function written(w: Writer): Buffer {
  return Buffer.from(w.buf.subarray(0, w.pos));
}
