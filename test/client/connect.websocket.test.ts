// src/client/connect.ts over websockets: the shared client scenarios, the bearer token, answers larger than maxPayload.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectWebSocket } from '../../src/client/connect';
import { ExecServer } from '../../src/server/exec-server';
import { serveConnection } from '../../src/transports/serve';
import { listenWebSocket } from '../../src/transports/websocket-server';
import { defineClientScenarios } from '../support/scenarios';

defineClientScenarios('websocket', async () => {
  const server = new ExecServer();
  const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => serveConnection(server, t) });
  const client = await connectWebSocket(listener.url, { clientName: 'test' });
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
    const client = await connectWebSocket(listener.url);
    assert.deepEqual(await client.request('environment/status', null), { status: 'ready' });
    await client.close();
    upgrades = 0;
    await assert.rejects(connectWebSocket(listener.url, { token: 'wrong' }), /HTTP 401 unauthorized.*invalid token/);
    assert.equal(upgrades, 1);
  } finally {
    if (saved === undefined) delete process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN;
    else process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN = saved;
    await listener.close();
    await server.shutdown();
  }
});

test('websocket client: readFile of a file whose answer exceeds maxPayload streams it instead of losing the connection', async () => {
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'client-maxpayload-'));
  const server = new ExecServer();
  const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => serveConnection(server, t) });
  const client = await connectWebSocket(listener.url, { clientName: 'test', maxPayload: 256 * 1024, reconnect: false });
  try {
    const big = Buffer.alloc(1024 * 1024 + 5);
    for (let i = 0; i < big.length; i += 997) big[i] = i % 253;
    const bigFile = path.join(dir, 'big.bin');
    fs.writeFileSync(bigFile, big);
    const small = Buffer.from('small enough for one frame');
    const smallFile = path.join(dir, 'small.txt');
    fs.writeFileSync(smallFile, small);
    assert.ok(Buffer.from(await client.fs.readFile(bigFile)).equals(big), 'every byte of the streamed read');
    assert.ok(Buffer.from(await client.fs.readFile(smallFile)).equals(small));
    assert.equal(client.state, 'connected');
    assert.equal(client.reconnects, 0);
    await assert.rejects(client.fs.readFile(path.join(dir, 'missing')), (e: { code?: number }) => e.code === -32004);
  } finally {
    await client.close();
    await listener.close();
    await server.shutdown();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
