// The server's span records and their batcher: what the OTLP exporter reads from a record
// (ids, times on the epoch's scale, the rpc.* attributes derived at export, status, parent), and
// that ended spans are exported in batches after the request's turn, never inside end(), with
// the queue bounded and everything flushed on shutdown.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { SpanKind, SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { SpanBatcher, SpanRecord, batchOptions, ids } from '../../src/telemetry/server-spans';
import { waitFor } from '../support/wait';

class MemoryExporter implements SpanExporter {
  batches: ReadableSpan[][] = [];
  /** performance.now() of each export call. */
  at: number[] = [];
  shut = false;
  export(spans: ReadableSpan[], done: (r: { code: number }) => void): void {
    this.batches.push(spans);
    this.at.push(performance.now());
    setImmediate(() => done({ code: 0 }));
  }
  async shutdown(): Promise<void> {
    this.shut = true;
  }
}

const resource = resourceFromAttributes({ 'service.name': 'under-test' });
const scope = { name: 'exec-server', version: '1' };
const hrNs = ([s, ns]: [number, number]) => BigInt(s) * 1_000_000_000n + BigInt(ns);

test('a record reads as the span the SDK would export: ids, epoch times, derived attributes, status', async () => {
  const ex = new MemoryExporter();
  const b = new SpanBatcher(ex, resource, scope, { maxQueue: 100, maxBatch: 10, delayMs: 10 });
  const before = BigInt(Date.now()) * 1_000_000n;
  const traceId = ids.traceId();
  const r = new SpanRecord(b, 'fs/getMetadata', SpanKind.SERVER, traceId, undefined, undefined, 'fs/getMetadata', '7');
  // A span that lasts a while: over real I/O, timed from outside to bound its length from below.
  const t0 = performance.now();
  await readFile(__filename);
  await new Promise<void>((res) => setImmediate(res));
  const lasted = BigInt(Math.floor((performance.now() - t0) * 1e6));
  r.fail(-32004, 'not found');
  r.end();
  r.end(); // a second end is ignored
  const after = BigInt(Date.now()) * 1_000_000n;
  await b.forceFlush();
  assert.equal(ex.batches.length, 1);
  assert.equal(ex.batches[0].length, 1);
  const s = ex.batches[0][0];
  const ctx = s.spanContext();
  assert.match(ctx.traceId, /^[0-9a-f]{32}$/);
  assert.match(ctx.spanId, /^[0-9a-f]{16}$/);
  assert.equal(ctx.traceId, traceId);
  assert.equal(ctx.traceFlags, TraceFlags.SAMPLED);
  assert.equal(s.parentSpanContext, undefined);
  assert.equal(s.kind, SpanKind.SERVER);
  assert.deepEqual(s.attributes, {
    'rpc.system': 'jsonrpc',
    'rpc.method': 'fs/getMetadata',
    'rpc.jsonrpc.request_id': '7',
    'rpc.jsonrpc.error_code': -32004,
    'rpc.jsonrpc.error_message': 'not found',
  });
  assert.deepEqual(s.status, { code: SpanStatusCode.ERROR, message: 'not found' });
  const start = hrNs(s.startTime as [number, number]);
  const end = hrNs(s.endTime as [number, number]);
  assert.ok(start >= before - 2_000_000n && end <= after + 2_000_000n, `${start}..${end} within ${before}..${after}`);
  assert.ok(lasted > 0n && end - start >= lasted - 2_000n, `start to end (${end - start} ns) covers the ${lasted} ns between them`);
  const d = hrNs(s.duration as [number, number]) - (end - start);
  assert.ok(d >= -2n && d <= 2n, `duration is end - start (off by ${d} ns)`);
  assert.ok(s.ended);
  assert.equal(s.resource, resource);
  assert.deepEqual(s.instrumentationScope, scope);
});

test('a long method or request id is cut to 128 characters; a child keeps its parent and trace', async () => {
  const ex = new MemoryExporter();
  const b = new SpanBatcher(ex, resource, scope, { maxQueue: 100, maxBatch: 10, delayMs: 10 });
  const parent = new SpanRecord(b, 'other', SpanKind.SERVER, ids.traceId(), undefined, undefined, 'm'.repeat(500), 'i'.repeat(500));
  const child = new SpanRecord(b, 'process', SpanKind.INTERNAL, parent.traceId, undefined, parent.spanContext());
  child.setAttribute('process.exit.code', 3);
  child.end();
  parent.end();
  await b.forceFlush();
  const [c, p] = ex.batches.flat();
  assert.equal((p.attributes['rpc.method'] as string).length, 128);
  assert.equal((p.attributes['rpc.jsonrpc.request_id'] as string).length, 128);
  assert.deepEqual(c.attributes, { 'process.exit.code': 3 });
  assert.equal(c.spanContext().traceId, p.spanContext().traceId);
  assert.equal(c.parentSpanContext?.spanId, p.spanContext().spanId);
  assert.notEqual(c.spanContext().spanId, p.spanContext().spanId);
});

test('ended spans are exported in batches after the turn, bounded by the queue, all flushed on shutdown', async () => {
  const ex = new MemoryExporter();
  const b = new SpanBatcher(ex, resource, scope, { maxQueue: 25, maxBatch: 10, delayMs: 60_000 });
  for (let i = 0; i < 30; i++) new SpanRecord(b, 'x', SpanKind.SERVER, ids.traceId(), undefined, undefined, 'x').end();
  assert.equal(ex.batches.length, 0, 'nothing exported inside end()');
  assert.equal(b.dropped, 5, 'the queue holds 25');
  await new Promise((r) => setImmediate(r));
  assert.equal(ex.batches.length, 1, 'a full batch goes after the turn');
  assert.equal(ex.batches[0].length, 10);
  await b.shutdown();
  assert.deepEqual(
    ex.batches.map((x) => x.length),
    [10, 10, 5],
  );
  assert.ok(ex.shut);
  new SpanRecord(b, 'late', SpanKind.SERVER, ids.traceId(), undefined, undefined, 'x').end();
  await b.forceFlush();
  assert.equal(ex.batches.flat().length, 25, 'nothing queued after shutdown');
});

test('a partial batch is exported after the schedule delay', async () => {
  const ex = new MemoryExporter();
  const b = new SpanBatcher(ex, resource, scope, { maxQueue: 100, maxBatch: 10, delayMs: 30 });
  const ended = performance.now();
  new SpanRecord(b, 'x', SpanKind.SERVER, ids.traceId(), undefined, undefined, 'x').end();
  await waitFor(() => ex.batches.length > 0, { what: 'the partial batch', timeout: 5_000 });
  assert.equal(ex.batches.length, 1);
  // Not before the delay (timers never fire early; 1 ms of rounding).
  assert.ok(ex.at[0] - ended >= 29, `exported ${(ex.at[0] - ended).toFixed(1)} ms after the end, before the 30 ms delay`);
});

test('ids are valid W3C ids and do not repeat', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 5000; i++) {
    const s = ids.spanId();
    const t = ids.traceId();
    assert.match(s, /^[0-9a-f]{16}$/);
    assert.match(t, /^[0-9a-f]{32}$/);
    assert.notEqual(s, '0'.repeat(16));
    seen.add(s);
  }
  assert.equal(seen.size, 5000);
});

test('batch limits come from the OTEL_BSP_* variables, the SDK defaults otherwise', () => {
  assert.deepEqual(batchOptions({}), { maxQueue: 2048, maxBatch: 512, delayMs: 5000 });
  assert.deepEqual(batchOptions({ OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '500', OTEL_BSP_SCHEDULE_DELAY: '20' }), { maxQueue: 100, maxBatch: 100, delayMs: 20 });
  assert.deepEqual(batchOptions({ OTEL_BSP_MAX_QUEUE_SIZE: 'x', OTEL_BSP_SCHEDULE_DELAY: '-1' }), { maxQueue: 2048, maxBatch: 512, delayMs: 5000 });
});
