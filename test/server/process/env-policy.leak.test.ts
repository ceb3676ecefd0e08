// Secrets in the server's own environment must not reach children by accident: without
// envPolicy a child gets exactly `env`; with `inherit: all` the default excludes drop names
// matching *KEY*, *SECRET*, *TOKEN* (the server's own connection token included). Checked
// against the built CLI with a real `env` child.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { attempt, ensureBuilt, RawRpc, startCli, stopAll } from '../../support/cli-servers';
import { waitFor } from '../../support/wait';

const SECRETS = {
  EXEC_TEST_API_KEY: 'leak-key-1a2b',
  EXEC_TEST_SECRET_X: 'leak-secret-3c4d',
  CODEX_EXEC_SERVER_CONNECTION_TOKEN: 'leak-token-5e6f',
  exec_test_lower_token: 'leak-lower-7g8h',
};
let rpc: RawRpc;
let n = 0;

before(async () => {
  ensureBuilt();
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0'], { env: { ...process.env, ...SECRETS, EXEC_TEST_PLAIN: 'visible-9i0j' } });
  const a = await attempt(cli.url);
  if (a.kind !== 'open') throw new Error('connect failed');
  rpc = new RawRpc(a.ws);
  await rpc.init();
});
after(async () => {
  rpc?.ws.close();
  await stopAll();
});

/** Runs `env` in the server with the given extra start params; returns its stdout. */
async function childEnv(extra: Record<string, unknown>): Promise<string> {
  const processId = `env-${++n}`;
  const r = await rpc.call('process/start', { processId, argv: ['/usr/bin/env'], cwd: pathToFileURL(tmpdir()).href, env: {}, tty: false, arg0: null, ...extra });
  assert.ok(r.result, JSON.stringify(r));
  const mine = () => rpc.notifications.filter((m) => (m.params as { processId?: string }).processId === processId);
  await waitFor(() => mine().some((m) => m.method === 'process/closed'), { what: `${processId} closed`, timeout: 15_000 });
  return mine()
    .filter((m) => m.method === 'process/output')
    .map((m) => Buffer.from((m.params as { chunk: string }).chunk, 'base64').toString())
    .join('');
}

test('without envPolicy the child gets exactly `env`: nothing of the server environment', async () => {
  const out = await childEnv({ env: { ONLY_THIS: '1' } });
  assert.equal(out.trim(), 'ONLY_THIS=1');
});

test('inherit all: default excludes drop *KEY*/*SECRET*/*TOKEN* (any case), other variables pass', async () => {
  const out = await childEnv({ envPolicy: { inherit: 'all', ignoreDefaultExcludes: false, exclude: [], set: {}, includeOnly: [] } });
  assert.match(out, /EXEC_TEST_PLAIN=visible-9i0j/);
  for (const v of Object.values(SECRETS)) assert.ok(!out.includes(v), `${v} leaked to the child`);
});

test('control: with ignoreDefaultExcludes the same variables do pass (the check above can fail)', async () => {
  const out = await childEnv({ envPolicy: { inherit: 'all', ignoreDefaultExcludes: true, exclude: [], set: {}, includeOnly: [] } });
  for (const v of Object.values(SECRETS)) assert.ok(out.includes(v), `${v} missing`);
});
