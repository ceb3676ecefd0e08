// src/server/process/spawn-pty.ts: PTY processes (size, echo, resize, interrupts, EOF, the tail of their output).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ExecServer } from '../../../src/server/exec-server';
import { MarkerFilter } from '../../../src/server/process/spawn-pty';
import { b64, connectClient, rejectsWith, startParams } from '../../support/server';
import { cmdline, descendants } from '../../support/process';
import { waitFor } from '../../support/wait';

const servers: ExecServer[] = [];
after(async () => {
  for (const s of servers) await s.shutdown();
});
async function client() {
  const s = new ExecServer();
  servers.push(s);
  return connectClient(s);
}

test('PTY: initial rows/cols, echo of input, stty size after resize', async () => {
  const c = await client();
  await c.call('process/start', startParams('t', ['/bin/sh'], { tty: true, rows: 30, cols: 100 }));
  const w = (s: string, id: string) => c.call('process/write', { processId: 't', chunk: b64(s), writeId: id });
  assert.deepEqual(await w('stty size\n', '1'), { status: 'accepted' });
  await c.sink.waitFor(() => c.sink.outputText('t').includes('30 100'), 15_000, 'initial size');
  assert.ok(c.sink.forProcess('t').every((e) => e.method !== 'process/output' || e.params.stream === 'pty'));
  // The terminal echoes what we type.
  await w('echo hello-$((6*7))\n', '2');
  await c.sink.waitFor(() => c.sink.outputText('t').includes('hello-42'));
  assert.ok(c.sink.outputText('t').includes('echo hello-$((6*7))'), 'input echoed by the tty');
  assert.deepEqual(await c.call('process/resize', { processId: 't', rows: 40, cols: 120 }), {});
  await w('stty size\n', '3');
  await c.sink.waitFor(() => c.sink.outputText('t').includes('40 120'), 15_000, 'resized');
  await w('exit 5\n', '4');
  await c.sink.waitFor(() => c.sink.closed('t'));
  const exited = c.sink.forProcess('t').find((e) => e.method === 'process/exited')!;
  assert.equal(exited.params.exitCode, 5);
  const seqs = c.sink.forProcess('t').map((e) => e.params.seq);
  assert.deepEqual(seqs, seqs.map((_, i) => i + 1));
});

test('PTY: interrupt reaches a shell trap', async () => {
  const c = await client();
  await c.call(
    'process/start',
    startParams('ti', ['/bin/sh', '-c', 'trap "echo trapped-int; exit 9" INT; echo armed; while :; do sleep 0.05; done'], { tty: true }),
  );
  await c.sink.waitFor(() => c.sink.outputText('ti').includes('armed'));
  await c.call('process/signal', { processId: 'ti', signal: 'interrupt' });
  await c.sink.waitFor(() => c.sink.closed('ti'));
  assert.match(c.sink.outputText('ti'), /trapped-int/);
  assert.equal(c.sink.forProcess('ti').find((e) => e.method === 'process/exited')!.params.exitCode, 9);
});

test('PTY: interrupt reaches the foreground job of an interactive shell', async () => {
  const c = await client();
  await c.call('process/start', startParams('tj', ['/bin/bash', '--norc', '--noprofile', '-i'], { tty: true }));
  const w = (s: string, id: string) => c.call('process/write', { processId: 'tj', chunk: b64(s), writeId: id });
  await w('echo sta""rted; sleep 30\n', '1');
  // Once the marker is out, bash forks sleep as the terminal's foreground job.
  await c.sink.waitFor(() => c.sink.outputText('tj').includes('started\r\n'));
  await waitFor(() => descendants(process.pid).some((p) => cmdline(p.pid) === 'sleep 30' && p.pgrp === p.tpgid), {
    what: "`sleep 30` to be the terminal's foreground job",
  });
  await c.call('process/signal', { processId: 'tj', signal: 'interrupt' });
  await w('echo after-$?\n', '2');
  // Ctrl-C semantics: the foreground sleep dies (130), the shell survives and runs the next line.
  await c.sink.waitFor(() => c.sink.outputText('tj').includes('after-130'), 15_000, 'sleep interrupted');
  await c.call('process/terminate', { processId: 'tj' });
  await c.sink.waitFor(() => c.sink.closed('tj'));
});

test('PTY: terminate, resize errors, closeStdin sends EOF', async () => {
  const c = await client();
  // cat runs under a shell: when a bare session leader exits, the terminal hang-up can race
  // its exit status (observed with node-pty alone), and that is not what is tested here.
  await c.call('process/start', startParams('cat', ['/bin/sh', '-c', 'cat; echo cat-done-$?'], { tty: true }));
  await c.call('process/write', { processId: 'cat', chunk: b64('line\n'), writeId: '1' });
  // cat echoes the line back once it is reading: then ^D is an EOF for it.
  await c.sink.waitFor(() => c.sink.outputText('cat').split('line').length >= 3, 15_000, 'cat echo');
  await c.call('process/closeStdin', { processId: 'cat' });
  await c.sink.waitFor(() => c.sink.closed('cat'), 15_000, 'cat closed');
  assert.match(c.sink.outputText('cat'), /cat-done-0/);
  assert.equal(c.sink.forProcess('cat').find((e) => e.method === 'process/exited')!.params.exitCode, 0);

  await c.call('process/start', startParams('pipe', ['sleep', '30']));
  await rejectsWith(c.call('process/resize', { processId: 'pipe', rows: 10, cols: 10 }), -32600, /not a tty/);
  await rejectsWith(c.call('process/resize', { processId: 'nope', rows: 10, cols: 10 }), -32600, 'unknown process id nope');
  await rejectsWith(c.call('process/resize', { processId: 'pipe', rows: 0, cols: 10 }), -32602, /rows must be between/);
  await rejectsWith(c.call('process/resize', { processId: 'pipe', rows: 10 }), -32602, 'missing field `cols`');
  assert.deepEqual(await c.call('process/terminate', { processId: 'pipe' }), { running: true });

  await c.call('process/start', startParams('tk', ['sleep', '30'], { tty: true }));
  assert.deepEqual(await c.call('process/terminate', { processId: 'tk' }), { running: true });
  await c.sink.waitFor(() => c.sink.closed('tk') && c.sink.closed('pipe'), 15_000, 'tk and pipe closed');
  assert.equal(c.sink.forProcess('tk').find((e) => e.method === 'process/exited')!.params.exitCode, 137);
});

test('PTY: the tail of a large output is not lost when the child exits right after writing', async () => {
  const c = await client();
  const size = 4 * 1024 * 1024;
  await c.call('process/start', startParams('big', ['/bin/sh', '-c', `head -c ${size} /dev/zero | tr '\\0' b; exit 0`], { tty: true }));
  await c.sink.waitFor(() => c.sink.closed('big'), 60_000, 'big closed');
  let count = 0;
  for (const e of c.sink.forProcess('big')) {
    if (e.method !== 'process/output') continue;
    const buf = Buffer.from(e.params.chunk, 'base64');
    for (const byte of buf) if (byte === 0x62) count++;
  }
  assert.equal(count, size, 'no byte lost');
  assert.equal(c.sink.forProcess('big').find((e) => e.method === 'process/exited')!.params.exitCode, 0);
});

test('PTY: short outputs written right before the exit all arrive (the drain starts at the exit, not 200 ms later)', async () => {
  // The exit is now seen before the terminal's last bytes may be readable: each of these writes
  // and exits at once, 8 at a time, so the exit often comes first.
  const c = await client();
  const runs = 40;
  const size = 1000;
  for (let i = 0; i < runs; i += 8) {
    const ids = Array.from({ length: Math.min(8, runs - i) }, (_, k) => `short${i + k}`);
    for (const id of ids) await c.call('process/start', startParams(id, ['/bin/sh', '-c', `head -c ${size} /dev/zero | tr '\\0' b; exit 3`], { tty: true }));
    for (const id of ids) await c.sink.waitFor(() => c.sink.closed(id), 30_000, `${id} closed`);
    for (const id of ids) {
      let count = 0;
      for (const e of c.sink.forProcess(id)) {
        if (e.method !== 'process/output') continue;
        for (const byte of Buffer.from(e.params.chunk, 'base64')) if (byte === 0x62) count++;
      }
      assert.equal(count, size, `${id}: every byte before the exit`);
      assert.equal(c.sink.forProcess(id).find((e) => e.method === 'process/exited')!.params.exitCode, 3);
    }
  }
});

test('PTY drain marker: taken out of the output wherever the reads split it, and nothing else is', () => {
  const marker = Buffer.from('\x1b]697;EXEC-SERVER-DRAIN-0123456789ABCDEF\x07', 'latin1');
  // Output that starts like the marker (an ESC, an OSC of another number) must pass untouched.
  const before = Buffer.from('hello \x1b]697;EXEC \x1b]0;title\x07 \x1b', 'latin1');
  const after = Buffer.from('from a background job\r\n', 'latin1');
  const stream = Buffer.concat([before, marker, after]);
  for (let a = 0; a <= stream.length; a++) {
    for (let b = a; b <= stream.length; b += 7) {
      const f = new MarkerFilter(marker);
      const out: Buffer[] = [];
      let foundAt = -1;
      for (const [i, part] of [stream.subarray(0, a), stream.subarray(a, b), stream.subarray(b)].entries()) {
        out.push(...f.push(part));
        if (f.found && foundAt < 0) foundAt = i;
      }
      const kept = f.flush();
      if (kept) out.push(kept);
      assert.ok(f.found, `split at ${a}/${b}: marker found`);
      assert.deepEqual(Buffer.concat(out), Buffer.concat([before, after]), `split at ${a}/${b}`);
    }
  }
  // A marker that never comes whole: what was held back as its first part is output after all.
  const f = new MarkerFilter(marker);
  const out = [...f.push(Buffer.from('tail \x1b]69', 'latin1'))];
  assert.equal(f.found, false);
  out.push(f.flush()!);
  assert.equal(Buffer.concat(out).toString('latin1'), 'tail \x1b]69');
});

test('PTY: output settings that change what the child writes (olcuc, -opost, onlcr) leave no drain marker behind', async () => {
  const c = await client();
  const cases: [string, string, RegExp][] = [
    ['olcuc', 'stty olcuc; printf "abc\\n"', /^ABC\r\n$/],
    ['raw', 'stty -opost; printf "abc\\n"', /^abc\n$/],
    ['onlcr', 'printf "a\\nb"', /^a\r\nb$/],
    ['silent', 'true', /^$/],
  ];
  for (const [id, script] of cases) await c.call('process/start', startParams(id, ['/bin/sh', '-c', script], { tty: true }));
  for (const [id, , want] of cases) {
    await c.sink.waitFor(() => c.sink.closed(id), 30_000, `${id} closed`);
    const text = c.sink
      .forProcess(id)
      .filter((e) => e.method === 'process/output')
      .map((e) => Buffer.from(e.params.chunk, 'base64').toString('latin1'))
      .join('');
    assert.match(text, want, `${id}: ${JSON.stringify(text)}`);
  }
});
