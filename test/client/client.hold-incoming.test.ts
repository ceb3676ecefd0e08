// A process the server cannot pause (the reference has no flow control) flooding a consumer that
// is behind: ProcessHandle.holdIncoming stops the client reading its connection, so the bytes
// wait in the server's socket (and the server's own buffers), not in this process's memory.
// Released, every line arrives once and in order. Real reference server, real websocket.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { connectWebSocket } from '../../src/client/connect';
import { ExecTerminal } from '../../src/extension/terminals/exec-terminal';
import { referenceServer, startWsServer } from '../support/reference';
import { waitFor, sleep } from '../support/wait';
import { LineChecker, numberedLines, tmpDir } from '../support/flow';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

test('hold incoming: against the reference, a held connection stops delivering output; released, every line arrives in order', async () => {
  const dir = tmpDir();
  const ref = await startWsServer(referenceServer);
  // keepalive on (as the extension's websocket environments): a hold must not count as a dead peer.
  const client = await connectWebSocket(ref.url, { clientName: 'hold', reconnect: false, keepaliveMs: 500 });
  try {
    assert.equal(client.flowControlEnabled, false);
    const total = 3_000_000; // 30 MB of numbered lines
    const h = await client.startProcess({ argv: numberedLines(total, path.join(dir, 'progress')), cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    assert.equal(h.outputWindow, 0);
    assert.equal(typeof h.holdIncoming, 'function', 'ProcessHandle.holdIncoming');
    const lines = new LineChecker();
    h.onOutput((e) => lines.push(e.data));
    await waitFor(() => lines.bytes > 0, { what: 'first output' });
    h.holdIncoming!(true);
    // What the socket had already handed over may still be parsed: the 1 MiB allowance below.
    const atHold = lines.bytes;
    await sleep(2_000); // held on purpose: nothing may arrive (this window is the point of the test)
    const grown = lines.bytes - atHold;
    assert.ok(grown <= 1024 * 1024, `held for 2 s, yet ${grown} more bytes arrived`);
    assert.ok(lines.bytes < total * 10, 'not everything had arrived before the hold');
    h.holdIncoming!(false);
    assert.equal(await h.exited, 0);
    await h.closed;
    assert.equal(lines.error, undefined);
    assert.equal(lines.lines, total, 'every line, once, in order');
  } finally {
    await client.close();
    await ref.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('hold incoming: a hold asked for a process that has closed is ignored (the connection keeps reading for the others)', async () => {
  const dir = tmpDir();
  const ref = await startWsServer(referenceServer);
  const client = await connectWebSocket(ref.url, { clientName: 'hold-closed', reconnect: false });
  try {
    const a = await client.startProcess({ argv: ['sh', '-c', 'echo a'], cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    await a.closed;
    a.holdIncoming!(true); // a late pressure signal from its terminal
    const b = await client.startProcess({ argv: ['sh', '-c', 'echo b-out'], cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    let out = '';
    b.onOutput((e) => (out += Buffer.from(e.data).toString()));
    await b.closed;
    assert.equal(out.trim(), 'b-out');
  } finally {
    await client.close();
    await ref.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('hold incoming: a terminal on the reference that draws slower than its child writes holds a bounded amount of text; every line arrives', async () => {
  const dir = tmpDir();
  const ref = await startWsServer(referenceServer);
  const client = await connectWebSocket(ref.url, { clientName: 'hold-terminal', reconnect: false });
  try {
    const total = 1_000_000; // 10 MB; the child writes it in about a second, the terminal takes ~7 s (1.6 MB/s)
    const highWaterChars = 1024 * 1024;
    const lines = new LineChecker();
    let maxHeld = 0;
    const term = new ExecTerminal({
      mode: 'pipe',
      keepOpen: false,
      coalescer: { intervalMs: 10, maxCharsPerFlush: 16 * 1024, highWaterChars },
      start: (_dims, flow) => client.startProcess({ argv: numberedLines(total, path.join(dir, 'progress')), cwd: dir, env: ENV, tty: false, ...flow }),
    });
    term.onDidWrite((t) => {
      lines.push(Buffer.from(t, 'latin1'));
      maxHeld = Math.max(maxHeld, term.pendingChars);
    });
    const sampler = setInterval(() => (maxHeld = Math.max(maxHeld, term.pendingChars)), 5);
    term.open({ rows: 24, columns: 80 });
    const r = await term.result.finally(() => clearInterval(sampler));
    assert.equal(r.exitCode, 0);
    assert.equal(lines.error, undefined);
    assert.equal(lines.lines, total);
    // The high water plus what the connection had already handed over when the hold began
    // (measured: 1.1 M characters held with the hold, 2.3–9 M without it).
    const bound = Number(process.env.HOLD_BOUND ?? 2 * highWaterChars);
    assert.ok(maxHeld <= bound, `the terminal held up to ${maxHeld} characters (bound ${bound}; the whole output is ${total * 11})`);
  } finally {
    await client.close();
    await ref.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
