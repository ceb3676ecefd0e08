// Telemetry is off by default and then costs nothing: no OpenTelemetry module is loaded (in
// this process: require.cache; in the built CLI: dist/telemetry.js is never required), no
// per-request observer exists, and no `trace` member is sent. Each check has a control that
// turns telemetry on and sees the opposite, so the check can fail.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { connectInProcess } from '../../src/client/connect';
import { ExecServer } from '../../src/server/exec-server';
import { NOOP_SERVER_TELEMETRY } from '../../src/telemetry/api';
import { telemetryConfig } from '../../src/telemetry/config';
import { sdkLoaded, startServerTelemetry } from '../../src/telemetry/load';
import { cleanEnv, ensureBuilt, handshake, rawClient, telemetryBundle } from '../support/telemetry';
import { startCli } from '../support/cli';
import { tempDir } from '../support/tmp';

const dir = tempDir('telemetry-off-');

const otelModules = () => Object.keys(require.cache).filter((k) => k.includes('@opentelemetry') || /telemetry[\\/]otel\.js$/.test(k));

test('in process: a default server and client load no OpenTelemetry module; turning it on does', async () => {
  const config = telemetryConfig(cleanEnv());
  assert.equal(config.traces, undefined);
  assert.equal(config.metrics, undefined);
  const tel = await startServerTelemetry(config);
  assert.equal(tel, NOOP_SERVER_TELEMETRY, 'nothing configured: the no-op');
  const server = new ExecServer();
  assert.equal(server.telemetry.enabled, false);
  const client = await connectInProcess(server);
  await client.fs.stat(dir);
  const p = await client.startProcess({ argv: ['true'], cwd: dir });
  assert.equal(await p.exited, 0);
  await client.close();
  await server.shutdown();
  assert.deepEqual(otelModules(), []);
  assert.equal(sdkLoaded(), false);

  // Control: with metrics on, the SDK is loaded (so the check above can fail).
  const on = await startServerTelemetry(telemetryConfig({ OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_PORT: '0' }));
  await on.shutdown();
  assert.equal(sdkLoaded(), true);
  assert.ok(otelModules().length > 0);
});

test('the built CLI never requires dist/telemetry.js unless telemetry is configured', async (t) => {
  ensureBuilt();
  // A preload that reports every module the CLI loads from dist/.
  const hook = path.join(dir, 'hook.js');
  writeFileSync(
    hook,
    `const M = require('module'); const orig = M._load;
     M._load = function (req, ...rest) { if (String(req).endsWith('telemetry.js')) process.stderr.write('LOADED ' + req + '\\n'); return orig.call(this, req, ...rest); };`,
  );
  const run = async (extraArgs: string[]): Promise<string> => {
    const cli = await startCli(extraArgs, { nodeArgs: ['--require', hook], env: cleanEnv(), t });
    const c = await rawClient(cli.url);
    await handshake(c);
    await c.call({ id: 1, method: 'fs/getMetadata', params: { path: dir }, trace: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` } });
    c.close();
    await cli.stop();
    return cli.stderr();
  };
  const off = await run([]);
  assert.ok(!off.includes('LOADED'), off);
  const on = await run(['--prometheus', '127.0.0.1:0']);
  assert.ok(on.includes(`LOADED ${telemetryBundle}`), on);
});
