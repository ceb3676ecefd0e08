// The benchmark's pure parts: percentiles, goal verdicts (incl. a stalled reference), the
// fixture pattern and the SVG chart. The timed runs themselves are `npm run bench`, not tests.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { patternBuffer, sha256 } from '../../bench/fixtures';
import { judge, outcome, tableRows, type BenchResult } from '../../bench/report';
import { FULL, type MetricDef } from '../../bench/scenarios';
import { percentile } from '../../bench/stats';
import { renderSvg } from '../../bench/svg';

const rttDef: MetricDef = { id: 'rtt_p50', label: 'RTT p50', unit: 'µs', better: 'lower', source: 'rtt', reduce: 'p50', minSpeedup: 1.25, inProcessMax: 20 };
const rpsDef: MetricDef = { id: 'p', label: 'pipelined', unit: 'req/s', better: 'higher', source: 'rps', reduce: 'median', minSpeedup: 1 };

test('percentile uses nearest rank and ignores input order', () => {
  const xs = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
  assert.equal(percentile(xs, 50), 5);
  assert.equal(percentile(xs, 99), 10);
  assert.equal(percentile(xs, 10), 1);
  assert.ok(Number.isNaN(percentile([], 50)));
});

test('judge: lower-is-better speedup, goal met and missed', () => {
  const ours = outcome([100, 100, 100], rttDef);
  const ref = outcome([150, 150, 150], rttDef);
  const inProc = outcome([10, 12], rttDef);
  const met = judge(rttDef, ours, ref, inProc);
  assert.equal(met.ratio!.toFixed(3), (100 / 150).toFixed(3));
  assert.equal(met.speedup!.toFixed(2), '1.50');
  assert.equal(met.goal!.met, true);
  const slowInProc = judge(rttDef, ours, ref, outcome([25], rttDef));
  assert.equal(slowInProc.goal!.met, false, 'in-process above 20 µs misses the goal');
  const slow = judge(rttDef, outcome([140], rttDef), ref, inProc);
  assert.equal(slow.goal!.met, false, '150/140 < 1.25');
});

test('judge: a stalled reference is beaten by a completed run, a stalled ours never meets the goal', () => {
  const stalled = outcome([], rpsDef, { status: 'stalled', detail: '254 of 10000 answered' });
  const ok = outcome([9000], rpsDef);
  const na = outcome([], rpsDef);
  const r1 = judge(rpsDef, ok, stalled, na);
  assert.equal(r1.speedup, null);
  assert.equal(r1.goal!.met, true);
  const r2 = judge(rpsDef, stalled, ok, na);
  assert.equal(r2.goal!.met, false);
  const rows = tableRows(fakeResult([r1, r2]));
  assert.equal(rows[1][2], 'stalled');
  assert.equal(rows[2][1], 'stalled');
  assert.equal(rows[2][7], 'NO');
});

test('fixture pattern is 251-periodic and the checksum covers chunk boundaries', () => {
  const b = patternBuffer(10_000);
  for (const i of [0, 250, 251, 252, 5000, 9999]) assert.equal(b[i], i % 251);
  assert.equal(sha256([b.subarray(0, 3000), b.subarray(3000)]), sha256([b]));
  const lost = Buffer.concat([b.subarray(0, 3000), b.subarray(3001)]);
  assert.notEqual(sha256([lost]), sha256([b]));
});

test('svg: well-formed document with one row per headline metric and escaped text', () => {
  const rtt = judge(rttDef, outcome([100], rttDef), outcome([150], rttDef), outcome([10], rttDef));
  const rps = judge({ ...rpsDef, label: 'pipelined <&>' }, outcome([9000], rpsDef), outcome([], rpsDef, { status: 'stalled', detail: 'x' }), outcome([], rpsDef));
  const svg = renderSvg(fakeResult([rtt, rps]));
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert.match(svg, /<\/svg>\n$/);
  assert.ok(svg.includes('pipelined &lt;&amp;&gt;'));
  assert.ok(svg.includes('1.50×'), 'RTT speedup label');
  assert.ok(svg.includes('reference stalled'));
  // every opened element is closed or self-closed
  const opened = (svg.match(/<(?!\/)[a-z]+[^>]*[^/]>/g) ?? []).length;
  const closed = (svg.match(/<\/[a-z]+>/g) ?? []).length;
  assert.equal(opened, closed);
});

function fakeResult(metrics: BenchResult['metrics']): BenchResult {
  return {
    date: '2026-01-01T00:00:00.000Z',
    machine: { nproc: 2, cpu: 'cpu', node: 'v20', platform: 'linux' },
    command: 'npm run bench',
    config: FULL,
    clients: { websocket: 'ExecServerClient', inProcess: 'ExecServerClient' },
    durationSeconds: 1,
    metrics,
  };
}
