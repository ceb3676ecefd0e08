// The server's span bytes against the SDK's: the same spans, described independently as SDK
// ReadableSpans (ids from the records, times through the SDK's own hrTime(), attributes and
// status from what the test did), exported by the SDK's protobuf exporter, and ours through our
// exporter, to two real OTLP receivers: both decode to the same spans (ids, parent, tracestate,
// name, kind, times to the nanosecond, attributes in order and of every type, status, flags,
// the resource's service name), in batches large enough for multi-byte lengths. Also the
// http/json path (our bytes read back into ReadableSpans for the SDK's JSON exporter).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SpanStatusCode, TraceFlags, type Attributes, type SpanContext } from '@opentelemetry/api';
import { TraceState, hrTime } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { jsonBatchExporter } from '../../src/telemetry/otlp-json';
import { Writer } from '../../src/telemetry/proto-writer';
import { protoBatchExporter } from '../../src/telemetry/otlp-proto';
import { KIND_INTERNAL, KIND_SERVER, STATUS_ERROR, ServerSpan, SpanBatcher, type BatchExporter, type SpanSink } from '../../src/telemetry/server-spans';
import type { WireParent } from '../../src/telemetry/trace-context';
import { startReceiver, type ReceivedSpan } from '../support/telemetry';

const resourceAttrs = { 'service.name': 'proto-under-test', 'host.arch': 'x64', 'process.pid': 4242, 'a.double': 1.5, 'a.bool': true };
const resource = resourceFromAttributes(resourceAttrs);
const scope = { name: 'exec-server', version: '9.9.9' };

/** What the test did to one span, to describe it to the SDK. */
interface Made {
  span: ServerSpan;
  endMs: number;
  parent: SpanContext | undefined;
  traceState: string | undefined;
  attributes: Attributes;
  status: { code: SpanStatusCode; message?: string };
}

/** Records each span's end time on its way to the batcher. */
class Recorder implements SpanSink {
  ends = new Map<ServerSpan, number>();
  constructor(readonly next: SpanSink) {}
  ended(span: ServerSpan, endMs: number): void {
    this.ends.set(span, endMs);
    this.next.ended(span, endMs);
  }
}

function make(sink: Recorder): Omit<Made, 'endMs'>[] {
  const wire: WireParent = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true, traceState: 'vendor=1,other=x' };
  // A remote parent without tracestate: a request span that takes the common path (server-spans.ts writeRequestSpan).
  const bare: WireParent = { traceId: 'a1f92f3577b34da6a3ce929d0e0e4736', spanId: '10f067aa0ba902b7', sampled: true, traceState: undefined };
  const remote: SpanContext = { traceId: wire.traceId, spanId: wire.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true };
  const bareRemote: SpanContext = { traceId: bare.traceId, spanId: bare.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true };
  const out: Omit<Made, 'endMs'>[] = [];
  for (let i = 0; i < 300; i++) {
    const parented = i % 3 === 0;
    const bareParent = !parented && i % 8 === 1;
    const method = i % 7 === 0 ? 'é/ünïcode/' + 'x'.repeat(200) : 'fs/getMetadata';
    const id = i % 4 === 0 ? undefined : i % 4 === 1 ? i : `req-${i}`;
    const name = i % 7 === 0 ? 'other' : 'fs/getMetadata';
    const s = new ServerSpan(sink, name, KIND_SERVER, method, id, parented ? wire : bareParent ? bare : undefined);
    const attributes: Attributes = { 'rpc.system': 'jsonrpc', 'rpc.method': method.slice(0, 128) };
    if (id !== undefined) attributes['rpc.jsonrpc.request_id'] = String(id);
    let status: Made['status'] = { code: SpanStatusCode.UNSET };
    if (i % 5 === 0) {
      const message = `not found ${'ø'.repeat(i % 40)}`;
      s.fail(-32004, message);
      Object.assign(attributes, { 'rpc.jsonrpc.error_code': -32004, 'rpc.jsonrpc.error_message': message });
      status = { code: SpanStatusCode.ERROR, message };
    }
    // An attribute set later under a derived key replaces it in place.
    if (i % 11 === 0) {
      s.setAttribute('rpc.method', `renamed ${i}`);
      attributes['rpc.method'] = `renamed ${i}`;
    }
    out.push({ span: s, parent: parented ? remote : bareParent ? bareRemote : undefined, traceState: parented ? wire.traceState : undefined, attributes, status });
    if (i % 10 === 0) {
      const p = new ServerSpan(sink, 'process', KIND_INTERNAL, undefined, undefined, s);
      const pa: Attributes = { 'exec_server.sandbox_type': 'none', 'process.exit.code': i, 'exec_server.sandbox_denied': i % 20 === 0, 'a.float': i + 0.25, 'a.list': ['x', 'y'] };
      for (const [k, v] of Object.entries(pa)) p.setAttribute(k, v!);
      let ps: Made['status'] = { code: SpanStatusCode.UNSET };
      if (i % 20 === 0) {
        p.setStatus(STATUS_ERROR, `exit code ${i}`);
        ps = { code: SpanStatusCode.ERROR, message: `exit code ${i}` };
      }
      const local: SpanContext = { traceId: s.traceId, spanId: s.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: false };
      out.push({ span: p, parent: local, traceState: parented ? wire.traceState : undefined, attributes: pa, status: ps });
    }
  }
  return out;
}

/** The SDK's description of a span the test made. */
function readable(m: Made): ReadableSpan {
  const ts = m.traceState ? new TraceState(m.traceState) : undefined;
  const ctx: SpanContext = { traceId: m.span.traceId, spanId: m.span.spanId, traceFlags: TraceFlags.SAMPLED, traceState: ts, isRemote: false };
  return {
    name: m.span.name,
    kind: m.span.kind,
    spanContext: () => ctx,
    parentSpanContext: m.parent,
    startTime: hrTime(m.span.startMs),
    endTime: hrTime(m.endMs),
    duration: [0, 0],
    status: m.status,
    attributes: m.attributes,
    links: [],
    events: [],
    ended: true,
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

const show = (s: ReceivedSpan) => ({ ...s, startNs: String(s.startNs), endNs: String(s.endNs) });

async function compare(ours: (url: string) => BatchExporter): Promise<void> {
  const rxSdk = await startReceiver();
  const rxOurs = await startReceiver();
  try {
    const b = new SpanBatcher(ours(`${rxOurs.url}/v1/traces`), { resource: resourceAttrs, scope }, { maxQueue: 4096, maxBatch: 512, delayMs: 60_000 });
    const rec = new Recorder(b);
    const made = make(rec);
    for (const m of [...made].reverse()) m.span.end();
    await b.shutdown();
    const sdk = new OTLPTraceExporter({ url: `${rxSdk.url}/v1/traces` });
    await new Promise<void>((resolve, reject) => sdk.export(made.map((m) => readable({ ...m, endMs: rec.ends.get(m.span)! })), (r) => (r.code === 0 ? resolve() : reject(r.error))));
    await sdk.shutdown();
    const theirs = rxSdk.spans();
    const got = rxOurs.spans();
    assert.equal(theirs.length, made.length);
    assert.equal(got.length, made.length, 'every span exported');
    const bySdk = new Map(theirs.map((s) => [s.spanId, s]));
    for (const s of got) {
      const o = bySdk.get(s.spanId);
      assert.ok(o, `span ${s.spanId} exported by both`);
      assert.deepEqual(show(s), show(o));
    }
    assert.ok(got.filter((s) => s.traceState === 'vendor=1,other=x').length > 50);
    assert.ok(got.some((s) => s.flags === 0x301) && got.some((s) => s.flags === 0x101), 'remote and local parents flagged');
    assert.ok(got.some((s) => s.attributes['rpc.jsonrpc.error_code'] === -32004));
    assert.ok(got.some((s) => s.attributes['a.float'] === 10.25));
    assert.ok(got.some((s) => s.attributes['rpc.method'] === 'renamed 11'));
    assert.ok(got.some((s) => s.attributes['rpc.jsonrpc.request_id'] === '1'));
    assert.ok(got.every((s) => s.serviceName === 'proto-under-test'));
  } finally {
    await rxSdk.close();
    await rxOurs.close();
  }
}

test('our protobuf span bytes and the SDK exporter decode to the same spans', async () => {
  await compare((url) => {
    const ex = protoBatchExporter(url);
    return ex;
  });
});

test('http/json: our spans read back and exported by the SDK JSON exporter decode to the same spans', async () => {
  await compare((url) => jsonBatchExporter(url, resource, scope));
});

test('span times: a performance.now() reading written as the SDK hrTime() of it, to the nanosecond (second boundaries and carries included)', () => {
  const w = new Writer(16);
  const values: number[] = [0, 0.0000004, 999.9999996, 1000, 1e7 + 0.5];
  for (let i = 0; i < 20_000; i++) values.push(Math.random() * 1e8, Math.floor(Math.random() * 1e5) * 1000 + 999.99999 + Math.random() * 0.00001);
  for (const ms of values) {
    w.pos = 0;
    w.timeMs(7, ms);
    const [s, ns] = hrTime(ms);
    const want = BigInt(s) * 1_000_000_000n + BigInt(ns);
    assert.equal(w.buf[0], (7 << 3) | 1);
    assert.equal(w.buf.readBigUInt64LE(1), want, `performance.now() ${ms}`);
  }
});
