// Server spans through the built CLI and a real OTLP/HTTP receiver, for both encodings
// (http/json and http/protobuf): a request's `trace` member parents its span (trace id and
// parent span id kept), the span is named after the method with the RPC attributes, errors
// carry their code, a malformed `trace` is ignored (a new root, the request still answered),
// and a process span runs from process/start to the exit with its exit code and sandbox type.
// Spans are flushed on the CLI's clean shutdown (SIGTERM).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { startCli, stopAll } from '../support/cli-servers';
import { cleanEnv, ensureBuilt, handshake, rawClient, startReceiver, type ReceivedSpan } from '../support/telemetry';
import { waitFor } from '../support/wait';

const dir = mkdtempSync(path.join(os.tmpdir(), 'telemetry-spans-'));
before(() => ensureBuilt());
after(async () => {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

const byRequestId = (spans: ReceivedSpan[], id: string) => {
  const s = spans.find((x) => x.attributes['rpc.jsonrpc.request_id'] === id);
  assert.ok(s, `a span for request ${id} in ${JSON.stringify(spans.map((x) => [x.name, x.attributes['rpc.jsonrpc.request_id']]))}`);
  return s;
};

for (const protocol of ['http/json', 'http/protobuf'] as const) {
  test(`server spans exported over OTLP ${protocol}: parented by the wire trace context, named after the method`, async () => {
    const rx = await startReceiver();
    const t0 = BigInt(Date.now()) * 1_000_000n;
    try {
      const cli = await startCli(['--listen', 'ws://127.0.0.1:0'], {
        env: cleanEnv({
          OTEL_TRACES_EXPORTER: 'otlp',
          OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
          OTEL_SERVICE_NAME: 'exec-server-under-test',
        }),
      });
      const c = await rawClient(cli.url);
      await handshake(c);
      const traceId = randomBytes(16).toString('hex');
      const parent = randomBytes(8).toString('hex');
      const traceparent = `00-${traceId}-${parent}-01`;

      const ok = await c.call({ id: 7, method: 'fs/getMetadata', params: { path: dir }, trace: { traceparent, tracestate: 'vendor=1' } });
      assert.equal((ok.result as { isDirectory: boolean }).isDirectory, true);
      const missing = await c.call({ id: 'req-8', method: 'fs/getMetadata', params: { path: path.join(dir, 'missing') }, trace: { traceparent } });
      assert.equal(missing.error?.code, -32004);
      const unknown = await c.call({ id: 9, method: 'no/suchMethod', params: {}, trace: { traceparent } });
      assert.equal(unknown.error?.code, -32601);

      // Malformed trace members: ignored, never an error.
      const malformed: unknown[] = [
        { traceparent: 'garbage' },
        { traceparent: `00-${'0'.repeat(32)}-${parent}-01` }, // all-zero trace id is invalid
        { traceparent: `00-${traceId}-${parent}` }, // no flags
        { traceparent: 42 },
        'a string',
        [traceparent],
        null,
        { traceparent: `00-${traceId}-${parent}-01`.repeat(100) },
      ];
      for (let i = 0; i < malformed.length; i++) {
        const r = await c.call({ id: `bad-${i}`, method: 'environment/status', params: {}, trace: malformed[i] });
        assert.deepEqual(r.result, { status: 'ready' }, `malformed trace #${i} answered normally`);
      }
      const none = await c.call({ id: 'no-trace', method: 'environment/status', params: {} });
      assert.deepEqual(none.result, { status: 'ready' });

      // A process: its span runs from process/start to the exit.
      const start = await c.call({
        id: 'start-1',
        method: 'process/start',
        params: { processId: 'proc-secret-id', argv: ['sh', '-c', 'echo out; exit 3'], cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, tty: false },
        trace: { traceparent },
      });
      assert.equal((start.result as { processId: string }).processId, 'proc-secret-id');
      await waitFor(() => c.notifications.some((n) => n.method === 'process/exited'), { what: 'process/exited', timeout: 10_000 });
      c.close();
      await cli.stop(); // SIGTERM: clean shutdown flushes the spans
      assert.equal(cli.child.exitCode, 0, cli.stderr());

      const spans = await rx.waitFor((s) => s.some((x) => x.name === 'process'), 5_000);
      assert.ok(rx.requests.every((r) => r.path === '/v1/traces'));
      assert.ok(rx.requests.every((r) => r.contentType === (protocol === 'http/json' ? 'application/json' : 'application/x-protobuf')), JSON.stringify(rx.requests.map((r) => r.contentType)));

      const s7 = byRequestId(spans, '7');
      assert.equal(s7.name, 'fs/getMetadata');
      assert.equal(s7.kind, 2, 'SpanKind SERVER');
      assert.equal(s7.traceId, traceId);
      assert.equal(s7.parentSpanId, parent);
      assert.equal(s7.attributes['rpc.system'], 'jsonrpc');
      assert.equal(s7.attributes['rpc.method'], 'fs/getMetadata');
      assert.equal(s7.serviceName, 'exec-server-under-test');
      assert.equal(s7.statusCode, 0);
      assert.equal(s7.traceState, 'vendor=1', 'the parent tracestate is kept');
      // Times: within the test's run (ms clocks), end not before start, both on the epoch's scale.
      const t1 = BigInt(Date.now()) * 1_000_000n;
      for (const s of spans) {
        assert.ok(s.startNs >= t0 - 50_000_000n && s.endNs <= t1 + 50_000_000n, `${s.name} times ${s.startNs}..${s.endNs} within ${t0}..${t1}`);
        assert.ok(s.endNs >= s.startNs, `${s.name} ends after it starts`);
      }
      assert.equal(new Set(spans.map((s) => s.spanId)).size, spans.length, 'span ids are unique');

      const s8 = byRequestId(spans, 'req-8');
      assert.equal(s8.traceId, traceId);
      assert.equal(s8.attributes['rpc.jsonrpc.error_code'], -32004);
      assert.equal(s8.statusCode, 2, 'status ERROR');

      const s9 = byRequestId(spans, '9');
      assert.equal(s9.name, 'other', 'an unknown method does not name a span');
      assert.equal(s9.attributes['rpc.method'], 'no/suchMethod');
      assert.equal(s9.attributes['rpc.jsonrpc.error_code'], -32601);

      for (let i = 0; i < malformed.length; i++) {
        const s = byRequestId(spans, `bad-${i}`);
        assert.notEqual(s.traceId, traceId, `malformed #${i}: a new trace`);
        assert.equal(s.parentSpanId, '', `malformed #${i}: a root span`);
        assert.equal(s.name, 'environment/status');
      }
      assert.equal(byRequestId(spans, 'no-trace').parentSpanId, '');

      const sStart = byRequestId(spans, 'start-1');
      const proc = spans.find((x) => x.name === 'process')!;
      assert.equal(proc.traceId, traceId);
      assert.equal(proc.parentSpanId, sStart.spanId, 'the process span is a child of its process/start span');
      assert.equal(proc.attributes['process.exit.code'], 3);
      assert.equal(proc.attributes['exec_server.sandbox_type'], 'none');
      assert.equal(proc.attributes['exec_server.sandbox_denied'], false);
      assert.equal(proc.statusCode, 2);

      // Bounded, private attributes: no argv, path or process id in any span.
      const all = JSON.stringify(spans, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
      for (const secret of [dir, 'proc-secret-id', 'echo out']) assert.ok(!all.includes(secret), `${secret} not exported`);
    } finally {
      await rx.close();
    }
  });
}
