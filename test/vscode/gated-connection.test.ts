// The approval decorator over a real in-process server connection.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, it } from 'node:test';
import { RpcError } from '../../src/protocol/errors';
import { ExecServer } from '../../src/server/exec-server';
import type { ApprovalRequest } from '../../src/vscode/core/approval';
import { approvalRequestFor, GatedServerConnection } from '../../src/vscode/core/gated-connection';

const server = new ExecServer();
const dir = mkdtempSync(path.join(os.tmpdir(), 'vscode-gate-'));
after(async () => {
  await server.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

function gated(allow: boolean) {
  const asked: ApprovalRequest[] = [];
  const hooks: string[] = [];
  const conn = new GatedServerConnection(
    server.connect({ notify() {} }, { label: 'gate-test' }),
    async (req) => {
      asked.push(req);
      return allow ? { allowed: true, reason: 'user allowed' } : { allowed: false, reason: 'user denied' };
    },
    {
      beforeProcessStart: (p) => hooks.push(`before ${p.processId}`),
      afterProcessStart: (p, ok) => hooks.push(`after ${p.processId} ${ok}`),
    },
  );
  return { conn, asked, hooks };
}

describe('gated server connection', () => {
  it('maps gated methods to approval questions and leaves the others alone', () => {
    assert.deepEqual(approvalRequestFor('process/start', { argv: ['ls'], cwd: 'file:///tmp' }), { kind: 'run', argv: ['ls'], cwd: '/tmp' });
    assert.deepEqual(approvalRequestFor('fs/remove', { path: '/x' }), { kind: 'fs', operation: 'delete', path: '/x' });
    assert.deepEqual(approvalRequestFor('fs/copy', { sourcePath: '/a', destinationPath: 'file:///b' }), {
      kind: 'fs',
      operation: 'copy',
      path: '/a',
      destination: '/b',
    });
    for (const m of ['fs/readFile', 'fs/getMetadata', 'process/write', 'process/terminate', 'process/read', 'environment/info']) {
      assert.equal(approvalRequestFor(m, { path: '/x' }), undefined, m);
    }
    // Malformed params still produce a question (never a silent pass).
    assert.deepEqual(approvalRequestFor('process/start', null), { kind: 'run', argv: ['<missing argv>'], cwd: '<missing path>' });
  });

  it('does not ask before the handshake: the server rejects those requests itself', async () => {
    const { conn, asked } = gated(true);
    await assert.rejects(conn.requestUntyped('fs/writeFile', { path: path.join(dir, 'early'), dataBase64: '' }), /initialize/);
    assert.equal(asked.length, 0);
    conn.close();
  });

  it('a denial never reaches the server; an approval does, with start hooks around it', async () => {
    const denied = gated(false);
    await denied.conn.requestUntyped('initialize', { clientName: 't' });
    denied.conn.notification('initialized', {});
    const target = path.join(dir, 'made');
    await assert.rejects(denied.conn.requestUntyped('fs/createDirectory', { path: pathToFileURL(target).href }), (e: unknown) => e instanceof RpcError && e.code === -32600);
    await assert.rejects(
      denied.conn.requestUntyped('process/start', { processId: 'p1', argv: ['/bin/true'], cwd: pathToFileURL(dir).href, env: {}, tty: false }),
      /not approved/,
    );
    assert.equal(existsSync(target), false);
    assert.deepEqual(denied.hooks, []);
    assert.equal(denied.asked.length, 2);
    denied.conn.close();

    const allowed = gated(true);
    await allowed.conn.requestUntyped('initialize', { clientName: 't' });
    allowed.conn.notification('initialized', {});
    await allowed.conn.requestUntyped('fs/createDirectory', { path: pathToFileURL(target).href });
    assert.equal(existsSync(target), true);
    await allowed.conn.requestUntyped('process/start', { processId: 'p2', argv: ['/bin/true'], cwd: pathToFileURL(dir).href, env: {}, tty: false });
    await assert.rejects(allowed.conn.requestUntyped('process/start', { processId: 'p3', argv: ['/nonexistent-xyz'], cwd: pathToFileURL(dir).href, env: {}, tty: false }));
    assert.deepEqual(allowed.hooks, ['before p2', 'after p2 true', 'before p3', 'after p3 false']);
    allowed.conn.close();
  });
});
