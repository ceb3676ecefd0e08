// The per-request meter's numbers as a reader collects them: each series keeps its own count,
// sum, min, max and buckets (one contiguous block per series), and a request lands in the first
// bucket whose bound it does not exceed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { DURATION_BUCKETS, RequestMeter } from '../../src/telemetry/request-meter';

test('RequestMeter: two series of one method and one of another keep their numbers apart; buckets, sum, min, max as recorded', async () => {
  const m = new RequestMeter(resourceFromAttributes({ 'service.name': 't' }));
  const ok = m.series('fs/getMetadata', false);
  const failed = m.series('fs/getMetadata', true);
  const other = m.series('no/such-method', false);
  assert.equal(failed, ok + 1);
  for (const s of [0.00005, 0.0001, 0.0003, 2, 40]) m.record(ok, s);
  m.record(failed, 0.002);
  m.record(other, 0.01);
  m.addOutput(10);
  const { resourceMetrics } = await m.collect();
  const [requests, duration, output] = resourceMetrics.scopeMetrics[0].metrics;
  const byKey = (points: any[]) => Object.fromEntries(points.map((p) => [`${p.attributes.method}/${p.attributes.outcome}`, p.value]));
  assert.deepEqual(byKey(requests.dataPoints), { 'fs/getMetadata/ok': 5, 'fs/getMetadata/error': 1, 'other/ok': 1 });
  const d = byKey(duration.dataPoints);
  const okH = d['fs/getMetadata/ok'];
  assert.equal(okH.count, 5);
  assert.ok(Math.abs(okH.sum - 42.00045) < 1e-9, String(okH.sum));
  assert.equal(okH.min, 0.00005);
  assert.equal(okH.max, 40);
  assert.deepEqual(okH.buckets.boundaries, DURATION_BUCKETS);
  const counts = new Array(DURATION_BUCKETS.length + 1).fill(0);
  counts[0] = 2; // 50 µs and exactly 100 µs (le 0.0001)
  counts[2] = 1; // 300 µs (le 0.0005)
  counts[DURATION_BUCKETS.indexOf(2.5)] = 1;
  counts[DURATION_BUCKETS.length] = 1; // 40 s: above the last bound
  assert.deepEqual(okH.buckets.counts, counts);
  assert.equal(d['fs/getMetadata/error'].count, 1);
  assert.equal(d['fs/getMetadata/error'].min, 0.002);
  assert.equal(d['other/ok'].max, 0.01);
  assert.equal(output.dataPoints[0].value, 10);
});
