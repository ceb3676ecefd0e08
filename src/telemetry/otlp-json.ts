// OTLP/HTTP JSON export of the server's span batches: the batch's protobuf bytes read back into
// ReadableSpan objects and handed to the SDK's JSON exporter. JSON is a debugging format; the
// spans are written once, as protobuf, whichever encoding is configured, and this module (with
// the SDK's trace modules it needs) is loaded only when http/json is.
import { TraceFlags, type Attributes, type AttributeValue, type HrTime, type SpanContext } from '@opentelemetry/api';
import { TraceState, type InstrumentationScope } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { BatchExporter } from './server-spans';

type Value = bigint | Uint8Array;

/** The fields of one protobuf message: field number → its values (varints as bigints: int64 may be negative, others as bytes). */
function fields(b: Uint8Array): Map<number, Value[]> {
  const out = new Map<number, Value[]>();
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const byte = b[i++];
      v |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return v;
      shift += 7n;
    }
  };
  while (i < b.length) {
    const key = Number(varint());
    const wire = key & 7;
    let v: Value;
    if (wire === 0) v = varint();
    else if (wire === 1 || wire === 5) {
      const n = wire === 1 ? 8 : 4;
      v = b.subarray(i, i + n);
      i += n;
    } else {
      const n = Number(varint());
      v = b.subarray(i, i + n);
      i += n;
    }
    const no = Math.floor(key / 8);
    const list = out.get(no);
    if (list) list.push(v);
    else out.set(no, [v]);
  }
  return out;
}

const bytes = (f: Map<number, Value[]>, no: number): Uint8Array | undefined => f.get(no)?.[0] as Uint8Array | undefined;
const text = (b: Uint8Array | undefined): string => (b ? Buffer.from(b.buffer, b.byteOffset, b.length).toString('utf8') : '');
const hex = (b: Uint8Array | undefined): string => (b ? Buffer.from(b.buffer, b.byteOffset, b.length).toString('hex') : '');
const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.length);

function hrTime(b: Uint8Array | undefined): HrTime {
  if (!b) return [0, 0];
  const ns = view(b).getBigUint64(0, true);
  return [Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n)];
}

function anyValue(b: Uint8Array): AttributeValue | undefined {
  const f = fields(b);
  if (f.has(1)) return text(bytes(f, 1));
  if (f.has(2)) return f.get(2)![0] !== 0n;
  if (f.has(3)) return Number(BigInt.asIntN(64, f.get(3)![0] as bigint));
  if (f.has(4)) return view(bytes(f, 4)!).getFloat64(0, true);
  if (f.has(5)) {
    const items = (fields(bytes(f, 5)!).get(1) ?? []).map((v) => anyValue(v as Uint8Array));
    return items as AttributeValue;
  }
  return undefined;
}

/** The spans of an ExportTraceServiceRequest as ReadableSpans of `resource` and `scope`. */
export function readSpans(request: Uint8Array, resource: Resource, scope: InstrumentationScope): ReadableSpan[] {
  const spans: ReadableSpan[] = [];
  for (const rs of fields(request).get(1) ?? []) {
    for (const ss of fields(rs as Uint8Array).get(2) ?? []) {
      for (const sp of fields(ss as Uint8Array).get(2) ?? []) {
        const f = fields(sp as Uint8Array);
        const attributes: Attributes = {};
        for (const kv of f.get(9) ?? []) {
          const k = fields(kv as Uint8Array);
          const v = anyValue(bytes(k, 2) ?? new Uint8Array(0));
          if (v !== undefined) attributes[text(bytes(k, 1))] = v;
        }
        const st = fields(bytes(f, 15) ?? new Uint8Array(0));
        const flags = f.has(16) ? view(bytes(f, 16)!).getUint32(0, true) : 0;
        const state = f.has(3) ? new TraceState(text(bytes(f, 3))) : undefined;
        const ctx: SpanContext = { traceId: hex(bytes(f, 1)), spanId: hex(bytes(f, 2)), traceFlags: flags & 0xff || TraceFlags.NONE, traceState: state, isRemote: false };
        const parent: SpanContext | undefined = f.has(4) ? { traceId: ctx.traceId, spanId: hex(bytes(f, 4)), traceFlags: TraceFlags.SAMPLED, isRemote: (flags & 0x200) !== 0, traceState: state } : undefined;
        const start = hrTime(bytes(f, 7));
        const end = hrTime(bytes(f, 8));
        const message = st.has(2) ? text(bytes(st, 2)) : undefined;
        const code = Number((st.get(3)?.[0] as bigint | undefined) ?? 0n);
        spans.push({
          name: text(bytes(f, 5)),
          kind: Number((f.get(6)?.[0] as bigint | undefined) ?? 1n) - 1,
          spanContext: () => ctx,
          parentSpanContext: parent,
          startTime: start,
          endTime: end,
          duration: [0, 0],
          status: message === undefined ? { code } : { code, message },
          attributes,
          links: [],
          events: [],
          ended: true,
          resource,
          instrumentationScope: scope,
          droppedAttributesCount: 0,
          droppedEventsCount: 0,
          droppedLinksCount: 0,
        });
      }
    }
  }
  return spans;
}

/** An OTLP/HTTP JSON exporter of span batches to `url` (…/v1/traces), through the SDK's. */
export function jsonBatchExporter(url: string, resource: Resource, scope: InstrumentationScope): BatchExporter {
  const sdk = new OTLPTraceExporter({ url });
  return {
    export: (request, _spans, done) => sdk.export(readSpans(request, resource, scope), done),
    shutdown: () => sdk.shutdown(),
  };
}
