// Our OTLP/HTTP protobuf serializer of server span records against the SDK's own: the same
// records exported through both to a real OTLP receiver decode to the same spans (ids, parent,
// tracestate, name, kind, times to the nanosecond, attributes of every type, status, flags, the
// resource's service name), in batches large enough that lengths need multi-byte varints.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SpanKind, SpanStatusCode, TraceFlags, type SpanContext } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { protoSpanExporter } from '../../src/telemetry/otlp-proto';
import { SpanBatcher, SpanRecord, ids } from '../../src/telemetry/server-spans';
import { startReceiver, type ReceivedSpan } from '../support/telemetry';

const resource = resourceFromAttributes({ 'service.name': 'proto-under-test', 'host.arch': 'x64', 'process.pid': 4242, 'a.double': 1.5, 'a.bool': true });
const scope = { name: 'exec-server', version: '9.9.9' };

function records(b: SpanBatcher): SpanRecord[] {
  const remote: SpanContext = { traceId: ids.traceId(), spanId: ids.spanId(), traceFlags: TraceFlags.SAMPLED, isRemote: true, traceState: new TraceState('vendor=1,other=x') };
  const out: SpanRecord[] = [];
  for (let i = 0; i < 300; i++) {
    const parented = i % 3 === 0;
    const r = new SpanRecord(b, i % 7 === 0 ? 'other' : 'fs/getMetadata', SpanKind.SERVER, parented ? remote.traceId : ids.traceId(), parented ? remote.traceState : undefined, parented ? remote : undefined, i % 7 === 0 ? 'é/ünïcode/' + 'x'.repeat(200) : 'fs/getMetadata', i % 2 ? String(i) : undefined);
    if (i % 5 === 0) r.fail(-32004, `not found ${'ø'.repeat(i % 40)}`);
    // An attribute set later under a derived key replaces it (the records' attributes merge them).
    if (i % 11 === 0) r.setAttribute('rpc.method', `renamed ${i}`);
    out.push(r);
    if (i % 10 === 0) {
      const p = new SpanRecord(b, 'process', SpanKind.INTERNAL, r.traceId, r.traceState, r.spanContext());
      p.setAttribute('process.exit.code', i);
      p.setAttribute('exec_server.sandbox_denied', i % 20 === 0);
      p.setAttribute('exec_server.sandbox_type', 'none');
      p.setAttribute('a.float', i + 0.25);
      if (i % 20 === 0) p.setStatus(SpanStatusCode.ERROR, `exit code ${i}`);
      out.push(p);
    }
  }
  return out;
}

/** Hands every batch to both exporters (the same record objects), then reports the first failure. */
function both(a: SpanExporter, b: SpanExporter): SpanExporter {
  return {
    export(spans, done) {
      a.export(spans, (ra) => b.export(spans, (rb) => done(ra.code !== 0 ? ra : rb)));
    },
    async shutdown() {
      await a.shutdown();
      await b.shutdown();
    },
  };
}

test('our protobuf serializer and the SDK one decode to the same spans', async () => {
  const rxSdk = await startReceiver();
  const rxOurs = await startReceiver();
  try {
    const b = new SpanBatcher(both(new OTLPTraceExporter({ url: `${rxSdk.url}/v1/traces` }), protoSpanExporter(`${rxOurs.url}/v1/traces`)), resource, scope, { maxQueue: 4096, maxBatch: 512, delayMs: 60_000 });
    const made = records(b);
    for (const r of made) r.end();
    await b.shutdown();
    for (const rx of [rxSdk, rxOurs]) assert.ok(rx.requests.length > 0 && rx.requests.every((r) => r.contentType === 'application/x-protobuf'));
    const sdk = rxSdk.spans();
    const ours = rxOurs.spans();
    assert.equal(ours.length, made.length);
    assert.equal(sdk.length, made.length);
    const bySdk = new Map(sdk.map((s) => [s.spanId, s]));
    const show = (s: ReceivedSpan) => ({ ...s, startNs: String(s.startNs), endNs: String(s.endNs) });
    for (const s of ours) {
      const o = bySdk.get(s.spanId);
      assert.ok(o, `span ${s.spanId} exported by both`);
      // Times: the SDK's HrTime → nanoseconds and ours agree exactly.
      assert.deepEqual(show(s), show(o));
    }
    const parented = ours.filter((s) => s.traceState === 'vendor=1,other=x');
    assert.ok(parented.length > 50);
    assert.ok(ours.some((s) => s.flags === 0x301) && ours.some((s) => s.flags === 0x101), 'remote and local parents flagged');
    assert.ok(ours.some((s) => s.attributes['rpc.jsonrpc.error_code'] === -32004));
    assert.ok(ours.some((s) => s.attributes['a.float'] === 10.25));
    assert.ok(ours.some((s) => s.attributes['rpc.method'] === 'renamed 11'));
    assert.ok(ours.every((s) => s.serviceName === 'proto-under-test'));
  } finally {
    await rxSdk.close();
    await rxOurs.close();
  }
});
