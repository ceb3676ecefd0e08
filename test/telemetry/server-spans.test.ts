// The server's span records and their batcher: what a span's bytes say once decoded (ids, times
// on the epoch's scale, the rpc.* attributes, status, parent, flags), that ended spans are
// handed to the exporter in batches as each fills, with the queue bounded,
// every span not dropped exported exactly once, a batch's bytes left alone until its export is
// done, and everything flushed on shutdown.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { KIND_INTERNAL, KIND_SERVER, STATUS_ERROR, ServerSpan, SpanBatcher, batchOptions, type BatchExporter } from '../../src/telemetry/server-spans';
import { decodeProtobufTraces, type ReceivedSpan } from '../support/telemetry';
import { waitFor } from '../support/wait';

/**
 * Takes each batch's bytes when its export is done (when the batcher may reuse the buffer), so a
 * buffer written to while its export ran would decode wrong.
 */
class MemoryExporter implements BatchExporter {
  /** The bytes of each finished export, in order. */
  done: Buffer[] = [];
  counts: number[] = [];
  /** performance.now() of each export call. */
  at: number[] = [];
  shut = false;
  /** Finishes exports only when told (release()), as a slow collector would. */
  hold = false;
  private held: (() => void)[] = [];
  export(request: Uint8Array, spans: number, done: (r: { code: number }) => void): void {
    this.counts.push(spans);
    this.at.push(performance.now());
    const finish = () => {
      this.done.push(Buffer.from(request));
      done({ code: 0 });
    };
    if (this.hold) this.held.push(finish);
    else setImmediate(finish);
  }
  release(): void {
    for (const f of this.held.splice(0)) f();
  }
  async shutdown(): Promise<void> {
    this.shut = true;
  }
  batches(): ReceivedSpan[][] {
    return this.done.map((r) => decodeProtobufTraces(r));
  }
  spans(): ReceivedSpan[] {
    return this.batches().flat();
  }
}

const origin = { resource: { 'service.name': 'under-test' }, scope: { name: 'exec-server', version: '1' } };

test('a request span decodes as the span the SDK would export: ids, epoch times, rpc attributes, error, flags', async () => {
  const ex = new MemoryExporter();
  const b = new SpanBatcher(ex, origin, { maxQueue: 100, maxBatch: 10, delayMs: 10 });
  const before = BigInt(Date.now()) * 1_000_000n;
  const s = new ServerSpan(b, 'fs/getMetadata', KIND_SERVER, 'fs/getMetadata', 7, undefined);
  // A span that lasts a while: over real I/O, timed from outside to bound its length from below.
  const t0 = performance.now();
  await readFile(__filename);
  await new Promise<void>((res) => setImmediate(res));
  const lasted = BigInt(Math.floor((performance.now() - t0) * 1e6));
  s.fail(-32004, 'not found');
  s.end();
  s.end(); // a second end is ignored
  const after = BigInt(Date.now()) * 1_000_000n;
  await b.forceFlush();
  assert.deepEqual(ex.counts, [1]);
  const [d] = ex.spans();
  assert.match(d.traceId, /^[0-9a-f]{32}$/);
  assert.match(d.spanId, /^[0-9a-f]{16}$/);
  assert.equal(d.traceId, s.traceId);
  assert.equal(d.spanId, s.spanId);
  assert.equal(d.parentSpanId, '');
  assert.equal(d.kind, 2, 'SERVER');
  assert.equal(d.name, 'fs/getMetadata');
  assert.deepEqual(d.attributes, {
    'rpc.system': 'jsonrpc',
    'rpc.method': 'fs/getMetadata',
    'rpc.jsonrpc.request_id': '7',
    'rpc.jsonrpc.error_code': -32004,
    'rpc.jsonrpc.error_message': 'not found',
  });
  assert.equal(d.statusCode, STATUS_ERROR);
  assert.equal(d.flags, 0x101, 'sampled, parent not remote');
  assert.equal(d.serviceName, 'under-test');
  assert.ok(d.startNs >= before - 2_000_000n && d.endNs <= after + 2_000_000n, `${d.startNs}..${d.endNs} within ${before}..${after}`);
  assert.ok(lasted > 0n && d.endNs - d.startNs >= lasted - 2_000n, `start to end (${d.endNs - d.startNs} ns) covers the ${lasted} ns between them`);
});

test('request ids of every kind are written as String() writes them; long methods and ids are cut to 128 characters', async () => {
  const ex = new MemoryExporter();
  const b = new SpanBatcher(ex, origin, { maxQueue: 100, maxBatch: 50, delayMs: 10 });
  const idsSent: (number | string | undefined)[] = [0, 9, 10, 99, 12345678901234, Number.MAX_SAFE_INTEGER, -1, 1.5, 1e21, 'req-8', '', 'i'.repeat(500), 'ünï', undefined];
  for (const id of idsSent) new ServerSpan(b, 'x', KIND_SERVER, 'm'.repeat(500), id, undefined).end();
  await b.forceFlush();
  const got = ex.spans();
  assert.equal(got.length, idsSent.length);
  got.forEach((d, i) => {
    const id = idsSent[i];
    assert.equal(d.attributes['rpc.jsonrpc.request_id'], id === undefined ? undefined : String(id).slice(0, 128), `id ${String(id)}`);
    assert.equal(d.attributes['rpc.method'], 'm'.repeat(128));
  });
});

test('a process span is a child of its request: same trace, the request as parent, its own id and attributes', async () => {
  const ex = new MemoryExporter();
  const b = new SpanBatcher(ex, origin, { maxQueue: 100, maxBatch: 10, delayMs: 10 });
  const parent = new ServerSpan(b, 'process/start', KIND_SERVER, 'process/start', 'start-1', { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), sampled: true, traceState: 'vendor=1' });
  const child = new ServerSpan(b, 'process', KIND_INTERNAL, undefined, undefined, parent);
  child.setAttribute('exec_server.sandbox_type', 'none');
  child.setAttribute('process.exit.code', 3);
  child.setAttribute('exec_server.sandbox_denied', false);
  child.setStatus(STATUS_ERROR, 'exit code 3');
  parent.end();
  child.end();
  await b.forceFlush();
  const [p, c] = ex.spans();
  assert.equal(p.traceId, 'ab'.repeat(16));
  assert.equal(p.parentSpanId, 'cd'.repeat(8));
  assert.equal(p.flags, 0x301, 'remote parent');
  assert.equal(p.traceState, 'vendor=1');
  assert.equal(c.traceId, p.traceId);
  assert.equal(c.parentSpanId, p.spanId);
  assert.notEqual(c.spanId, p.spanId);
  assert.equal(c.flags, 0x101, 'local parent');
  assert.equal(c.traceState, 'vendor=1');
  assert.equal(c.kind, 1, 'INTERNAL');
  assert.deepEqual(c.attributeKeys, ['exec_server.sandbox_type', 'process.exit.code', 'exec_server.sandbox_denied']);
  assert.deepEqual(c.attributes, { 'exec_server.sandbox_type': 'none', 'process.exit.code': 3, 'exec_server.sandbox_denied': false });
  assert.equal(c.statusCode, STATUS_ERROR);
});

test('ended spans are exported in batches, each handed over when it fills, bounded by the queue, each exactly once, all flushed on shutdown', async () => {
  const ex = new MemoryExporter();
  const b = new SpanBatcher(ex, origin, { maxQueue: 25, maxBatch: 10, delayMs: 60_000 });
  const made: ServerSpan[] = [];
  for (let i = 0; i < 110; i++) {
    const s = new ServerSpan(b, 'x', KIND_SERVER, 'x', i, undefined);
    made.push(s);
    s.end();
    // Handed over in the end() that filled it (as the SDK's BatchSpanProcessor does), not after
    // the turn: a burst answered in one synchronous run would fill the queue first.
    if (i === 9) assert.deepEqual(ex.counts, [10], 'a full batch handed to the exporter as it fills');
  }
  // Eight exports under way (none answered within this turn), then the queue's 25, then dropped.
  assert.deepEqual(ex.counts, Array(8).fill(10));
  assert.equal(b.dropped, 5, 'the queue holds 25 not yet handed over');
  await b.shutdown();
  assert.deepEqual(ex.counts, [...Array(10).fill(10), 5]);
  assert.ok(ex.shut);
  // The first 105 spans, in order, once each; the 5 beyond the queue are the dropped ones.
  assert.deepEqual(
    ex.spans().map((s) => s.spanId),
    made.slice(0, 105).map((s) => s.spanId),
  );
  assert.deepEqual(
    ex.spans().map((s) => s.attributes['rpc.jsonrpc.request_id']),
    Array.from({ length: 105 }, (_, i) => String(i)),
  );
  new ServerSpan(b, 'late', KIND_SERVER, 'x', 1, undefined).end();
  await b.forceFlush();
  assert.equal(ex.spans().length, 105, 'nothing queued after shutdown');
});

test('a batch being exported keeps its bytes while later spans are written; its buffer is reused only after', async () => {
  const ex = new MemoryExporter();
  ex.hold = true;
  const b = new SpanBatcher(ex, origin, { maxQueue: 10_000, maxBatch: 100, delayMs: 60_000 });
  const expected: string[][] = [];
  for (let round = 0; round < 8; round++) {
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      const s = new ServerSpan(b, 'fs/getMetadata', KIND_SERVER, 'fs/getMetadata', `${round}-${i}`, undefined);
      ids.push(s.spanId);
      s.end();
    }
    expected.push(ids);
    await new Promise((r) => setImmediate(r));
    // Every other round the export in flight finishes: batches wait, buffers are reused.
    if (round % 2 === 1) {
      ex.release();
      await new Promise((r) => setImmediate(r));
    }
  }
  ex.hold = false;
  ex.release();
  await b.shutdown();
  assert.deepEqual(ex.counts, Array(8).fill(100));
  assert.deepEqual(
    ex.batches().map((batch) => batch.map((s) => s.spanId)),
    expected,
  );
  assert.deepEqual(
    ex.spans().map((s) => s.attributes['rpc.jsonrpc.request_id']),
    expected.flatMap((ids, r) => ids.map((_, i) => `${r}-${i}`)),
  );
});

test('the first span is exported at once; a later partial batch after the schedule delay', async () => {
  const ex = new MemoryExporter();
  const b = new SpanBatcher(ex, origin, { maxQueue: 100, maxBatch: 10, delayMs: 1000 });
  const first = performance.now();
  new ServerSpan(b, 'x', KIND_SERVER, 'x', 1, undefined).end();
  await waitFor(() => ex.counts.length > 0, { what: 'the first span', timeout: 5_000 });
  assert.ok(ex.at[0] - first < 1000, `the first span waited ${(ex.at[0] - first).toFixed(1)} ms, the schedule delay`);
  const ended = performance.now();
  new ServerSpan(b, 'x', KIND_SERVER, 'x', 2, undefined).end();
  await waitFor(() => ex.counts.length > 1, { what: 'the partial batch', timeout: 5_000 });
  assert.deepEqual(ex.counts, [1, 1]);
  // Not before the delay (timers never fire early; 1 ms of rounding).
  assert.ok(ex.at[1] - ended >= 999, `exported ${(ex.at[1] - ended).toFixed(1)} ms after the end, before the 1 000 ms delay`);
});

test('ids are valid W3C ids and do not repeat, across pool refills', () => {
  const b = new SpanBatcher(new MemoryExporter(), origin);
  const seen = new Set<string>();
  const traces = new Set<string>();
  for (let i = 0; i < 5000; i++) {
    const s = new ServerSpan(b, 'x', KIND_SERVER, 'x', i, undefined);
    assert.match(s.spanId, /^[0-9a-f]{16}$/);
    assert.match(s.traceId, /^[0-9a-f]{32}$/);
    assert.notEqual(s.spanId, '0'.repeat(16));
    seen.add(s.spanId);
    traces.add(s.traceId);
  }
  assert.equal(seen.size, 5000);
  assert.equal(traces.size, 5000);
});

test('batch limits come from the OTEL_BSP_* variables, the SDK defaults otherwise', () => {
  assert.deepEqual(batchOptions({}), { maxQueue: 2048, maxBatch: 512, delayMs: 5000 });
  assert.deepEqual(batchOptions({ OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '500', OTEL_BSP_SCHEDULE_DELAY: '20' }), { maxQueue: 100, maxBatch: 100, delayMs: 20 });
  assert.deepEqual(batchOptions({ OTEL_BSP_MAX_QUEUE_SIZE: 'x', OTEL_BSP_SCHEDULE_DELAY: '-1' }), { maxQueue: 2048, maxBatch: 512, delayMs: 5000 });
});

test('a full batch goes out while earlier exports wait for their answers (up to 8 at once), so a burst is not dropped behind one slow export', async () => {
  const ex = new MemoryExporter();
  ex.hold = true;
  const b = new SpanBatcher(ex, origin, { maxQueue: 25, maxBatch: 10, delayMs: 60_000 });
  const end = (n: number) => {
    for (let i = 0; i < n; i++) new ServerSpan(b, 'x', KIND_SERVER, 'x', i, undefined).end();
  };
  const turn = () => new Promise((r) => setImmediate(r));
  end(10);
  await turn();
  end(10);
  await turn();
  assert.deepEqual(ex.counts, [10, 10], 'the second batch did not wait for the first export');
  // 25 more: the queue holds 25 not yet handed to the exporter, so none is dropped.
  end(25);
  assert.equal(b.dropped, 0);
  await turn();
  await turn();
  assert.deepEqual(ex.counts, [10, 10, 10, 10]);
  ex.hold = false;
  ex.release();
  await b.shutdown();
  assert.deepEqual(ex.counts, [10, 10, 10, 10, 5]);
  assert.equal(ex.spans().length, 45);
  assert.equal(new Set(ex.spans().map((s) => s.spanId)).size, 45, 'each span once');

  // The bound: eight exports at once; the ninth batch waits for one of them.
  const ex2 = new MemoryExporter();
  ex2.hold = true;
  const b2 = new SpanBatcher(ex2, origin, { maxQueue: 1000, maxBatch: 10, delayMs: 60_000 });
  for (let i = 0; i < 100; i++) new ServerSpan(b2, 'x', KIND_SERVER, 'x', i, undefined).end();
  for (let i = 0; i < 12; i++) await turn();
  assert.equal(ex2.counts.length, 8, 'at most eight exports at once');
  ex2.hold = false;
  ex2.release();
  await b2.shutdown();
  assert.equal(ex2.counts.length, 10);
  assert.deepEqual(
    ex2.spans().map((s) => s.attributes['rpc.jsonrpc.request_id']),
    Array.from({ length: 100 }, (_, i) => String(i)),
  );
});
