// Lazy connect, failures with a clear kind, and reconnection, against real servers.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { ExecClient } from '../../../src/client/api';
import { connectInProcess, connectWebSocket } from '../../../src/client/connect';
import { ExecServer } from '../../../src/server/exec-server';
import { serveConnection } from '../../../src/transports/serve';
import { listenWebSocket, type WebSocketListener } from '../../../src/transports/websocket-server';
import { createAuthenticator } from '../../../src/transports/ws-auth';
import { EnvironmentConnectError, EnvironmentManager, type Connector, type EnvironmentState } from '../../../src/extension/environments/manager';
import { EnvironmentStore, type EnvironmentSetting } from '../../../src/extension/environments/store';
import { sessionLogTag } from '../../../src/protocol/log-tag';
import { waitFor } from '../../support/wait';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const local = new ExecServer();
const remoteLog: string[] = [];
const remote = new ExecServer({ detachedSessionTtlMs: 500, log: (_level, m) => remoteLog.push(m) });
const tmp = mkdtempSync(path.join(os.tmpdir(), 'vscode-envmgr-'));
const TOKEN = 'manager-test-token-0123456789';
writeFileSync(path.join(tmp, 'token'), TOKEN);
after(async () => {
  await local.shutdown();
  await remote.shutdown();
  rmSync(tmp, { recursive: true, force: true });
});

function listen(port = 0): Promise<WebSocketListener> {
  return listenWebSocket({
    host: '127.0.0.1',
    port,
    authenticate: createAuthenticator({ mode: 'capability-token', tokenFile: path.join(tmp, 'token') }),
    onConnection: (t) => serveConnection(remote, t),
  });
}

function setup(settings: EnvironmentSetting[], tokens: Record<string, string> = {}) {
  let connects = 0;
  const secrets = new Map(Object.entries(tokens).map(([k, v]) => [`execServer.token.${k}`, v]));
  const store = new EnvironmentStore(
    { read: () => settings, write: async () => {} },
    { get: async (k) => secrets.get(k), store: async () => {}, delete: async () => {} },
  );
  const connector: Connector = {
    connect(config, token): Promise<ExecClient> {
      connects++;
      if (config.kind === 'local') return connectInProcess(local, { clientName: 'mgr-test' });
      return connectWebSocket(config.url!, { token: token ?? '', connectTimeoutMs: 3000, recoveryTimeoutMs: 2000 });
    },
  };
  const manager = new EnvironmentManager(store, connector, { reconnectDelaysMs: [100, 200, 400, 800, 1600, 3200] });
  const states: EnvironmentState[] = [];
  manager.onDidChangeState((e) => states.push(e.state));
  return { manager, states, connects: () => connects };
}

describe('environment manager', () => {
  it('connects Local lazily, once for concurrent callers, and disconnects', async () => {
    const { manager, states, connects } = setup([]);
    assert.equal(manager.state('Local'), 'disconnected');
    const [a, b] = await Promise.all([manager.getClient('Local'), manager.getClient('Local')]);
    assert.equal(a, b);
    assert.equal(connects(), 1);
    assert.equal(manager.state('Local'), 'connected');
    assert.equal(await manager.getClient('Local'), a);
    assert.equal(await manager.disconnect('Local'), true);
    assert.equal(manager.state('Local'), 'disconnected');
    assert.equal(a.state, 'closed');
    assert.deepEqual(states, ['connecting', 'connected', 'disconnected']);
    await manager.dispose();
  });

  it('an unknown environment, a wrong token and an unreachable URL fail with distinct kinds', async () => {
    const l = await listen();
    const dead = await listen();
    const deadUrl = dead.url;
    await dead.close();
    const { manager } = setup(
      [
        { name: 'bad-token', url: l.url },
        { name: 'down', url: deadUrl },
      ],
      { 'bad-token': 'not-the-token' },
    );
    try {
      await assert.rejects(manager.getClient('nope'), (e: unknown) => e instanceof EnvironmentConnectError && e.kind === 'unknown environment');
      await assert.rejects(manager.getClient('bad-token'), (e: unknown) => {
        assert.ok(e instanceof EnvironmentConnectError);
        assert.equal(e.kind, 'unauthorized');
        assert.match(e.message, /token/);
        return true;
      });
      assert.equal(manager.state('bad-token'), 'failed');
      await assert.rejects(manager.getClient('down'), (e: unknown) => e instanceof EnvironmentConnectError && e.kind === 'unreachable');
      assert.match(manager.lastError('down') ?? '', /cannot reach down/);
    } finally {
      await manager.dispose();
      await l.close();
    }
  });

  it('reconnects with a new session after the server restarts on the same port', async () => {
    let l = await listen();
    const port = l.port;
    const { manager } = setup([{ name: 'remote', url: l.url }], { remote: TOKEN });
    try {
      const first = await manager.getClient('remote');
      const firstSession = first.sessionId;
      const reconnected = new Promise<ExecClient>((resolve) => manager.onDidReconnect((e) => resolve(e.client)));
      await l.close();
      // The old session expires while the server is down, so resuming it must fail.
      await waitFor(() => remoteLog.some((m) => m.includes(`${sessionLogTag(firstSession)} expired`)), { what: 'the old session to expire (500 ms TTL)' });
      l = await listen(port);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const second = await Promise.race([
        reconnected,
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no reconnect within 30 s')), 30_000))),
      ]).finally(() => clearTimeout(timer));
      assert.equal(manager.state('remote'), 'connected');
      assert.equal(await manager.getClient('remote'), second);
      assert.notEqual(second, first, 'a new client replaced the one that could not resume');
      assert.notEqual(second.sessionId, firstSession);
      assert.equal(typeof (await second.environmentInfo()).shell.path, 'string');
    } finally {
      await manager.dispose();
      await l.close();
    }
  });
});
