// The Pseudoterminal adapter against a real in-process ExecServer (real PTYs and pipes).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ExecServerClient } from '../../../src/client/client';
import { connectInProcess } from '../../../src/client/connect';
import { ExecServer } from '../../../src/server/exec-server';
import { ExecTerminal, type ExecTerminalOptions, type TerminalDimensions } from '../../../src/extension/terminals/exec-terminal';
import { waitFor } from '../../support/wait';

let server: ExecServer;
let client: ExecServerClient;
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };

before(async () => {
  server = new ExecServer();
  client = await connectInProcess(server, { clientName: 'vscode-terminal-test' });
});
after(async () => {
  await client.close();
  await server.shutdown();
});

/** Opens a terminal over argv and records what it writes and how it closes. */
function open(argv: string[], mode: 'pty' | 'pipe', dims?: TerminalDimensions, extra: Partial<ExecTerminalOptions> = {}) {
  let out = '';
  let writes = 0;
  const closes: (number | void)[] = [];
  const term = new ExecTerminal({
    mode,
    start: (d) => client.startProcess({ argv, cwd: '/tmp', env, tty: mode === 'pty', pipeStdin: mode === 'pipe', rows: d?.rows, cols: d?.columns }),
    ...extra,
  });
  term.onDidWrite((t) => {
    out += t;
    writes++;
  });
  term.onDidClose((c) => closes.push(c));
  term.open(dims);
  return { term, output: () => out, writes: () => writes, closes };
}

describe('exec terminal (pty mode)', () => {
  it('starts with the initial dimensions and closes with the exit code', async () => {
    const t = open(['/bin/sh', '-c', 'stty size; exit 3'], 'pty', { rows: 33, columns: 101 });
    const r = await t.term.result;
    assert.equal(r.exitCode, 3);
    assert.match(t.output(), /33 101/);
    assert.deepEqual(t.closes, [3], 'onDidClose fired once with the exit code, after the output');
  });

  it('forwards input to the PTY and resizes on setDimensions', async () => {
    const t = open(['/bin/sh'], 'pty', { rows: 24, columns: 80 });
    t.term.handleInput('echo "sum-$((6*7))"\r');
    await waitFor(() => t.output().includes('sum-42'), { what: 'echo output' });
    t.term.setDimensions({ rows: 40, columns: 120 });
    // The resize request may still be in flight: ask until the shell sees the new size.
    await waitFor(() => {
      t.term.handleInput('stty size\r');
      return /40 120/.test(t.output());
    }, { what: 'new size', interval: 20 });
    t.term.handleInput('exit 7\r');
    assert.equal((await t.term.result).exitCode, 7);
    assert.deepEqual(t.closes, [7]);
  });

  it('closing the terminal terminates the process', async () => {
    const t = open(['/bin/sh', '-c', 'echo up; sleep 60'], 'pty');
    await waitFor(() => t.output().includes('up'), { what: 'started' });
    const h = t.term.processHandle!;
    t.term.close();
    const code = await h.exited;
    assert.notEqual(code, 0);
    assert.deepEqual(t.closes, [], 'no onDidClose after the user closed the terminal');
  });

  it('a start failure is shown in the terminal and does not throw', async () => {
    const t = open(['/nonexistent/binary-xyz'], 'pty');
    const r = await t.term.result;
    assert.equal(r.exitCode, undefined);
    assert.ok(r.error);
    assert.match(t.output(), /could not start the process/);
    t.term.handleInput('x'); // any key closes it
    assert.deepEqual(t.closes, [undefined]);
  });

  it('a large PTY output arrives complete with the default coalescing (bounded writes)', async () => {
    const size = 16 * 1024 * 1024;
    const writes: number[] = [];
    // The process exits right after its last write: the tail must still arrive.
    let delivered = 0;
    const t = open(['/bin/sh', '-c', `head -c ${size} /dev/zero | tr '\\0' b; exit 0`], 'pty', undefined, {
      onStarted: (h) => void h.onOutput((e) => (delivered += e.data.length)),
    });
    t.term.onDidWrite((w) => writes.push(w.length));
    assert.equal((await t.term.result).exitCode, 0);
    assert.equal(t.output().match(/b+/)![0].length, delivered, 'every byte the process handle delivered reached the terminal');
    assert.equal(delivered, size);
    assert.ok(Math.max(...writes) <= 64 * 1024, 'each write stays within the default bound');
    assert.ok(writes.length < size / 1024, `${writes.length} writes`);
  });

  it('multi-byte output from a real process arrives uncorrupted', async () => {
    // 20 000 × "é😀" through a PTY: characters are split across chunk boundaries.
    const t = open(['/bin/sh', '-c', 'i=0; while [ $i -lt 200 ]; do printf "%0100d" 0 | sed "s/0/é😀/g"; i=$((i+1)); done; printf "\\nEND\\n"'], 'pty');
    await t.term.result;
    const body = t.output().replace(/\r?\n?END[\s\S]*$/, '');
    assert.equal(body, 'é😀'.repeat(20_000));
    assert.ok(!t.output().includes('\ufffd'));
  });
});

describe('exec terminal (pipe mode)', () => {
  it('streams a large output completely in bounded writes and keeps the terminal open', async () => {
    const size = 8 * 1024 * 1024;
    const t = open(['/bin/sh', '-c', `head -c ${size} /dev/zero | tr '\\0' a`], 'pipe', undefined, {
      coalescer: { maxCharsPerFlush: 256 * 1024, intervalMs: 1 },
    });
    const r = await t.term.result;
    assert.equal(r.exitCode, 0);
    const text = t.output();
    const as = text.match(/a+/)![0];
    assert.equal(as.length, size, 'every byte reached the terminal');
    assert.ok(t.writes() < 200, `coalesced (${t.writes()} writes for ${size} bytes)`);
    assert.match(text, /process exited with code 0/);
    assert.deepEqual(t.closes, [], 'stays open after exit');
    t.term.handleInput('q');
    assert.deepEqual(t.closes, [undefined], 'a key closes it');
  });

  it('Ctrl+C interrupts the process; LF becomes CRLF; input reaches stdin', async () => {
    const t = open(['/bin/sh', '-c', 'read line; echo "got:$line"; trap "echo interrupted; exit 9" INT; while :; do sleep 0.1; done'], 'pipe');
    t.term.handleInput('hello\r');
    await waitFor(() => t.output().includes('got:hello\r\n'), { what: 'echo of stdin' });
    await waitFor(() => {
      t.term.handleInput('\x03');
      return t.output().includes('interrupted');
    }, { what: 'interrupt', interval: 20 });
    assert.equal((await t.term.result).exitCode, 9);
  });
});
