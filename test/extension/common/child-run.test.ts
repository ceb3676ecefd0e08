// The bounded runner shared by ssh and the container CLIs, against real child processes: a
// timeout and an abort kill the child (it is gone, not left running), a stdout flood stops it,
// stderr is kept by the caller's keeper and comes line by line (a line without end in pieces,
// a UTF-8 character split across reads whole), and each failure is the caller's error.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HeadTail, runChild, type ChildRunSpec } from '../../../src/extension/common';
import { isAlive } from '../../support/process';
import { waitFor } from '../../support/wait';

class Tagged extends Error {
  constructor(readonly tag: string, message: string) {
    super(message);
  }
}

function spec(over: Partial<ChildRunSpec> = {}): ChildRunSpec {
  return {
    maxStdout: 1024 * 1024,
    stderr: new HeadTail(0, 4096),
    maxLine: 4096,
    errors: {
      spawnFailed: (e) => new Tagged('spawn', `spawn ${e.code}`),
      timedOut: (stderr, ms) => new Tagged('timeout', `after ${ms} ms: ${stderr.trim()}`),
      stdoutFlood: (max) => new Tagged('flood', `over ${max}`),
    },
    ...over,
  };
}


describe('runChild (the shared helper-program runner)', () => {
  it('runs to completion: input in, stdout, stderr and exit code out', async () => {
    const r = await runChild('sh', ['-c', 'read x; echo "got $x"; echo oops >&2; exit 3'], spec(), { input: 'hello\n' });
    assert.deepEqual(r, { code: 3, signal: null, stdout: 'got hello\n', stderr: 'oops\n' });
  });

  it('a program that is not there: the caller\'s spawn error', async () => {
    await assert.rejects(runChild('/nonexistent/tool', [], spec()), (e: Tagged) => e.tag === 'spawn' && /ENOENT/.test(e.message));
  });

  it('a timeout kills the child and rejects with the caller\'s error holding stderr so far', async () => {
    const pidFile = `/tmp/child-run-${process.pid}-t`;
    const t0 = Date.now();
    await assert.rejects(runChild('sh', ['-c', `echo $$ > ${pidFile}; echo waiting >&2; exec sleep 30`], spec(), { timeoutMs: 500 }), (e: Tagged) => e.tag === 'timeout' && /after 500 ms: waiting/.test(e.message));
    assert.ok(Date.now() - t0 < 5000);
    const { readFileSync, rmSync } = await import('node:fs');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    rmSync(pidFile);
    await waitFor(() => !isAlive(pid), { timeout: 5_000, what: `pid ${pid} to be gone after the timeout` });
  });

  it('an abort kills the child', async () => {
    const ac = new AbortController();
    const p = runChild('sleep', ['30'], spec(), { signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    await assert.rejects(p, /cancelled/);
    const pre = new AbortController();
    pre.abort();
    await assert.rejects(runChild('sleep', ['30'], spec(), { signal: pre.signal }), /cancelled/);
  });

  it('stdout past the cap stops the child with the caller\'s flood error (memory stays bounded)', async () => {
    await assert.rejects(runChild('sh', ['-c', 'exec yes'], spec({ maxStdout: 64 * 1024 }), { timeoutMs: 10_000 }), (e: Tagged) => e.tag === 'flood' && e.message === `over ${64 * 1024}`);
  });

  it('stderr: the keeper decides (head and tail, or the tail only); lines come one by one, a line without end in pieces', async () => {
    const script = 'i=0; while [ $i -lt 2000 ]; do echo "line $i" >&2; i=$((i+1)); done';
    const ht = await runChild('sh', ['-c', script], spec({ stderr: new HeadTail(100, 100) }));
    assert.match(ht.stderr, /^line 0\nline 1\n[\s\S]*\n…\n[\s\S]*line 1999\n$/);
    assert.ok(ht.stderr.length < 64 * 1024 + 300, `bounded: ${ht.stderr.length}`);
    const tailOnly = await runChild('sh', ['-c', script], spec({ stderr: new HeadTail(0, 100) }));
    assert.ok(!tailOnly.stderr.includes('line 0\n') && tailOnly.stderr.endsWith('line 1999\n') && !tailOnly.stderr.includes('…'));
    const lines: string[] = [];
    await runChild('sh', ['-c', `${script}; head -c 300000 /dev/zero | tr '\\0' x >&2`], spec({ maxLine: 4096 }), { onStderr: (l) => lines.push(l) });
    assert.equal(lines.filter((l) => l.startsWith('line ')).length, 2000);
    const long = lines.filter((l) => l.startsWith('x'));
    assert.ok(long.length >= 2 && long.every((l) => l.length <= 4096 + 65536), `pieces: ${long.map((l) => l.length)}`);
  });

  it('stderr: a line without end after a finished one in the same read is cut at once, not held until its end', async () => {
    // One write: "a\n" and 8000 x's (a read of its own, as a single write to an empty pipe is);
    // "y\n" 300 ms later. The x's used to wait for the "y\n" and come as one 8001-character line.
    const got: { line: string; at: number }[] = [];
    const t0 = Date.now();
    await runChild('sh', ['-c', `printf 'a\\n%s' "$(head -c 8000 /dev/zero | tr '\\0' x)" >&2; sleep 0.3; printf 'y\\n' >&2`], spec({ maxLine: 4096 }), { onStderr: (line) => got.push({ line, at: Date.now() - t0 }) });
    const lines = got.map((g) => g.line);
    assert.equal(lines[0], 'a');
    assert.equal(lines.at(-1), 'y');
    assert.equal(lines.slice(1, -1).join(''), 'x'.repeat(8000), JSON.stringify(lines.map((l) => l.length)));
    const firstX = got[1];
    assert.ok(firstX.at < got.at(-1)!.at - 150, `the first piece came ${firstX.at} ms in, "y" at ${got.at(-1)!.at} ms`);
  });

  it('stderr: a last line without a newline still reaches onStderr', async () => {
    const lines: string[] = [];
    await runChild('sh', ['-c', "printf 'first\\nlast without end' >&2"], spec(), { onStderr: (l) => lines.push(l) });
    assert.deepEqual(lines, ['first', 'last without end']);
  });

  it('a UTF-8 character split across two stderr reads reaches onStderr whole', async () => {
    const lines: string[] = [];
    // "é" is 0xc3 0xa9: the first byte, a pause (a read of its own), then the second.
    await runChild('sh', ['-c', "printf '\\303' >&2; sleep 0.3; printf '\\251 ok\\n' >&2"], spec(), { onStderr: (l) => lines.push(l) });
    assert.deepEqual(lines, ['é ok']);
  });
});
