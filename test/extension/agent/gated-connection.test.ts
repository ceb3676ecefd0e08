// The gated connection over a real in-process server connection: every request is decided
// before the engine sees it, whatever the handshake state; a refusal changes nothing.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, it } from 'node:test';
import type { ServerConnection } from '../../../src/server/api';
import { ExecServer } from '../../../src/server/exec-server';
import { AgentGate } from '../../../src/extension/agent/gate';
import { WatchBudget } from '../../../src/extension/agent/limits';
import type { ApprovalPolicy } from '../../../src/extension/approval/policy';
import { GatedServerConnection } from '../../../src/extension/agent/gated-connection';

const server = new ExecServer();
const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'vscode-gate-')));
after(async () => {
  await server.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

/** A gated connection whose questions get `answer`; `seen` records what reached the engine. */
function gated(policy: ApprovalPolicy, answer: string | undefined) {
  const asked: string[] = [];
  const seen: string[] = [];
  const hooks: string[] = [];
  const gate = new AgentGate({
    policy: () => policy,
    sandboxAll: () => false,
    timeoutMs: () => 5000,
    workspaceRoots: () => [dir],
    ask: async (q) => {
      asked.push(q.message);
      return answer;
    },
  });
  const sink = { notify() {} };
  const inner = server.connect(sink, { label: 'gate-test' });
  const spy: ServerConnection = {
    request: (m, p) => inner.request(m, p),
    requestUntyped: (m, p) => {
      seen.push(m);
      return inner.requestUntyped(m, p);
    },
    notification: (m, p) => inner.notification(m, p),
    close: () => inner.close(),
  };
  const conn = new GatedServerConnection(spy, gate.connection('test'), {
    sink,
    watches: new WatchBudget(),
    hooks: {
      beforeProcessStart: (p) => hooks.push(`before ${p.processId}`),
      afterProcessStart: (p, ok) => hooks.push(`after ${p.processId} ${ok}`),
    },
  });
  return { conn, asked, seen, hooks };
}

const start = (id: string, argv: string[]) => ({ processId: id, argv, cwd: pathToFileURL(dir).href, env: {}, tty: false });

describe('gated server connection', () => {
  it('asks before the handshake too (a pipelining client is never ungated); a refusal never reaches the engine', async () => {
    const { conn, asked, seen } = gated('alwaysAsk', 'Deny');
    const target = path.join(dir, 'early');
    await assert.rejects(conn.requestUntyped('fs/writeFile', { path: pathToFileURL(target).href, dataBase64: '' }), /not approved/);
    assert.equal(asked.length, 1);
    assert.deepEqual(seen, []);
    assert.equal(existsSync(target), false);
    conn.close();
  });

  it('unknown methods are refused without reaching the engine; malformed params get the engine’s own error', async () => {
    const { conn, seen, asked } = gated('neverAsk', undefined);
    await conn.requestUntyped('initialize', { clientName: 't' });
    conn.notification('initialized', {});
    await assert.rejects(conn.requestUntyped('fs/secretNewMethod', {}), /not available on the agent endpoint/);
    await assert.rejects(conn.requestUntyped('process/start', { processId: 'x', argv: [], cwd: pathToFileURL(dir).href, env: {}, tty: false }), /argv must not be empty/);
    assert.deepEqual(seen, ['initialize']);
    assert.equal(asked.length, 0);
    conn.close();
  });

  it('process methods work only on processes this connection started', async () => {
    const { conn, seen } = gated('neverAsk', undefined);
    await conn.requestUntyped('initialize', { clientName: 't' });
    conn.notification('initialized', {});
    await assert.rejects(conn.requestUntyped('process/terminate', { processId: 'not-mine' }), /not started by this connection/);
    await assert.rejects(conn.requestUntyped('process/write', { processId: 'not-mine', chunk: '', writeId: '1' }), /not started by this connection/);
    await assert.rejects(conn.requestUntyped('process/ack', { processId: 'not-mine', consumedBytes: 1 }), /not started by this connection/);
    assert.deepEqual(seen, ['initialize']);
    // A pipelined start + write: the write waits for the start's decision and keeps its order.
    const started = conn.requestUntyped('process/start', { ...start('mine', ['/bin/cat']), pipeStdin: true });
    const wrote = conn.requestUntyped('process/write', { processId: 'mine', chunk: Buffer.from('hi').toString('base64'), writeId: '1' });
    await started;
    assert.deepEqual(await wrote, { status: 'accepted' });
    // Flow control's ack is part of driving one's own process (not refused as an unknown method).
    const ack = await conn.requestUntyped('process/ack', { processId: 'mine', consumedBytes: 0 }).then(() => 'ok', (e: Error) => e.message);
    assert.doesNotMatch(String(ack), /not available on the agent endpoint|not started by this connection/);
    assert.deepEqual(await conn.requestUntyped('process/terminate', { processId: 'mine' }), { running: true });
    conn.close();
  });

  it('an approval reaches the engine with start hooks around it; a failed start forgets the process', async () => {
    const { conn, hooks, asked } = gated('alwaysAsk', 'Allow');
    await conn.requestUntyped('initialize', { clientName: 't' });
    conn.notification('initialized', {});
    await conn.requestUntyped('process/start', start('p2', ['/bin/true']));
    await assert.rejects(conn.requestUntyped('process/start', start('p3', ['/nonexistent-xyz'])));
    assert.deepEqual(hooks, ['before p2', 'after p2 true', 'before p3', 'after p3 false']);
    assert.equal(asked.length, 2);
    assert.equal(conn.gate.state.processes.has('p2'), true);
    assert.equal(conn.gate.state.processes.has('p3'), false);
    conn.close();
  });
});
