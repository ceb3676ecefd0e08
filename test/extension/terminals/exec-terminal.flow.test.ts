// Terminals acknowledge output like VS Code's own terminal (high/low watermarks): the text a
// terminal holds stays bounded whatever the child writes, the child is throttled to the pace
// the terminal writes at, every numbered line arrives once and in order, and a terminal that
// writes slowly does not slow another terminal of the same client (websocket).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ExecServerClient } from '../../../src/client/client';
import { connectWebSocket } from '../../../src/client/connect';
import type { CoalescerOptions } from '../../../src/extension/terminals/output-coalescer';
import { ExecTerminal, TERMINAL_HIGH_WATERMARK } from '../../../src/extension/terminals/exec-terminal';
import { LineChecker, numberedLines, ourWsServer, progress, settled, tmpDir } from '../../support/flow';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
/** Text a terminal may hold: the window plus one chunk read from the pipe (and its CRs in pipe mode). */
const HELD_BOUND = 2 * (TERMINAL_HIGH_WATERMARK + 64 * 1024);

function terminal(client: ExecServerClient, argv: string[], cwd: string, coalescer: CoalescerOptions) {
  const lines = new LineChecker();
  let maxHeld = 0;
  const term = new ExecTerminal({
    mode: 'pipe',
    keepOpen: false,
    coalescer,
    start: (_dims, flow) => client.startProcess({ argv, cwd, env: ENV, tty: false, ...flow }),
  });
  term.onDidWrite((t) => {
    lines.push(Buffer.from(t, 'latin1'));
    maxHeld = Math.max(maxHeld, term.pendingChars);
  });
  term.open({ rows: 24, columns: 80 });
  return { term, lines, maxHeld: () => Math.max(maxHeld, term.pendingChars) };
}

test('terminal flow control: a slow terminal throttles its child, holds a bounded amount of text, and gets every line in order', async () => {
  const dir = tmpDir();
  const s = await ourWsServer();
  const client = await connectWebSocket(s.url, { clientName: 'terminal-flow', reconnect: false });
  try {
    const total = 100_000; // 1 MB, written at ~400 KB/s by the terminal
    const file = path.join(dir, 'progress');
    const t = terminal(client, numberedLines(total, file), dir, { intervalMs: 10, maxCharsPerFlush: 4096 });
    // Throttled: while the terminal is still writing, the child is only a window or so ahead of it.
    let maxAhead = 0;
    const sampler = setInterval(() => {
      if (progress(file) < total) maxAhead = Math.max(maxAhead, progress(file) - t.lines.lines);
    }, 10);
    await t.term.result.finally(() => clearInterval(sampler));
    const r = await t.term.result;
    assert.equal(r.exitCode, 0);
    assert.equal(t.lines.error, undefined);
    assert.equal(t.lines.lines, total);
    assert.ok(t.maxHeld() <= HELD_BOUND, `terminal held at most ${t.maxHeld()} characters`);
    // Window (100 kB) + pipe buffer (64 KiB) + the child's own buffer, in 10-byte lines, plus what the coalescer holds.
    assert.ok(maxAhead * 10 <= TERMINAL_HIGH_WATERMARK + 64 * 1024 + 16 * 1024 + HELD_BOUND, `child ran ${maxAhead} lines ahead of the terminal`);
  } finally {
    await client.close();
    await s.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('terminal flow control: a terminal that writes very slowly does not slow another terminal of the same client', async () => {
  const dir = tmpDir();
  const s = await ourWsServer();
  const client = await connectWebSocket(s.url, { clientName: 'terminal-flow', reconnect: false });
  try {
    const slowFile = path.join(dir, 'slow');
    // ~10 kB/s: a flood of 20 MB would take half an hour to show.
    const slow = terminal(client, numberedLines(2_000_000, slowFile), dir, { intervalMs: 100, maxCharsPerFlush: 1000 });
    const blockedAt = await settled(() => progress(slowFile), 600);
    assert.ok(blockedAt < 100_000, `slow child blocked at ${blockedAt} lines`);
    const fast = terminal(client, numberedLines(300_000, path.join(dir, 'fast')), dir, {});
    const r = await fast.term.result;
    assert.equal(r.exitCode, 0);
    assert.equal(fast.lines.error, undefined);
    assert.equal(fast.lines.lines, 300_000);
    assert.ok(fast.maxHeld() <= HELD_BOUND, `fast terminal held at most ${fast.maxHeld()} characters`);
    // The slow one is still throttled, its memory bounded, its lines so far in order.
    assert.ok(progress(slowFile) < 100_000, `slow child at ${progress(slowFile)} lines`);
    assert.ok(slow.maxHeld() <= HELD_BOUND, `slow terminal held at most ${slow.maxHeld()} characters`);
    assert.equal(slow.lines.error, undefined);
    slow.term.close(); // the user closes it: the process is terminated
    const sr = await slow.term.result;
    assert.notEqual(sr.exitCode, 0);
  } finally {
    await client.close();
    await s.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
