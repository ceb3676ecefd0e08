// A sandbox whose setup fails before its command runs (src/server/sandbox/bwrap.ts
// SETUP_SCRIPT). bubblewrap gives up on its whole setup when one mount fails, and a read-only
// carve-out is a path someone else may remove while bwrap mounts it (a `.git` of another
// program's temp dir: the sandbox writes /tmp). In three CI-like runs an agent's
// `echo before; sleep 30` got bwrap's one line ("Can't bind mount …") and exit 1 instead
// (test/scratch reproduction: 1 start in 40 while another process re-creates repositories in
// /tmp). Here bwrap's setup is made to fail on demand: a stand-in runs the real bubblewrap with
// one more read-only bind whose source is gone, so it ends during setup, with its own message
// and exit 1, exactly as in that race. Real bubblewrap otherwise, pipes and PTYs.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { SETUP_NAME, SETUP_TRIES } from '../../../src/server/sandbox/bwrap';
import { sandboxSupport } from '../../../src/server/sandbox/support';
import { childPids, cmdline, pidsWith } from '../../support/process';
import { serverWithTmpDir, startParams, uri, type Client } from '../../support/server';
import { tempDir } from '../../support/tmp';
import { waitFor } from '../../support/wait';

let c: Client;
let dir: string;
let close: () => Promise<void>;
let W: string;
const saved = process.env.EXEC_SERVER_BWRAP;
const fakeDir = tempDir('es-bwrap-stand-in-');
const arm = path.join(fakeDir, 'fail-next');
const calls = path.join(fakeDir, 'calls');

before(async () => {
  const real = (await sandboxSupport()).ok ? ((await sandboxSupport()) as { tools: { bwrap: string } }).tools.bwrap : '/usr/bin/bwrap';
  const fake = path.join(fakeDir, 'bwrap');
  // The next N starts (N in `fail-next`) fail in bubblewrap's setup, before anything runs.
  fs.writeFileSync(
    fake,
    `#!/bin/sh\necho >> ${calls}\nn=$(cat ${arm} 2>/dev/null || echo 0)\nif [ "$n" -gt 0 ]; then\n  echo $((n - 1)) > ${arm}\n  exec ${real} --ro-bind ${fakeDir}/gone ${fakeDir}/gone "$@"\nfi\nexec ${real} "$@"\n`,
    { mode: 0o755 },
  );
  process.env.EXEC_SERVER_BWRAP = fake;
  ({ c, dir, close } = await serverWithTmpDir());
  W = path.join(dir, 'work');
  fs.mkdirSync(W, { recursive: true });
});
after(async () => {
  await close();
  if (saved === undefined) delete process.env.EXEC_SERVER_BWRAP;
  else process.env.EXEC_SERVER_BWRAP = saved;
});

const sandbox = () => managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W) });

async function run(id: string, script: string, failures: number, tty = false): Promise<{ out: string; exitCode: number; calls: number }> {
  fs.writeFileSync(calls, '');
  fs.writeFileSync(arm, String(failures));
  await c.call('process/start', startParams(id, ['/bin/bash', '-c', script], { cwd: uri(W), sandbox: sandbox(), tty }));
  await c.sink.waitFor(() => c.sink.closed(id), 30_000, `${id} closed`);
  const ex = c.sink.forProcess(id).find((e) => e.method === 'process/exited')!;
  fs.writeFileSync(arm, '0');
  return { out: c.sink.outputText(id), exitCode: ex.params.exitCode, calls: fs.readFileSync(calls, 'utf8').length };
}

const ran = (id: string) => (fs.existsSync(path.join(W, id)) ? fs.readFileSync(path.join(W, id), 'utf8').split('\n').filter(Boolean).length : 0);

for (const tty of [false, true]) {
  test(`sandboxed ${tty ? 'PTY' : 'pipe'}: a setup that fails before the command runs is done again; the client gets only the command's output, and it ran once`, async () => {
    const id = `retry-${tty ? 'pty' : 'pipe'}`;
    const r = await run(id, `echo before; echo ran >> ${id}; sleep 0.3; echo after >&2`, 2, tty);
    assert.equal(r.out.replace(/\r/g, ''), 'before\nafter\n', `bubblewrap's setup message is not the command's output: ${JSON.stringify(r.out)}`);
    assert.equal(r.exitCode, 0);
    assert.equal(ran(id), 1);
    assert.equal(r.calls, 3, 'two failed setups, then the one that ran');
  });
}

test('sandboxed: a setup that keeps failing ends in one line that says why and that nothing ran; bubblewrap tried SETUP_TRIES times', async () => {
  const r = await run('never', 'echo ran >> never', 99);
  assert.match(r.out, /^exec-server: the sandbox could not be set up, so the command did not run \(bubblewrap failed 5 times; the last time: bwrap: Can't find source path [^\n]*\/gone: No such file or directory\)\n$/);
  assert.equal(SETUP_TRIES, 5);
  assert.equal(r.exitCode, 1);
  assert.equal(ran('never'), 0);
  assert.equal(r.calls, SETUP_TRIES);
});

test('sandboxed: a command that fails by itself (exit 1, a "bwrap:" line on stderr) is never started again', async () => {
  const r = await run('once', 'echo ran >> once; echo "bwrap: Can\'t bind mount x: No such file or directory" >&2; exit 1', 0);
  assert.equal(ran('once'), 1);
  assert.equal(r.exitCode, 1);
  assert.equal(r.out, "bwrap: Can't bind mount x: No such file or directory\n");
  assert.equal(r.calls, 1);
});

test('sandboxed: killed with its server (SIGKILL), the sandbox and its setup wrapper go too', async () => {
  const token = `${process.pid}.${Date.now() % 100_000}`;
  const src = path.resolve(__dirname, '../../../src/server/exec-server.js');
  // A server of its own in a child process, started as any embedding would.
  const script = `
    const { ExecServer } = require(${JSON.stringify(src)});
    const s = new ExecServer({});
    const conn = s.connect({ notify() {} }, { label: 'x' });
    (async () => {
      await conn.requestUntyped('initialize', { clientName: 'x' });
      conn.notification('initialized', {});
      await conn.requestUntyped('process/start', ${JSON.stringify(startParams('long', ['/bin/sleep', token], { cwd: uri(dir), sandbox: managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(dir) }) }))});
      console.log('started');
    })().catch((e) => { console.error(e); process.exit(2); });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, EXEC_SERVER_BWRAP: process.env.EXEC_SERVER_BWRAP } });
  try {
    await waitFor(() => pidsWith(`/bin/sleep ${token}`).some((p) => cmdline(p) === `/bin/sleep ${token}`), { timeout: 20_000, what: 'the sandboxed sleep' });
    assert.ok(childPids(child.pid!).some((p) => cmdline(p).includes(SETUP_NAME)), 'the sandbox runs under its setup wrapper');
    child.kill('SIGKILL');
    // The sleep, bwrap and the wrapper (each names the command in its arguments).
    await waitFor(() => pidsWith(`/bin/sleep ${token}`).length === 0, { timeout: 10_000, what: 'everything of the sandbox to die with its server' });
  } finally {
    child.kill('SIGKILL');
  }
});
