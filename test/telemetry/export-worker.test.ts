// The server's span batches are exported from a worker thread (src/telemetry/worker-exporter.ts):
// every span of many batches reaches the collector once; a worker that cannot start fails its
// exports with the reason instead of holding them; and the server's own thread, whose websocket
// code is optimized by then, is not deoptimized by an export (the HTTP exchange in that thread
// threw away Buffer, stream, timer and emitter code; an ArrayBuffer transferred to the worker
// threw away every function that reads a typed array).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { telemetryConfig } from '../../src/telemetry/config';
import { startServerTelemetry } from '../../src/telemetry/load';
import { workerBatchExporter } from '../../src/telemetry/worker-exporter';
import { startCli, stopAll } from '../support/cli-servers';
import { cleanEnv, ensureBuilt, handshake, rawClient, startReceiver } from '../support/telemetry';

before(() => ensureBuilt());
after(() => stopAll());

test('3 000 request spans in six batches reach the collector from the export worker, each once', { timeout: 60_000 }, async () => {
  const rx = await startReceiver();
  try {
    const tel = await startServerTelemetry(telemetryConfig(cleanEnv({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_METRICS_EXPORTER: 'none' })));
    for (let i = 0; i < 3000; i++) tel.request('fs/getMetadata', i, undefined).end();
    await tel.shutdown();
    const ids = rx.spans().map((s) => Number(s.attributes['rpc.jsonrpc.request_id']));
    assert.equal(ids.length, 3000, 'spans received');
    assert.deepEqual([...new Set(ids)].sort((a, b) => a - b), Array.from({ length: 3000 }, (_, i) => i), 'every request id once');
    assert.ok(rx.requests.length >= 6, `export requests: ${rx.requests.length}`);
  } finally {
    await rx.close();
  }
});

test('a worker that cannot start its exporter fails every export with the reason, and shuts down', { timeout: 30_000 }, async () => {
  const logs: string[] = [];
  const exporter = workerBatchExporter({ protocol: 'http/protobuf', endpoint: 'not a url', serviceName: 'x', diagnostics: false }, (level, m) => logs.push(`${level} ${m}`));
  const first = await new Promise<{ code: number; error?: Error }>((resolve) => exporter.export(new Uint8Array(10), 1, resolve));
  assert.equal(first.code, 1);
  assert.match(first.error?.message ?? '', /span export worker (failed|exited)/);
  const later = await new Promise<{ code: number; error?: Error }>((resolve) => exporter.export(new Uint8Array(10), 1, resolve));
  assert.equal(later.code, 1, 'a later export fails at once');
  await exporter.shutdown();
  assert.ok(logs.some((l) => l.startsWith('warn traces: the span export worker failed')), logs.join('\n'));
});

/** Node internals the HTTP exchange deoptimized in the server's thread at its first export (--trace-deopt). */
const EXPORT_VICTIMS = ['emit', '_unrefTimer', 'getEncodingOps', 'clearBuffer', 'onStreamRead', 'writeOrBuffer', 'writevGeneric', 'toString', 'subarray', 'allocate'];

test("exports leave the server thread's optimized code alone: no deoptimization of its socket, Buffer or emitter code, no code thrown away by dependency", { timeout: 120_000 }, async () => {
  const rx = await startReceiver();
  try {
    const cli = await startCli(['--listen', 'ws://127.0.0.1:0'], {
      nodeArgs: ['--trace-deopt'],
      env: cleanEnv({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_BSP_SCHEDULE_DELAY: '2000' }),
    });
    const c = await rawClient(cli.url);
    await handshake(c);
    const traceId = randomBytes(16).toString('hex');
    const parent = randomBytes(8).toString('hex');
    let id = 0;
    // Parented requests: sampled (flags 01) gives a span, unsampled (00) none.
    const burst = (n: number, sampled: boolean) =>
      Promise.all(
        Array.from({ length: n }, () =>
          c.call({ id: ++id, method: 'fs/getMetadata', params: { path: __dirname }, trace: { traceparent: `00-${traceId}-${parent}-${sampled ? '01' : '00'}` } }),
        ),
      );
    // The first export comes 2 s after its span: by then the server's code is optimized (an
    // export within ~100 ms of the start met unoptimized code, and nothing was deoptimized).
    // No span yet: the server's hot code is optimized for its websocket traffic alone, one
    // request a read (sequential) and many (pipelined).
    for (let w = 0; w < 3; w++) {
      for (let i = 0; i < 1000; i++) await burst(1, false);
      for (let i = 0; i < 5; i++) await burst(2000, false);
    }
    const mark = cli.stdout().length;
    for (let round = 1; round <= 3; round++) {
      await burst(100, true);
      await rx.waitFor((s) => s.length >= round * 100);
      for (let i = 0; i < 300; i++) await burst(1, false);
      await burst(2000, false);
    }
    const after = cli
      .stdout()
      .slice(mark)
      .split('\n')
      .filter((l) => l.includes('bailout (kind') || l.includes('marking dependent code'));
    // Code a full collection drops ("weak objects": the server's idle collector runs in the waits
    // for the exports) is not the export's doing; a dependency broken by the export (a map
    // changed, a protector invalidated) is.
    const victims = after.filter((l) => (l.includes('marking dependent code') && l.includes('reason: code dependencies')) || EXPORT_VICTIMS.some((f) => l.includes(`<JSFunction ${f} `)));
    assert.deepEqual(victims, [], `deoptimizations after the first export:\n${after.join('\n')}`);
    assert.equal(rx.spans().filter((s) => s.name === 'fs/getMetadata').length, 300);
    c.close();
  } finally {
    await stopAll();
    await rx.close();
  }
});
