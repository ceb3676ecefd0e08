// Attack (docs/security.md, "Managed sandbox"): node-pty opens a terminal's master descriptor without close-on-exec, so
// every child the engine starts while a PTY process runs inherited it. An unsandboxed child
// (an approved agent command) could then write into the master, i.e. type into another
// terminal (the user's own Local shell runs in the same engine process). The victim here is a
// PTY running `cat`, whose output echoes whatever reaches its terminal; the attackers are a
// pipe child and a PTY child that write a marker into every descriptor that is a PTY master.
import assert from 'node:assert/strict';
import os from 'node:os';
import { after, before, test } from 'node:test';
import { b64, serverWithTmpDir, startParams, type Client } from '../../support/server';

let c: Client;
let close: () => Promise<void>;

before(async () => {
  ({ c, close } = await serverWithTmpDir());
});
after(() => close());

// Lists the descriptors above 2 that are PTY masters (/dev/ptmx, /dev/pts/ptmx) and writes a
// marker line into each; prints what it found.
const ATTACK = [
  'import os',
  'found = []',
  'for n in os.listdir("/proc/self/fd"):',
  '  fd = int(n)',
  '  if fd <= 2: continue',
  '  try: target = os.readlink("/proc/self/fd/%d" % fd)',
  '  except OSError: continue',
  '  if target.endswith("ptmx"):',
  '    found.append(fd)',
  '    try: os.write(fd, b"INJECTED-BY-CHILD\\r")',
  '    except OSError: pass',
  'print("masters", found)',
].join('\n');

async function finished(id: string): Promise<string> {
  await c.sink.waitFor(() => c.sink.closed(id), 20_000, `${id} closed`);
  return c.sink.outputText(id);
}

test('attack: an unsandboxed child (pipes or PTY) gets no other terminal\'s PTY master and cannot type into it', async () => {
  await c.call('process/start', startParams('victim', ['cat'], { tty: true }));
  await c.call('process/write', { processId: 'victim', chunk: b64('victim-ready\r'), writeId: 'w1' });
  await c.sink.waitFor(() => c.sink.outputText('victim').includes('victim-ready'), 10_000, 'victim echo');

  await c.call('process/start', startParams('pipe-attacker', ['python3', '-c', ATTACK]));
  const pipeOut = await finished('pipe-attacker');
  await c.call('process/start', startParams('pty-attacker', ['python3', '-c', ATTACK], { tty: true }));
  const ptyOut = await finished('pty-attacker');

  // A marker written into the victim's master would come back as the victim's output (cat echoes
  // it). The terminal's input is one queue: a sentinel typed now comes back after anything injected.
  await c.call('process/write', { processId: 'victim', chunk: b64('victim-sentinel\r'), writeId: 'w2' });
  await c.sink.waitFor(() => c.sink.outputText('victim').includes('victim-sentinel'), 10_000, 'the sentinel echo');
  const victim = c.sink.outputText('victim');
  assert.doesNotMatch(victim, /INJECTED-BY-CHILD/, 'the victim terminal received typed input from another child');
  assert.match(pipeOut, /^masters \[\]$/m, `pipe child saw PTY masters: ${pipeOut}`);
  assert.match(ptyOut, /^masters \[\]\r?$/m, `PTY child saw other PTY masters: ${ptyOut}`);
  await c.call('process/terminate', { processId: 'victim' });
});

test('a PTY child still gets exactly the environment it got before (the client\'s, plus node-pty\'s TERM and PWD; the descriptor closer adds nothing), and a pipe child its arg0', async () => {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', A_B: 'x', 'WEIRD-NAME': 'y', IFS: ',', SHLVL: '7' };
  await c.call('process/start', startParams('env-pty', ['/usr/bin/env', '-0'], { tty: true, env }));
  const out = (await finished('env-pty')).split('\0').filter((l) => l.length > 0).sort();
  const expected = { ...env, TERM: 'xterm-256color', PWD: os.tmpdir() };
  assert.deepEqual(out, Object.entries(expected).map(([k, v]) => `${k}=${v}`).sort());
  await c.call('process/start', startParams('arg0-pipe', ['cat', '/proc/self/cmdline'], { arg0: 'my-arg0' }));
  assert.equal(await finished('arg0-pipe'), 'my-arg0\0/proc/self/cmdline\0');
});
