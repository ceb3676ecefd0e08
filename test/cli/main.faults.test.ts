// Fault injection against the built CLI: a child killed from outside mid-stream, writes into
// a directory the server may not write (server run as `nobody`), and the server killed under
// a connected client. Each fault must give a clear result/error: no hang, nothing half-done.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt, openRpc, RawRpc, startCli, stopAll } from '../support/cli-servers';
import { withTimeout } from '../support/fuzz';
import { childPids, isAlive } from '../support/process';
import { waitFor } from '../support/wait';
import { connectWebSocket } from '../../src/client/connect';
import { ErrorCodes, RpcError } from '../../src/protocol/errors';

let dir: string;
before(() => {
  ensureBuilt();
  dir = mkdtempSync(path.join(tmpdir(), 'exec-faults-'));
  chmodSync(dir, 0o755);
});
after(async () => {
  await stopAll();
  const ro = path.join(dir, 'readonly');
  if (existsSync(ro)) chmodSync(ro, 0o755); // so a non-root run can delete it
  rmSync(dir, { recursive: true, force: true });
});

const events = (rpc: RawRpc, id: string, method: string) =>
  rpc.notifications.filter((n) => n.method === method && (n.params as { processId: string }).processId === id);

test('a child SIGKILLed from outside mid-stream is reported exited (137); reads do not hang; a grandchild holding the pipe is reaped at shutdown', async () => {
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0']);
  const rpc = await openRpc(cli.url);
  const script = 'sleep 300 & i=0; while :; do echo "line $i"; i=$((i+1)); sleep 0.02; done';
  const r = await rpc.call('process/start', { processId: 'victim', argv: ['/bin/sh', '-c', script], cwd: pathToFileURL(dir).href, env: { PATH: '/usr/bin:/bin' }, tty: false, arg0: null });
  assert.ok(r.result, JSON.stringify(r));
  await waitFor(() => events(rpc, 'victim', 'process/output').length >= 3, { what: 'output to stream', timeout: 15_000 });
  const shells = childPids(cli.child.pid!);
  assert.equal(shells.length, 1, `one child expected, got ${shells}`);
  const grandchildren = childPids(shells[0]);
  process.kill(shells[0], 'SIGKILL');

  await waitFor(() => events(rpc, 'victim', 'process/exited').length === 1, { what: 'process/exited', timeout: 15_000 });
  const exited = events(rpc, 'victim', 'process/exited')[0].params as { exitCode: number; seq: number };
  assert.equal(exited.exitCode, 137, 'killed by SIGKILL → 128 + 9');
  // A long poll answers at once with the exit, instead of waiting out waitMs.
  const read = await withTimeout(rpc.call('process/read', { processId: 'victim', afterSeq: exited.seq - 1, waitMs: 20_000 }), 10_000, () => 'process/read after exit');
  assert.equal((read.result as { exited: boolean }).exited, true, JSON.stringify(read));

  // The orphaned `sleep 300` may keep the pipe open; shutdown must still not leave it behind.
  rpc.ws.close();
  await cli.stop();
  try {
    await waitFor(() => grandchildren.every((p) => !isAlive(p)), { what: `grandchildren ${grandchildren} to be gone`, timeout: 10_000 });
  } finally {
    for (const p of grandchildren) if (isAlive(p)) process.kill(p, 'SIGKILL'); // never leak from the test itself
  }
});

test('writes into a directory the server cannot write: clear -32600, nothing created, existing file untouched', async () => {
  // As root, permissions would not apply: run the server as `nobody` so the directory is really read-only to it.
  const ro = path.join(dir, 'readonly');
  mkdirSync(ro);
  writeFileSync(path.join(ro, 'keep.txt'), 'original');
  chmodSync(ro, 0o755);
  const asNobody = process.getuid?.() === 0;
  if (!asNobody) {
    chmodSync(path.join(ro, 'keep.txt'), 0o444);
    chmodSync(ro, 0o555);
  }
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0'], { cwd: dir, user: asNobody ? { uid: 65534, gid: 65534 } : undefined });
  const rpc = await openRpc(cli.url);
  const u = (name: string) => pathToFileURL(path.join(ro, name)).href;
  const attempts: Array<[string, unknown]> = [
    ['fs/writeFile', { path: u('new.txt'), dataBase64: Buffer.from('x').toString('base64') }],
    ['fs/writeFile', { path: u('keep.txt'), dataBase64: Buffer.from('clobbered!').toString('base64') }],
    ['fs/createDirectory', { path: u('sub/deeper'), recursive: true }],
    ['fs/remove', { path: u('keep.txt'), recursive: false, force: false }],
    ['fs/copy', { sourcePath: u('keep.txt'), destinationPath: u('copy.txt'), recursive: false }],
    ['fs/rename', { sourcePath: u('keep.txt'), destinationPath: u('renamed.txt') }],
  ];
  for (const [method, params] of attempts) {
    const reply = await rpc.call(method, params);
    const err = reply.error as { code: number; message: string } | undefined;
    assert.ok(err, `${method} should fail: ${JSON.stringify(reply)}`);
    assert.equal(err.code, -32600, `${method}: ${err.message}`);
    assert.match(err.message, /permission denied|EACCES|not permitted/i, `${method}: ${err.message}`);
  }
  assert.deepEqual(readdirSync(ro), ['keep.txt'], 'nothing was created');
  assert.equal(readFileSync(path.join(ro, 'keep.txt'), 'utf8'), 'original', 'existing file untouched');
  rpc.ws.close();
  await cli.stop();
});

test('server SIGKILLed under a connected client: pending calls fail with "connection closed", no hang', async () => {
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0']);
  const client = await connectWebSocket(cli.url, { reconnect: false, clientName: 'faults' });
  let orphans: number[] = [];
  try {
    const proc = await client.startProcess({ argv: ['/bin/sleep', '30'], cwd: dir, env: {} });
    proc.exited.catch(() => {}); // observed below; must not become an unhandled rejection
    proc.closed.catch(() => {});
    // Two long polls in flight when the server dies.
    const pending = client.request('process/read', { processId: proc.processId, afterSeq: 0, waitMs: 25_000 });
    const pending2 = client.request('process/read', { processId: proc.processId, afterSeq: 0, waitMs: 25_000 });
    pending2.catch(() => {});
    // Once a later call on the same socket is answered, both long polls have reached the server
    // (it reads a connection in order); then kill it without a chance to answer them.
    await client.request('environment/status', null);
    orphans = childPids(cli.child.pid!);
    assert.equal(orphans.length, 1, 'the sleep child is running');
    cli.child.kill('SIGKILL');
    const err = await withTimeout(pending.then(() => undefined, (e: unknown) => e), 10_000, () => 'pending process/read');
    assert.ok(err instanceof RpcError, `expected RpcError, got ${String(err)}`);
    assert.equal(err.code, ErrorCodes.ConnectionClosed);
    const err2 = await withTimeout(pending2.then(() => undefined, (e: unknown) => e), 10_000, () => 'second pending call');
    assert.equal((err2 as RpcError | undefined)?.code, ErrorCodes.ConnectionClosed);
    // New calls fail fast too, and the process handle does not leave waiters hanging forever.
    await assert.rejects(withTimeout(client.request('environment/status', null), 10_000, () => 'call after death'));
    await withTimeout(proc.closed.then(() => undefined, () => undefined), 10_000, () => 'process handle to settle');
  } finally {
    await client.close().catch(() => {});
    await cli.stop();
  }
  // A SIGKILLed server cannot reap its children: kill the test's own leftovers (recorded before the kill).
  for (const p of orphans) if (isAlive(p)) process.kill(p, 'SIGKILL');
});
