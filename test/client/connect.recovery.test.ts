// src/client/connect.ts recovery: how long a client retries an unreachable server, and a server that forgot the session.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as os from 'node:os';
import { connectWebSocket } from '../../src/client/connect';
import { startDropProxy } from '../support/drop-proxy';
import { ExecServer } from '../../src/server/exec-server';
import { serveConnection } from '../../src/transports/serve';
import { listenWebSocket } from '../../src/transports/websocket-server';
import { defineRecoveryScenarios } from '../support/recovery-scenarios';
import { waitFor } from '../support/wait';

defineRecoveryScenarios(
  'recovery (our server)',
  async () => {
    const server = new ExecServer();
    const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => serveConnection(server, t) });
    return {
      url: listener.url,
      stop: async () => {
        await listener.close();
        await server.shutdown();
      },
    };
  },
  { startSurvivesDrop: true },
);

async function ourWsServer() {
  const server = new ExecServer();
  const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => serveConnection(server, t) });
  return { server, listener, stop: async () => (await listener.close(), await server.shutdown()) };
}

test('recovery: gives up after recoveryTimeoutMs when the server stays unreachable; processes fail with a clear error', async () => {
  const s = await ourWsServer();
  const proxy = await startDropProxy(s.listener.url);
  const client = await connectWebSocket(proxy.url, { recoveryTimeoutMs: 800, reconnectDelayMs: 50 });
  try {
    const h = await client.startProcess({ argv: ['sleep', '30'], cwd: os.tmpdir(), env: {} });
    let closeError: string | undefined;
    h.onClose((e) => (closeError = e.error));
    proxy.refuse = true;
    proxy.dropAll();
    await h.closed;
    assert.match(closeError ?? '', /reconnect failed/);
    assert.equal(client.state, 'failed');
    await assert.rejects(client.request('environment/status', null), /client is failed/);
  } finally {
    await client.close();
    await proxy.close();
    await s.stop();
  }
});

test('recovery: a server that forgot the session (restart) fails the client at once instead of retrying', async () => {
  const first = await ourWsServer();
  const proxy = await startDropProxy(first.listener.url);
  const client = await connectWebSocket(proxy.url, { recoveryTimeoutMs: 20_000, reconnectDelayMs: 50 });
  const logs: string[] = [];
  client.onLog((l) => logs.push(l.message));
  try {
    await first.stop(); // the session is gone with this server
    const started = Date.now();
    // The proxy still points at the old port: start a fresh server there.
    const port = Number(new URL(first.listener.url).port);
    const fresh = new ExecServer();
    const again = await listenWebSocket({ host: '127.0.0.1', port, onConnection: (t) => serveConnection(fresh, t) });
    try {
      await waitFor(() => client.state === 'failed', { what: 'the client to fail', timeout: 20_000, wake: client.onDidChangeState });
      assert.ok(Date.now() - started < 15_000, 'did not wait for the recovery timeout');
      assert.ok(logs.some((l) => /cannot resume session .*unknown session id/.test(l)), logs.join('\n'));
    } finally {
      await again.close();
      await fresh.shutdown();
    }
  } finally {
    await client.close();
    await proxy.close();
  }
});
