// Per-method statistics without a collector (the extension's "Show Request Statistics"):
// counts, errors and percentiles within the histogram's resolution, bounded by method.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectInProcess } from '../../src/client/connect';
import { ExecServer } from '../../src/server/exec-server';
import { combineClientTelemetry } from '../../src/telemetry/api';
import { RequestStats, formatStats } from '../../src/telemetry/request-stats';

test('percentiles of known latencies are within 10 %', () => {
  const s = new RequestStats();
  for (let i = 1; i <= 1000; i++) s.record('fs/readFile', i / 10, i % 100 === 0); // 0.1 .. 100 ms
  s.record('weird/unknown', 5, false);
  const [read, other] = s.snapshot();
  assert.equal(read.method, 'fs/readFile');
  assert.equal(read.count, 1000);
  assert.equal(read.errors, 10);
  const near = (actual: number, expected: number) => assert.ok(Math.abs(actual - expected) / expected <= 0.1, `${actual} ≈ ${expected}`);
  near(read.p50Ms, 50);
  near(read.p90Ms, 90);
  near(read.p99Ms, 99);
  near(read.meanMs, 50.05);
  assert.equal(read.maxMs, 100);
  assert.equal(other.method, 'other');
  const text = formatStats('Local', s.snapshot());
  assert.match(text, /fs\/readFile\s+1000\s+10\s/);
  s.reset();
  assert.deepEqual(s.snapshot(), []);
  assert.match(formatStats('Local', []), /no requests yet/);
});

test('as client telemetry: every request of a real client is counted, errors too', async () => {
  const server = new ExecServer();
  const a = new RequestStats();
  const b = new RequestStats();
  const client = await connectInProcess(server, { telemetry: combineClientTelemetry(a, b) });
  for (let i = 0; i < 5; i++) await client.request('environment/status', null);
  await assert.rejects(client.fs.stat('/definitely/not/here'));
  await client.close();
  await server.shutdown();
  for (const s of [a, b]) {
    const rows = Object.fromEntries(s.snapshot().map((r) => [r.method, r]));
    assert.equal(rows.initialize.count, 1);
    assert.equal(rows['environment/status'].count, 5);
    assert.equal(rows['environment/status'].errors, 0);
    assert.equal(rows['fs/getMetadata'].count, 1);
    assert.equal(rows['fs/getMetadata'].errors, 1);
  }
});
