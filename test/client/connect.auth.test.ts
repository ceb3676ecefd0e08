// The project's client against an authenticated CLI: the token comes from
// CODEX_EXEC_SERVER_CONNECTION_TOKEN (like Codex) or the option; a missing/wrong token is a
// clear HTTP 401 error at connect time (not a silent retry loop), and the token never appears
// in that error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ensureBuilt, startCli, stopAll } from '../support/cli-servers';
import { tempDir } from '../support/security';
import { connectWebSocket } from '../../src/client/connect';

const TOKEN = 'client-auth-token-5f2c9e11aa';
const tmp = tempDir();
let url: string;

before(async () => {
  ensureBuilt();
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0', '--ws-auth', 'capability-token', '--ws-token-file', tmp.file('token', TOKEN)]);
  url = cli.url;
});
after(async () => {
  await stopAll();
  tmp.dispose();
});

test('token from CODEX_EXEC_SERVER_CONNECTION_TOKEN connects; an explicit option wins', async () => {
  const saved = process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN;
  process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN = TOKEN;
  try {
    const client = await connectWebSocket(url, { reconnect: false });
    assert.deepEqual(await client.request('environment/status', null), { status: 'ready' });
    await client.close();
    await assert.rejects(connectWebSocket(url, { reconnect: false, token: 'explicit-wrong-token' }), /HTTP 401/);
  } finally {
    if (saved === undefined) delete process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN;
    else process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN = saved;
  }
});

test('missing or wrong token: a prompt, clear 401 error that does not echo the token', async () => {
  const saved = process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN;
  delete process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN;
  try {
    for (const token of [undefined, 'wrong-token-abcdef-123456']) {
      const started = Date.now();
      const err = await connectWebSocket(url, { reconnect: true, token }).then(
        (c) => {
          void c.close();
          return undefined;
        },
        (e: unknown) => e as Error,
      );
      assert.ok(err, 'connecting must fail');
      assert.match(err.message, /HTTP 401/);
      assert.match(err.message, token ? /invalid websocket bearer token/ : /missing websocket bearer token/);
      if (token) assert.ok(!err.message.includes(token), 'token echoed in the error');
      assert.ok(Date.now() - started < 10_000, 'failed promptly, no retry loop on 401');
    }
  } finally {
    if (saved !== undefined) process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN = saved;
  }
});
