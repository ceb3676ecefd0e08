// A sandbox whose setup fails before its command runs (src/server/sandbox/setup-retry.ts).
// bubblewrap gives up on its whole setup when one mount fails, and a read-only carve-out is a
// path someone else may remove while bwrap mounts it (a `.git` of another program's temp dir: the
// sandbox writes /tmp). In three CI-like runs an agent's `echo before; sleep 30` got bwrap's one
// line ("Can't bind mount …") and exit 1 instead (test/scratch reproduction: 1 start in 40 while
// another process re-creates repositories in /tmp). Here bwrap's setup is made to fail on demand:
// a stand-in runs the real bubblewrap with one more read-only bind whose source is gone, so it
// ends during setup, with its own message and exit 1, exactly as in that race. Real bubblewrap
// otherwise, pipes and PTYs. The retry is the engine's (no process of its own around bwrap), so
// what a wrapper process kept by being the only parent is checked too: stdin written while the
// tries go on reaches the command once, a kill ends the tries, the size of the terminal holds.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { SANDBOX_READY, SETUP_TRIES } from '../../../src/server/sandbox/bwrap';
import { sandboxSupport } from '../../../src/server/sandbox/support';
import { childPids, cmdline, pidsWith } from '../../support/process';
import { b64, serverWithTmpDir, startParams, uri, type Client } from '../../support/server';
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
/** Seconds every start of the stand-in waits before it runs bubblewrap (a slow setup). */
const delay = path.join(fakeDir, 'delay');
/** A line the stand-in writes on its stderr before the real bubblewrap runs (a warning of bwrap's). */
const warn = path.join(fakeDir, 'warn');

/** The real bubblewrap the stand-in runs. */
let real: string;

before(async () => {
  real = (await sandboxSupport()).ok ? ((await sandboxSupport()) as { tools: { bwrap: string } }).tools.bwrap : '/usr/bin/bwrap';
  const fake = path.join(fakeDir, 'bwrap');
  // The next N starts (N in `fail-next`) fail in bubblewrap's setup, before anything runs.
  fs.writeFileSync(
    fake,
    `#!/bin/sh\necho >> ${calls}\nsleep $(cat ${delay} 2>/dev/null || echo 0)\ncat ${warn} >&2 2>/dev/null\nn=$(cat ${arm} 2>/dev/null || echo 0)\nif [ "$n" -gt 0 ]; then\n  echo $((n - 1)) > ${arm}\n  exec ${real} --ro-bind ${fakeDir}/gone ${fakeDir}/gone "$@"\nfi\nexec ${real} "$@"\n`,
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

for (const tty of [false, true]) {
  test(`sandboxed ${tty ? 'PTY' : 'pipe'}: a command that fails by itself (exit 1, a "bwrap:" line on stderr; or nothing at all) is never started again`, async () => {
    const id = `once-${tty ? 'pty' : 'pipe'}`;
    const r = await run(id, `echo ran >> ${id}; echo "bwrap: Can't bind mount x: No such file or directory" >&2; exit 1`, 0, tty);
    assert.equal(ran(id), 1);
    assert.equal(r.exitCode, 1);
    assert.equal(r.out.replace(/\r/g, ''), "bwrap: Can't bind mount x: No such file or directory\n");
    assert.equal(r.calls, 1);
    // Its ready line the last thing on the terminal (nothing after it): still read.
    const silent = await run(`${id}-silent`, `echo ran >> ${id}-silent; exit 1`, 0, tty);
    assert.deepEqual([ran(`${id}-silent`), silent.exitCode, silent.out, silent.calls], [1, 1, '', 1]);
  });
}

/** The stream's text of process `id` (stdout, stderr or pty). */
const streamText = (id: string, stream: string) =>
  Buffer.concat(c.sink.forProcess(id).filter((e) => e.method === 'process/output' && e.params.stream === stream).map((e) => Buffer.from(e.params.chunk, 'base64'))).toString();

/** Runs `body` with the stand-in slowed down by `seconds` (and `warning` written by it). */
async function slowed<T>(seconds: number, body: () => Promise<T>, warning = ''): Promise<T> {
  fs.writeFileSync(delay, String(seconds));
  fs.writeFileSync(warn, warning);
  try {
    return await body();
  } finally {
    fs.writeFileSync(delay, '0');
    fs.writeFileSync(warn, '');
    fs.writeFileSync(arm, '0');
  }
}

for (const tty of [false, true]) {
  test(`sandboxed ${tty ? 'PTY' : 'pipe'}: stdin written while the setup is tried again reaches the command once, after the tries; so does its end (pipe)${tty ? ", and the terminal's size asked for meanwhile holds" : ''}`, () =>
    slowed(0.3, async () => {
      const id = `stdin-${tty ? 'pty' : 'pipe'}`;
      fs.writeFileSync(calls, '');
      fs.writeFileSync(arm, '2');
      const script = tty ? `read l; echo "got:$l"; stty size; echo ran >> ${id}` : `read l; echo "got:$l"; cat; echo "eof"; echo ran >> ${id}`;
      // --norc: Debian's bash reads ~/.bashrc when its stdin is a socket (the pipe).
      await c.call('process/start', startParams(id, ['/bin/bash', '--norc', '-c', script], { cwd: uri(W), sandbox: sandbox(), tty, pipeStdin: !tty, rows: 30, cols: 100 }));
      // Well before the first try's bubblewrap even runs (each waits 0.3 s).
      await c.call('process/write', { processId: id, chunk: b64(tty ? 'hello\r' : 'hello\nmore\n'), writeId: '1' });
      if (tty) await c.call('process/resize', { processId: id, rows: 40, cols: 120 });
      else await c.call('process/closeStdin', { processId: id });
      await c.sink.waitFor(() => c.sink.closed(id), 30_000, `${id} closed`);
      const out = c.sink.outputText(id).replace(/\r/g, '');
      assert.equal(fs.readFileSync(calls, 'utf8').length, 3, 'two failed setups, then the one that ran');
      assert.equal(ran(id), 1);
      if (tty) {
        // The terminal echoes the line once (it is written once), then the command's lines.
        assert.equal(out, 'hello\ngot:hello\n40 120\n');
      } else {
        assert.equal(out, 'got:hello\nmore\neof\n');
      }
    }));
}

test('sandboxed: terminate while the setup is being tried again ends the tries; nothing ran, nothing is left', () =>
  slowed(0.5, async () => {
    fs.writeFileSync(calls, '');
    fs.writeFileSync(arm, '99');
    await c.call('process/start', startParams('stopped', ['/bin/bash', '-c', 'echo ran >> stopped'], { cwd: uri(W), sandbox: sandbox() }));
    // The second try, in its wait before bubblewrap.
    await waitFor(() => fs.readFileSync(calls, 'utf8').length === 2, { timeout: 10_000, what: 'the second try' });
    assert.deepEqual(await c.call('process/terminate', { processId: 'stopped' }), { running: true });
    await c.sink.waitFor(() => c.sink.closed('stopped'), 10_000, 'stopped closed');
    const ex = c.sink.forProcess('stopped').find((e) => e.method === 'process/exited')!;
    assert.equal(ex.params.exitCode, 137);
    assert.doesNotMatch(c.sink.outputText('stopped'), /could not be set up/);
    // A third try would have been spawned before the close; a later start (its stand-in's first
    // line) comes after it in the calls file.
    fs.writeFileSync(arm, '0');
    await c.call('process/start', startParams('later', ['/bin/true'], { cwd: uri(W), sandbox: sandbox() }));
    await c.sink.waitFor(() => c.sink.closed('later'), 10_000, 'later closed');
    assert.equal(fs.readFileSync(calls, 'utf8').length, 3, 'no try after the kill: two tries, then the later start');
    assert.equal(ran('stopped'), 0);
    assert.deepEqual(pidsWith(fakeDir), [], "nothing of the stand-in's tries is left");
  }));

test("sandboxed pipe: what bubblewrap says before a setup that works is passed on (stderr), the ready line is not; the command's own line that reads like it is its own", () =>
  slowed(
    0,
    async () => {
      fs.writeFileSync(arm, '1');
      await c.call('process/start', startParams('warned', ['/bin/bash', '-c', `printf '%s\\n' '${SANDBOX_READY}' >&2; echo out`], { cwd: uri(W), sandbox: sandbox() }));
      await c.sink.waitFor(() => c.sink.closed('warned'), 30_000, 'warned closed');
      // Both tries warned; the failed one's warning went with its failure.
      assert.equal(streamText('warned', 'stderr'), `bwrap: a warning\n${SANDBOX_READY}\n`);
      assert.equal(streamText('warned', 'stdout'), 'out\n');
    },
    'bwrap: a warning\n',
  ));

test('sandboxed: killed with its server (SIGKILL), the sandbox goes too: bubblewrap is the server\'s own child (no process between them), tied to it by --die-with-parent', async () => {
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
    assert.ok(
      childPids(child.pid!).some((p) => cmdline(p).startsWith(`${real} `) && cmdline(p).includes(token)),
      `bubblewrap is the server's child: ${childPids(child.pid!).map(cmdline).join(' | ')}`,
    );
    child.kill('SIGKILL');
    // The sleep and bwrap (each names the command in its arguments).
    await waitFor(() => pidsWith(`/bin/sleep ${token}`).length === 0, { timeout: 10_000, what: 'everything of the sandbox to die with its server' });
  } finally {
    child.kill('SIGKILL');
  }
});

test("sandboxed pipe: stdout and stderr arrive in the order the command wrote them, either way round (the ready line has a pipe of its own: on stderr it made stderr readable first, and a later stderr line was read with it, before an earlier stdout line)", async () => {
  for (let i = 0; i < 10; i++) {
    for (const [script, want] of [
      ['echo out; echo err >&2', 'out\nerr\n'],
      ['echo err >&2; echo out', 'err\nout\n'],
    ]) {
      const id = `order-${i}-${want[0]}`;
      await c.call('process/start', startParams(id, ['/bin/bash', '-c', script], { cwd: uri(W), sandbox: sandbox() }));
      await c.sink.waitFor(() => c.sink.closed(id), 30_000, `${id} closed`);
      assert.equal(c.sink.outputText(id), want, `round ${i}`);
    }
  }
});
