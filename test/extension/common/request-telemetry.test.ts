// The extension's request telemetry core (src/extension/common/request-telemetry.ts) in plain Node:
// statistics per environment without any collector (and without loading the SDK); with an
// OTLP endpoint set, client spans carry the environment's name and the Local (in-process)
// server's spans join the same traces; an invalid endpoint leaves traces off with a warning.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connectInProcess } from '../../../src/client/connect';
import { ExecServer } from '../../../src/server/exec-server';
import { sdkLoaded } from '../../../src/telemetry/load';
import { RequestTelemetry, type TelemetrySettings } from '../../../src/extension/common/request-telemetry';
import { startReceiver, type OtlpReceiver } from '../../support/telemetry';

let rx: OtlpReceiver;
before(async () => (rx = await startReceiver()));
after(() => rx.close());

test('statistics per environment without a collector; the SDK stays unloaded', async () => {
  const settings: TelemetrySettings = { otlpEndpoint: '', otlpProtocol: 'http/protobuf' };
  const t = new RequestTelemetry(() => settings);
  const server = new ExecServer({ telemetry: t.server() });
  assert.equal(server.telemetry.enabled, false);
  const local = await connectInProcess(server, { telemetry: t.client('Local') });
  const other = await connectInProcess(server, { telemetry: t.client('devbox') });
  for (let i = 0; i < 4; i++) await local.request('environment/status', null);
  await other.request('environment/info', null);
  await local.close();
  await other.close();
  await server.shutdown();
  const report = t.report();
  assert.match(report, /^Local \(since/m);
  assert.match(report, /^devbox \(since/m);
  assert.match(report, /environment\/status\s+4\s+0\s/);
  assert.match(report, /environment\/info\s+1\s+0\s/);
  assert.equal(sdkLoaded(), false);
  t.resetStatistics();
  assert.doesNotMatch(t.report(), /environment\/status/);
  await t.shutdown();
});

test('with an OTLP endpoint: client spans named per environment, Local server spans in the same trace', async () => {
  const warnings: string[] = [];
  const settings: TelemetrySettings = { otlpEndpoint: 'not a url', otlpProtocol: 'http/json' };
  const t = new RequestTelemetry(() => settings, (level, m) => level === 'warn' && warnings.push(m));
  t.client('Local');
  assert.match(warnings.join('\n'), /not a URL.*traces stay off/);
  assert.equal(t.server().enabled, false);

  settings.otlpEndpoint = rx.url;
  const server = new ExecServer({ telemetry: t.server() });
  assert.equal(server.telemetry.enabled, true);
  const client = await connectInProcess(server, { telemetry: t.client('Local') });
  await client.request('environment/status', null);
  await client.close();
  await server.shutdown();
  await t.shutdown();
  const spans = await rx.waitFor((s) => s.some((x) => x.kind === 2 && x.name === 'environment/status'));
  const c = spans.find((s) => s.kind === 3 && s.name === 'environment/status')!;
  const s = spans.find((x) => x.kind === 2 && x.name === 'environment/status')!;
  assert.equal(c.attributes['exec_server.environment'], 'Local');
  assert.equal(c.serviceName, 'vscode-exec-server');
  assert.equal(s.traceId, c.traceId);
  assert.equal(s.parentSpanId, c.spanId);
  assert.match(t.report(), /environment\/status\s+1\s/);
});
