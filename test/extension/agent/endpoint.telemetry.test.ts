// The VS Code agent endpoint's requests are traced like any server's: a request carrying a W3C
// `trace` member gets a server span parented by it (through the agent gate's wrapper, which
// used to drop the server's telemetry), and an approved process/start parents the process span.
// Plain Node: the endpoint's own in-process engine with OTLP export to a real local receiver.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { telemetryConfig } from '../../../src/telemetry/config';
import { startServerTelemetry } from '../../../src/telemetry/load';
import { AgentEndpoint } from '../../../src/extension/agent/endpoint';
import { handshake, rawClient, startReceiver, type OtlpReceiver } from '../../support/telemetry';
import { waitFor } from '../../support/wait';

let dir: string;
let rx: OtlpReceiver;
before(async () => {
  dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'agent-spans-')));
  rx = await startReceiver();
});
after(async () => {
  await rx.close();
  rmSync(dir, { recursive: true, force: true });
});

test('agent endpoint: a request with a traceparent yields a server span parented by it; a started process is a child span of its process/start', async () => {
  const serverTel = await startServerTelemetry(telemetryConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_SERVICE_NAME: 'agent-endpoint-under-test' }));
  const questions: string[] = [];
  const endpoint = await AgentEndpoint.start({
    port: 0,
    gate: {
      policy: () => 'neverAsk',
      sandboxAll: () => false,
      timeoutMs: () => 5_000,
      workspaceRoots: () => [dir],
      ask: async (q) => {
        questions.push(q.message);
        return 'Deny';
      },
    },
    serverOptions: { telemetry: serverTel },
  });
  const traceId = randomBytes(16).toString('hex');
  const parent = randomBytes(8).toString('hex');
  const trace = { traceparent: `00-${traceId}-${parent}-01` };
  try {
    const c = await rawClient(endpoint.url, { authorization: `Bearer ${endpoint.token}` });
    await handshake(c);
    const meta = await c.call({ id: 'meta-1', method: 'fs/getMetadata', params: { path: dir }, trace });
    assert.ok(meta.result, JSON.stringify(meta));
    const start = await c.call({
      id: 'start-1',
      method: 'process/start',
      params: { processId: 'p1', argv: ['/bin/sh', '-c', 'exit 3'], cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, tty: false, pipeStdin: false, arg0: null },
      trace,
    });
    assert.ok(start.result, JSON.stringify(start));
    await waitFor(() => c.notifications.some((n) => n.method === 'process/closed' && n.params.processId === 'p1'), { what: 'p1 closed', timeout: 10_000 });
    assert.deepEqual(questions, [], 'neverAsk: nothing asked');
    c.close();
  } finally {
    await endpoint.stop();
    await serverTel.shutdown();
  }
  const spans = await rx.waitFor((s) => s.some((x) => x.traceId === traceId && x.name === 'process'));
  const server = spans.filter((s) => s.serviceName === 'agent-endpoint-under-test' && s.traceId === traceId);
  const metaSpan = server.find((s) => s.name === 'fs/getMetadata' && s.kind === 2);
  assert.ok(metaSpan, `a server span for fs/getMetadata in ${JSON.stringify(server.map((s) => s.name))}`);
  assert.equal(metaSpan.parentSpanId, parent);
  const startSpan = server.find((s) => s.name === 'process/start' && s.kind === 2);
  assert.ok(startSpan);
  assert.equal(startSpan.parentSpanId, parent);
  const proc = server.find((s) => s.name === 'process')!;
  assert.equal(proc.parentSpanId, startSpan.spanId);
  assert.equal(proc.attributes['process.exit.code'], 3);
});
