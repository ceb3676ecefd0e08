// The start times of requests in flight, kept in slots of one Float64Array: every request reads
// back its own start however many are in flight (past the first 256 slots, whose growth copies
// them), and a slot is reused only once released. Through the server hooks: a request that
// stays open while hundreds of others start and end is timed from its own start.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { telemetryConfig } from '../../src/telemetry/config';
import { startServerTelemetry } from '../../src/telemetry/otel';
import { StartTimes } from '../../src/telemetry/start-times';
import { sample } from '../support/telemetry';

test('StartTimes: 1 000 requests in flight each read back their own start, released in any order; slots are reused after release', () => {
  const s = new StartTimes();
  const slots: number[] = [];
  for (let i = 0; i < 1000; i++) slots.push(s.take(1000 + i + 0.25));
  assert.equal(new Set(slots).size, 1000, 'no slot handed out twice while taken');
  assert.equal(s.taken, 1000);
  // Release every third first, then the rest backwards.
  const order = [...slots.keys()].filter((i) => i % 3 === 0).concat([...slots.keys()].filter((i) => i % 3 !== 0).reverse());
  for (const i of order) assert.equal(s.release(slots[i]), 1000 + i + 0.25, `request ${i}`);
  assert.equal(s.taken, 0);
  // Free slots are reused before any growth: 1 000 more take exactly the same slots.
  const again = new Set<number>();
  for (let i = 0; i < 1000; i++) again.add(s.take(i));
  assert.deepEqual([...again].sort((a, b) => a - b), [...slots].sort((a, b) => a - b));
});

test('a request open while 600 others start and end is timed from its own start (metric histogram)', async (t) => {
  const tel = await startServerTelemetry(telemetryConfig({}, { prometheus: '127.0.0.1:0' }));
  t.after(() => tel.shutdown());
  const slow = tel.request('fs/readFile', 1, undefined);
  // 60 ms pass on the clock the hooks read (spun, not slept: nothing else needs to run meanwhile).
  const until = performance.now() + 60;
  while (performance.now() < until);
  const quick = Array.from({ length: 600 }, (_, i) => tel.request('fs/getMetadata', i + 2, undefined));
  for (const r of quick.reverse()) r.end();
  slow.end();
  const text = await (await fetch(tel.metricsUrl!)).text();
  const value = (series: string) => {
    const v = sample(text, series);
    assert.ok(v !== undefined, `${series} in\n${text}`);
    return v;
  };
  // fs/readFile: one request of at least 60 ms; the 600 quick ones all well under 50 ms.
  assert.equal(value('exec_server_request_duration_seconds_count{method="fs/readFile",outcome="ok"}'), 1);
  assert.equal(value('exec_server_request_duration_seconds_bucket{method="fs/readFile",outcome="ok",le="0.05"}'), 0);
  assert.ok(value('exec_server_request_duration_seconds_sum{method="fs/readFile",outcome="ok"}') >= 0.055);
  assert.equal(value('exec_server_request_duration_seconds_count{method="fs/getMetadata",outcome="ok"}'), 600);
  assert.equal(value('exec_server_request_duration_seconds_bucket{method="fs/getMetadata",outcome="ok",le="0.05"}'), 600);
});
