import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExecServerClient } from '../../src/client/client';
import { ExecServer } from '../../src/server/exec-server';
import { serveConnection } from '../../src/transports/serve';
import { listenWebSocket } from '../../src/transports/websocket-server';
import { defineClientScenarios } from './scenarios';

defineClientScenarios('websocket', async () => {
  const server = new ExecServer();
  const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => serveConnection(server, t) });
  const client = await ExecServerClient.connectWebSocket(listener.url, { clientName: 'test' });
  return {
    client,
    close: async () => {
      await client.close();
      await listener.close();
      await server.shutdown();
    },
  };
});


test('websocket client: the bearer token defaults to $CODEX_EXEC_SERVER_CONNECTION_TOKEN; a bad token is a clear 401 without retries', async () => {
  const server = new ExecServer();
  let upgrades = 0;
  const listener = await listenWebSocket({
    host: '127.0.0.1',
    port: 0,
    authenticate: (req) => {
      upgrades++;
      return req.headers.authorization === 'Bearer from-env' ? { ok: true } : { ok: false, status: 401, message: 'invalid token' };
    },
    onConnection: (t) => serveConnection(server, t),
  });
  const saved = process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN;
  try {
    process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN = 'from-env';
    const client = await ExecServerClient.connectWebSocket(listener.url);
    assert.deepEqual(await client.request('environment/status', null), { status: 'ready' });
    await client.close();
    upgrades = 0;
    await assert.rejects(ExecServerClient.connectWebSocket(listener.url, { token: 'wrong' }), /HTTP 401 unauthorized.*invalid token/);
    assert.equal(upgrades, 1);
  } finally {
    if (saved === undefined) delete process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN;
    else process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN = saved;
    await listener.close();
    await server.shutdown();
  }
});
