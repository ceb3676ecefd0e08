// The command transport: spawning `node dist/cli.js --listen stdio://` (as one would spawn
// `ssh host npx exec-server --listen stdio://`) — lifecycle of the child, stderr, failures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RpcChannel } from '../../src/rpc/channel';
import type { CloseInfo } from '../../src/rpc/transport';
import { ExecServerClient } from '../../src/client/client';
import { connectCommand } from '../../src/client/connect';
import { spawnCommandTransport } from '../../src/transports/command';
import { cliPath, repoRoot } from '../support/cli';
import { isAlive } from '../support/process';
import { tempDir } from '../support/tmp';
import { waitFor } from '../support/wait';

if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` first`);

test('command: the server child runs while connected and dies when the client closes', async () => {
  const { transport, child, exited } = await spawnCommandTransport(process.execPath, [cliPath, '--listen', 'stdio://']);
  const client = await ExecServerClient.connect(async () => new RpcChannel(transport));
  assert.ok(isAlive(child.pid!));
  assert.equal((await client.request('environment/status', null)).status, 'ready');
  await client.close();
  const r = await exited;
  assert.ok(r.code === 0 || r.signal !== null, JSON.stringify(r));
  assert.equal(isAlive(child.pid!), false);
});

test('command: the child is killed when the parent process exits abruptly', async (t) => {
  const dir = tempDir('cmd-exit-', { t });
  const script = path.join(dir, 'parent.js');
  writeFileSync(
    script,
    `const { spawnCommandTransport } = require(${JSON.stringify(path.join(repoRoot, 'out/src/transports/command.js'))});
     spawnCommandTransport(process.execPath, [${JSON.stringify(cliPath)}, '--listen', 'stdio://']).then(({ child }) => {
       console.log(child.pid);
       setTimeout(() => process.exit(0), 200); // exit without closing anything
     });`,
  );
  const parent = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  parent.stdout.on('data', (d) => (out += d));
  await new Promise((r) => parent.once('exit', r));
  const pid = Number(out.trim());
  assert.ok(pid > 0, `child pid printed (${out})`);
  await waitFor(() => !isAlive(pid), { what: `server child ${pid} gone after parent exit` });
});

test('command: a command that cannot be spawned rejects clearly', async () => {
  await assert.rejects(connectCommand('/nonexistent/exec-server-xyz', []), /cannot start \/nonexistent\/exec-server-xyz: no such file/);
});

test('command: a command not on PATH says so (not "spawn … ENOENT")', async () => {
  await assert.rejects(connectCommand('exec-server-not-installed-xyz', []), (e: Error) => /cannot start exec-server-not-installed-xyz: not found on PATH/.test(e.message) && !/ENOENT/.test(e.message));
});

test('command: a command that is not an exec-server fails at its first non-protocol line, quoting it (not at the initialize timeout)', async () => {
  const started = Date.now();
  await assert.rejects(
    connectCommand(process.execPath, ['-e', 'console.log(""); console.log("Welcome to the build box"); setTimeout(() => {}, 30_000)'], { initializeTimeoutMs: 20_000 }),
    /is not an exec-server: it printed "Welcome to the build box"/,
  );
  assert.ok(Date.now() - started < 10_000, `failed after ${Date.now() - started} ms`);
});

test('command: a command that exits before answering initialize says so at once, with its exit code', async () => {
  const started = Date.now();
  await assert.rejects(connectCommand('/bin/sh', ['-c', 'exit 3'], { initializeTimeoutMs: 20_000 }), /exited \(code 3\) before answering initialize|connection closed/);
  assert.ok(Date.now() - started < 10_000, `failed after ${Date.now() - started} ms`);
});

test('command: a command that exits instead of serving rejects with its stderr', async () => {
  await assert.rejects(
    connectCommand(process.execPath, ['-e', 'console.error("no such host"); setTimeout(() => process.exit(255), 100)']),
    /connection closed.*stderr: no such host/,
  );
});

test('command: a command that exits while another process still holds its output ends as a remote close (the peer went away), with its exit code', async () => {
  // The exit is read before any end of output (here the end comes only when the sleep does): it
  // used to close the transport as if this side had closed it, so nothing explained or resumed it.
  let sleeper = 0;
  const { transport, exited } = await spawnCommandTransport('/bin/sh', ['-c', 'sleep 30 & echo $! >&2; exit 3'], { onStderr: (l) => (sleeper = Number(l)) });
  try {
    const closed = new Promise<CloseInfo>((r) => transport.onClose(r));
    assert.deepEqual(await exited, { code: 3, signal: null });
    assert.deepEqual(await closed, { reason: 'command exited (code 3)', local: false });
  } finally {
    if (sleeper > 0) process.kill(sleeper, 'SIGKILL');
  }
});

test('command: the server dying mid-session fails the client and its processes', async () => {
  const client = await connectCommand(process.execPath, [cliPath, '--listen', 'stdio://']);
  const h = await client.startProcess({ argv: ['sleep', '30'], cwd: os.tmpdir(), env: { PATH: process.env.PATH ?? '' } });
  const states: string[] = [];
  client.onDidChangeState((s) => states.push(s));
  client.simulateDisconnect(); // SIGKILLs the server child
  let closeError: string | undefined;
  h.onClose((e) => (closeError = e.error));
  await h.closed;
  assert.match(closeError ?? '', /connection closed/);
  assert.deepEqual(states, ['failed']);
  await assert.rejects(client.request('environment/status', null), /connection closed: client is failed/);
  await client.close();
});
