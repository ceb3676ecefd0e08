// The Prometheus endpoint of the built CLI after a known workload shows the exact counts:
// requests by method and outcome (unknown methods as `other`), durations, open connections
// and sessions, processes started/running/exited by outcome, process output bytes, and
// connections refused before JSON-RPC by reason (401, 403). No label holds a path, id or argv.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { startCli, stopAll } from '../support/cli-servers';
import { cleanEnv, ensureBuilt, handshake, rawClient, sample } from '../support/telemetry';
import { waitFor } from '../support/wait';

const dir = mkdtempSync(path.join(os.tmpdir(), 'telemetry-prom-'));
before(() => ensureBuilt());
after(async () => {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

async function scrape(url: string): Promise<string> {
  const r = await fetch(url);
  assert.equal(r.status, 200);
  return r.text();
}

test('a scrape after a known workload shows the exact counts', async () => {
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, 'prom-test-token\n', { mode: 0o600 });
  const cli = await startCli(
    ['--listen', 'ws://127.0.0.1:0', '--ws-auth', 'capability-token', '--ws-token-file', tokenFile, '--prometheus', '127.0.0.1:0'],
    { env: cleanEnv() },
  );
  const m = /Prometheus endpoint (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(cli.stderr());
  assert.ok(m, cli.stderr());
  const metricsUrl = m[1];

  // Refused connections: no token (401) twice, a browser origin (403) once.
  const refused: (Record<string, string> | undefined)[] = [undefined, { Authorization: 'Bearer wrong' }, { Authorization: 'Bearer prom-test-token', Origin: 'https://evil.example' }];
  for (const headers of refused) {
    await assert.rejects(rawClient(cli.url, headers));
  }

  const auth = { Authorization: 'Bearer prom-test-token' };
  const a = await rawClient(cli.url, auth);
  const b = await rawClient(cli.url, auth);
  await handshake(a);
  for (let i = 0; i < 3; i++) assert.ok((await a.call({ id: i, method: 'fs/getMetadata', params: { path: dir } })).result);
  assert.equal((await a.call({ id: 10, method: 'fs/getMetadata', params: { path: path.join(dir, 'nope') } })).error?.code, -32004);
  assert.equal((await a.call({ id: 11, method: `made/up/${dir}`, params: {} })).error?.code, -32601);
  assert.equal((await a.call({ id: 12, method: 'constructor', params: {} })).error?.code, -32601);
  // b: one request before initialize (an error), then no session.
  assert.equal((await b.call({ id: 1, method: 'environment/status', params: {} })).error?.code, -32600);
  // Two processes: one prints 12 bytes and fails, one succeeds silently.
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  await a.call({ id: 20, method: 'process/start', params: { processId: 'p-fail', argv: ['sh', '-c', 'printf hello-world!; exit 7'], cwd: dir, env, tty: false } });
  await a.call({ id: 21, method: 'process/start', params: { processId: 'p-ok', argv: ['true'], cwd: dir, env, tty: false } });
  // A process that keeps running while we scrape.
  await a.call({ id: 22, method: 'process/start', params: { processId: 'p-run', argv: ['sleep', '30'], cwd: dir, env, tty: false } });
  // A start that fails (missing binary) is not a started process.
  assert.ok((await a.call({ id: 23, method: 'process/start', params: { processId: 'p-missing', argv: [path.join(dir, 'no-such-binary')], cwd: dir, env, tty: false } })).error);
  await waitFor(() => a.notifications.filter((n) => n.method === 'process/closed').length === 2, { what: 'two processes closed', timeout: 10_000 });

  const text = await scrape(metricsUrl);
  const expect: [string, number][] = [
    ['exec_server_requests_total{method="initialize",outcome="ok"}', 1],
    ['exec_server_requests_total{method="fs/getMetadata",outcome="ok"}', 3],
    ['exec_server_requests_total{method="fs/getMetadata",outcome="error"}', 1],
    ['exec_server_requests_total{method="other",outcome="error"}', 2],
    ['exec_server_requests_total{method="environment/status",outcome="error"}', 1],
    ['exec_server_requests_total{method="process/start",outcome="ok"}', 3],
    ['exec_server_requests_total{method="process/start",outcome="error"}', 1],
    ['exec_server_request_duration_seconds_count{method="fs/getMetadata",outcome="ok"}', 3],
    ['exec_server_request_duration_seconds_bucket{method="fs/getMetadata",outcome="ok",le="+Inf"}', 3],
    ['exec_server_connections', 2],
    ['exec_server_sessions', 1],
    ['exec_server_processes', 1],
    ['exec_server_processes_started_total{sandbox="none"}', 3],
    ['exec_server_processes_exited_total{outcome="failure"}', 1],
    ['exec_server_processes_exited_total{outcome="success"}', 1],
    ['exec_server_process_output_bytes_total', 12],
    ['exec_server_connections_rejected_total{reason="401"}', 2],
    ['exec_server_connections_rejected_total{reason="403"}', 1],
  ];
  for (const [series, value] of expect) assert.equal(sample(text, series), value, `${series} in\n${text}`);
  assert.ok((sample(text, 'exec_server_request_duration_seconds_sum{method="fs/getMetadata",outcome="ok"}') ?? -1) > 0);
  // Bounded labels: no path, process id or argv anywhere.
  for (const secret of [dir, 'p-fail', 'hello-world', 'made/up', 'constructor']) assert.ok(!text.includes(secret), `${secret} not in the metrics`);
  assert.match(text, /# TYPE exec_server_request_duration_seconds histogram/);
  assert.match(text, /# TYPE exec_server_connections gauge/);

  // Closing connections is counted down; the session is detached (kept for resume), not ended.
  a.close();
  b.close();
  const after = await waitFor(async () => {
    const text = await scrape(metricsUrl);
    return sample(text, 'exec_server_connections') === 0 && text;
  }, { what: 'exec_server_connections back to 0', interval: 50 });
  assert.equal(sample(after, 'exec_server_connections'), 0, after);
  assert.equal(sample(after, 'exec_server_sessions'), 1);
  assert.equal((await fetch(metricsUrl.replace('/metrics', '/other'))).status, 404);
  await cli.stop();
  assert.equal(cli.child.exitCode, 0, cli.stderr());
  await assert.rejects(fetch(metricsUrl), 'the metrics endpoint closes with the server');
});
