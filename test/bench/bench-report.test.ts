// The benchmark's pure parts: percentiles, goal verdicts (incl. a stalled reference), the
// fixture pattern and the SVG chart. The timed runs themselves are `npm run bench`, not tests.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { patternBuffer, sha256 } from '../../bench/fixtures';
import { judge, outcome, tableRows, type BenchResult } from '../../bench/report';
import { FULL, PatternChecker, STREAM_LINE, type MetricDef } from '../../bench/scenarios';
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

test('stream checker accepts the pattern in any chunking and flags a changed or dropped byte', () => {
  const total = 5 * 1024 * 1024 + 17; // crosses the 4 MiB comparison window
  const good = Buffer.alloc(total, `${STREAM_LINE}\n`);
  const cut = (b: Buffer, sizes: number[]) => {
    const c = new PatternChecker();
    for (let o = 0, i = 0; o < b.length; i++) {
      const n = sizes[i % sizes.length];
      c.check(b.subarray(o, o + n));
      o += n;
    }
    return c;
  };
  const ok = cut(good, [1, 7, 65536, 4 * 1024 * 1024 + 3, 8191]);
  assert.equal(ok.bytes, total);
  assert.equal(ok.mismatchAt, -1);
  const changed = Buffer.from(good);
  changed[3_000_000] ^= 1;
  assert.equal(cut(changed, [65536]).mismatchAt, 3_000_000 - (3_000_000 % 65536));
  const dropped = Buffer.concat([good.subarray(0, 100_000), good.subarray(100_001)]);
  const d = cut(dropped, [4096]);
  assert.equal(d.bytes, total - 1);
  assert.ok(d.mismatchAt >= 0 && d.mismatchAt <= 100_000);
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
