// Per-process flow control (extension `flowControl`): a full window stops the server reading the
// child (the child itself blocks), acks resume it, every byte arrives in order; one process's
// full window does not hold up another; a detached session keeps the child blocked and the
// resumed client still gets every byte; an old client resuming lifts the windows; bad input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { connectInProcess, connectWebSocket } from '../../src/client/connect';
import { ErrorCodes } from '../../src/protocol/errors';
import { FLOW_CONTROL_EXTENSION } from '../../src/protocol/types';
import { ExecServer } from '../../src/server/exec-server';
import { connectClient, RecordingSink, rejectsWith, startParams, uri } from '../support/server';
import { startDropProxy } from '../support/drop-proxy';
import { LINE_BYTES, LineChecker, numberedLines, ourWsServer, progress, settled, tmpDir, waitFor } from '../support/flow';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const KiB = 1024;

for (const tty of [false, true]) {
  test(`flow control (${tty ? 'pty' : 'pipe'}, in process): a full window blocks the child, acks resume it, every line arrives once and in order`, async () => {
    const dir = tmpDir();
    const server = new ExecServer();
    const client = await connectInProcess(server, { clientName: 'flow-test' });
    try {
      assert.equal(client.flowControlEnabled, true);
      const total = 200_000; // 2 MB of lines
      const file = path.join(dir, 'progress');
      const window = 64 * KiB;
      const h = await client.startProcess({ argv: numberedLines(total, file), cwd: dir, env: ENV, tty, outputWindow: window, manualAck: true });
      assert.equal(h.outputWindow, window);
      const lines = new LineChecker();
      let acking = false;
      h.onOutput((e) => {
        lines.push(e.data);
        if (acking) h.acknowledge!(e.data.length);
      });
      // Nothing acknowledged: the child stops once the window, the pipe/PTY buffer and its own buffer are full.
      const stalledAt = await settled(() => progress(file));
      assert.ok(stalledAt > 0 && stalledAt < total / 4, `the child is blocked (wrote ${stalledAt} of ${total} lines)`);
      assert.ok(lines.bytes >= window && lines.bytes <= window + 64 * KiB, `the client got the window and not much more (${lines.bytes} bytes)`);
      assert.equal(h.exitCode, undefined);
      // Acknowledge what arrived: the server reads again, the child goes on to the end.
      acking = true;
      h.acknowledge!(lines.bytes);
      await h.closed;
      assert.equal(await h.exited, 0);
      assert.equal(lines.error, undefined);
      assert.equal(lines.lines, total);
      assert.equal(progress(file), total);
    } finally {
      await client.close();
      await server.shutdown();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('flow control (websocket): a consumer that never acknowledges does not slow another process of the same client', async () => {
  const dir = tmpDir();
  const s = await ourWsServer();
  const client = await connectWebSocket(s.url, { clientName: 'flow-test', reconnect: false });
  try {
    const slowFile = path.join(dir, 'slow');
    const slow = await client.startProcess({ argv: numberedLines(2_000_000, slowFile), cwd: dir, env: ENV, outputWindow: 256 * KiB, manualAck: true });
    let slowBytes = 0;
    slow.onOutput((e) => (slowBytes += e.data.length));
    await settled(() => progress(slowFile));
    // The fast one streams 5 MB with the default window and automatic acks, while the slow one stays full.
    const fastFile = path.join(dir, 'fast');
    const fast = await client.startProcess({ argv: numberedLines(500_000, fastFile), cwd: dir, env: ENV });
    const lines = new LineChecker();
    fast.onOutput((e) => lines.push(e.data));
    await fast.closed;
    assert.equal(lines.error, undefined);
    assert.equal(lines.lines, 500_000);
    // The slow one never got past its window, and its child is still blocked.
    assert.ok(slowBytes <= 256 * KiB + 64 * KiB, `slow consumer received ${slowBytes} bytes`);
    assert.ok(progress(slowFile) < 200_000, `slow child blocked at ${progress(slowFile)} lines`);
    assert.equal(slow.exitCode, undefined);
    assert.equal(await slow.terminate(), true);
    await slow.closed;
  } finally {
    await client.close();
    await s.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

for (const window of [256 * KiB, 4096 * KiB]) {
test(`flow control (window ${window / KiB} KiB): while the client is disconnected the child stays blocked; the resumed client gets every byte (beyond the 1 MiB retention)`, async () => {
  const dir = tmpDir();
  const s = await ourWsServer();
  const proxy = await startDropProxy(s.url);
  const client = await connectWebSocket(proxy.url, { clientName: 'flow-test', reconnectDelayMs: 50, outputWindow: window });
  try {
    // Well beyond the window plus the default 1 MiB retention.
    const total = Math.max(400_000, Math.ceil((window + 3 * 1024 * KiB) / LINE_BYTES));
    const file = path.join(dir, 'progress');
    const h = await client.startProcess({ argv: numberedLines(total, file), cwd: dir, env: ENV });
    const lines = new LineChecker();
    let closeError: string | undefined;
    h.onClose((e) => (closeError = e.error));
    let dropped = false;
    h.onOutput((e) => {
      lines.push(e.data);
      if (!dropped && lines.bytes > 512 * KiB) {
        dropped = true;
        proxy.refuse = true;
        proxy.dropAll();
      }
    });
    await waitFor(() => dropped, 'the drop');
    // Detached: nobody acknowledges, the child blocks instead of its output being evicted.
    // Blocked: no progress for 800 ms (a must-not-happen, so a window: settled() is that wait).
    const blockedAt = await settled(() => progress(file), 800);
    assert.ok(blockedAt < total, `the child blocked while detached (at ${blockedAt} lines)`);
    proxy.refuse = false;
    await h.closed;
    assert.equal(closeError, undefined, 'no output was lost');
    assert.equal(lines.error, undefined);
    assert.equal(lines.lines, total);
    assert.ok(client.reconnects >= 1);
  } finally {
    await client.close();
    await proxy.close();
    await s.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
}

test('flow control: a client resuming without opting in (an older client) lifts the windows', async () => {
  const dir = tmpDir();
  const server = new ExecServer();
  try {
    const sink = new RecordingSink();
    const conn = server.connect(sink);
    const init = (await conn.request('initialize', { clientName: 't', flowControl: true })) as { sessionId: string; extensions: string[] };
    assert.ok(init.extensions.includes(FLOW_CONTROL_EXTENSION));
    conn.notification('initialized', {});
    const file = path.join(dir, 'progress');
    await conn.request('process/start', { ...startParams('p1', numberedLines(100_000, file), { cwd: uri(dir) }), outputWindow: 32 * KiB });
    const stalledAt = await settled(() => progress(file));
    assert.ok(stalledAt < 100_000, `blocked at ${stalledAt}`);
    conn.close();
    const old = await connectClient(server, init.sessionId);
    await waitFor(() => progress(file) === 100_000, 'the child to finish once an old client resumed');
    old.conn.close();
  } finally {
    await server.shutdown();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('flow control: terminating a process whose window is full closes it even though nothing is acknowledged', async () => {
  const dir = tmpDir();
  const server = new ExecServer();
  const client = await connectInProcess(server, { clientName: 'flow-test' });
  try {
    for (const tty of [false, true]) {
      const file = path.join(dir, `progress-${tty}`);
      const h = await client.startProcess({ argv: numberedLines(1_000_000, file), cwd: dir, env: ENV, tty, outputWindow: 32 * KiB, manualAck: true });
      const blockedAt = await settled(() => progress(file));
      assert.ok(blockedAt < 1_000_000);
      assert.equal(await h.terminate(), true);
      await h.closed;
      assert.notEqual(h.exitCode, 0);
    }
  } finally {
    await client.close();
    await server.shutdown();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('flow control: bad input is refused and changes nothing', async () => {
  const dir = tmpDir();
  const server = new ExecServer();
  try {
    const { conn, sink } = await connectClient(server);
    await rejectsWith(conn.request('process/start', { ...startParams('big', ['true'], { cwd: uri(dir) }), outputWindow: 64 * 1024 * 1024 }), ErrorCodes.InvalidParams, /outputWindow must be at most/);
    await rejectsWith(conn.request('process/read', { processId: 'big' }), ErrorCodes.InvalidRequest, /unknown process id big/);
    await conn.request('process/start', { ...startParams('p', ['printf', 'abc'], { cwd: uri(dir) }), outputWindow: 1024 });
    await conn.request('process/read', { processId: 'p', afterSeq: 0, waitMs: 5000 });
    await waitFor(() => sink.closed('p'), 'p closed');
    await rejectsWith(conn.request('process/ack', { processId: 'p', consumedBytes: 4 }), ErrorCodes.InvalidParams, /exceeds the 3 bytes/);
    await rejectsWith(conn.request('process/ack', { processId: 'p', consumedBytes: -1 }), ErrorCodes.InvalidParams);
    await rejectsWith(conn.request('process/ack', { processId: 'nope', consumedBytes: 0 }), ErrorCodes.InvalidRequest, /unknown process id nope/);
    assert.deepEqual(await conn.request('process/ack', { processId: 'p', consumedBytes: 3 }), {});
    assert.deepEqual(await conn.request('process/ack', { processId: 'p', consumedBytes: 1 }), {}, 'an older ack is ignored');
    const r = await conn.request('process/read', { processId: 'p' });
    assert.equal(Buffer.concat(r.chunks.map((c) => Buffer.from(c.chunk, 'base64'))).toString(), 'abc');
  } finally {
    await server.shutdown();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
