// The environment manager while a connection comes back (docs/reliability.md): the state reads
// "reconnecting" — never "failed" — while automatic attempts remain (the view and the
// "reconnecting…" toast agree), "failed" plus onDidGiveUp once they are used up; and a first
// connection can resume a session by id (a reloaded window), falling back to a new session
// when the server no longer knows it.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { ExecClient } from '../../../src/client/api';
import { connectWebSocket } from '../../../src/client/connect';
import { ExecServer } from '../../../src/server/exec-server';
import { serveConnection } from '../../../src/transports/serve';
import { listenWebSocket, type WebSocketListener } from '../../../src/transports/websocket-server';
import { EnvironmentManager, type Connector, type EnvironmentState } from '../../../src/extension/environments/manager';
import { EnvironmentStore, type EnvironmentSetting } from '../../../src/extension/environments/store';
import { waitFor } from '../../support/wait';

const remote = new ExecServer({ detachedSessionTtlMs: 300 });
after(() => remote.shutdown());

function listen(port = 0): Promise<WebSocketListener> {
  return listenWebSocket({ host: '127.0.0.1', port, onConnection: (t) => serveConnection(remote, t) });
}

function setup(settings: EnvironmentSetting[], delays: number[]) {
  const store = new EnvironmentStore({ read: () => settings, write: async () => {} }, { get: async () => undefined, store: async () => {}, delete: async () => {} });
  const attempts = { failed: 0 };
  const connector: Connector = {
    connect(config, _token, opts): Promise<ExecClient> {
      const c = connectWebSocket(config.url!, { connectTimeoutMs: 2000, recoveryTimeoutMs: 600, reconnectDelayMs: 50, resumeSessionId: opts?.resumeSessionId });
      c.catch(() => attempts.failed++);
      return c;
    },
  };
  const manager = new EnvironmentManager(store, connector, { reconnectDelaysMs: delays });
  const states: EnvironmentState[] = [];
  manager.onDidChangeState((e) => states.push(e.state));
  return { manager, states, attempts };
}


describe('environment manager: reconnecting', () => {
  it('reads "reconnecting" while attempts remain and comes back connected — never "failed" in between', async () => {
    let l = await listen();
    const port = l.port;
    const { manager, states, attempts } = setup([{ name: 'remote', url: l.url }], [200, 300, 400, 500, 600, 800, 1000]);
    try {
      await manager.getClient('remote');
      const lost: string[] = [];
      manager.onDidLoseConnection((e) => lost.push(e.reason));
      states.length = 0;
      await l.close(); // down for longer than the client's own recovery (600 ms) and the session TTL
      await waitFor(() => lost.length === 1, { what: 'the session lost', timeout: 10_000 });
      assert.equal(manager.state('remote'), 'reconnecting');
      const failed = attempts.failed;
      await waitFor(() => attempts.failed > failed, { what: "the manager's attempt to fail while the server is down" });
      l = await listen(port);
      await waitFor(() => manager.state('remote') === 'connected', { what: 'connected again', timeout: 20_000 });
      assert.ok(!states.includes('failed'), `states: ${states.join(' → ')}`);
      assert.ok(states.includes('reconnecting'));
    } finally {
      await manager.dispose();
      await l.close();
    }
  });

  it('a process of a session the restarted server no longer has ends with that reason, not "client closed"', async () => {
    let l = await listen();
    const port = l.port;
    const { manager } = setup([{ name: 'remote', url: l.url }], [200, 300, 400]);
    try {
      const c = await manager.getClient('remote');
      const h = await c.startProcess({ argv: ['sleep', '30'], cwd: '/tmp', env: {} });
      let error: string | undefined;
      h.onClose((e) => (error = e.error));
      await l.close();
      await waitFor(() => remote.sessionCount === 0, { what: 'the detached session to expire (300 ms TTL)' });
      l = await listen(port);
      await h.closed;
      assert.match(error ?? '', /session lost: .*unknown session/);
    } finally {
      await manager.dispose();
      await l.close();
    }
  });

  it('"failed" and onDidGiveUp once every attempt failed', async () => {
    const l = await listen();
    const { manager, states } = setup([{ name: 'remote', url: l.url }], [100, 150]);
    try {
      await manager.getClient('remote');
      const gaveUp = new Promise<{ environment: string; reason: string }>((r) => manager.onDidGiveUp(r));
      states.length = 0;
      await l.close();
      const e = await gaveUp;
      assert.equal(e.environment, 'remote');
      assert.match(e.reason, /cannot reach|ECONNREFUSED/);
      assert.equal(manager.state('remote'), 'failed');
      assert.deepEqual(states.filter((s) => s === 'failed'), ['failed'], `failed only at the end: ${states.join(' → ')}`);
      assert.equal(states[states.length - 1], 'failed');
    } finally {
      await manager.dispose();
    }
  });

  it('a first connection resumes a live session by id, or starts a new one when the server forgot it', async () => {
    const l = await listen();
    try {
      const other = await connectWebSocket(l.url, { reconnect: false });
      const session = other.sessionId;
      await other.close(); // detached: alive for the TTL
      const a = setup([{ name: 'remote', url: l.url }], [100]);
      const resumed = await a.manager.getClient('remote', { resumeSessionId: session });
      assert.equal(resumed.sessionId, session);
      await a.manager.dispose();
      await waitFor(() => remote.sessionCount === 0, { what: 'the detached session to expire (300 ms TTL)' });
      const b = setup([{ name: 'remote', url: l.url }], [100]);
      const fresh = await b.manager.getClient('remote', { resumeSessionId: session });
      assert.notEqual(fresh.sessionId, session);
      assert.equal(b.manager.state('remote'), 'connected');
      await b.manager.dispose();
    } finally {
      await l.close();
    }
  });
});
