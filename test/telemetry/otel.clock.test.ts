// The hooks' clock: a request's start and end readings go straight to perf_hooks' `performance`.
// Node's global `performance` is a lazy accessor on globalThis whose getter ran on every reading
// (V8's global load handler and the getter were the largest single item in a perf profile of a
// 1 % server against an "off" one: docs/performance.md, "Four more measurements").
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { telemetryConfig } from '../../src/telemetry/config';
import { startServerTelemetry } from '../../src/telemetry/otel';
import { startReceiver } from '../support/telemetry';

test('traced and untraced requests, and a process, never read the global `performance`', async (t) => {
  const rx = await startReceiver();
  const flags = { otlpEndpoint: rx.url, otlpProtocol: 'http/protobuf' as const, prometheus: '127.0.0.1:0' };
  const all = await startServerTelemetry(telemetryConfig({}, { ...flags, sampler: 'parentbased_always_on' }));
  const some = await startServerTelemetry(telemetryConfig({}, { ...flags, sampler: 'parentbased_traceidratio', samplerArg: '0.01' }));
  t.after(async () => {
    // The exports first (a closed receiver would have them retried for seconds).
    await all.shutdown();
    await some.shutdown();
    await rx.close();
  });
  const original = Object.getOwnPropertyDescriptor(globalThis, 'performance')!;
  let reads = 0;
  const real = globalThis.performance;
  Object.defineProperty(globalThis, 'performance', {
    configurable: true,
    enumerable: original.enumerable,
    get() {
      reads++;
      return real;
    },
  });
  try {
    for (let i = 0; i < 500; i++) {
      for (const tel of [all, some]) {
        const r = tel.request('fs/getMetadata', i, undefined);
        if (i % 100 === 0) {
          const p = tel.process(r);
          p.started('none');
          p.exited(0, false);
        }
        r.end(i % 7 === 0 ? { code: -32004, message: 'not found' } : undefined);
      }
    }
  } finally {
    Object.defineProperty(globalThis, 'performance', original);
  }
  assert.equal(reads, 0, 'reads of the global performance by 1 000 requests and 10 processes');
});
