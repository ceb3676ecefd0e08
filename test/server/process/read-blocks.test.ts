// Recycled read blocks (src/server/process/read-blocks.ts, recycled-pipe-reader.ts): a streaming
// pipe is read into reused 64 KiB blocks, so a block's bytes get overwritten by later output as
// soon as nothing holds them. The attacks: every place that keeps a chunk after the output call —
// the output retention, a websocket write still queued in the server, an in-process client that
// keeps the Buffers — must still see the original bytes after much more output went through
// the same blocks. Each fails when its hold (or donation) is removed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type * as net from 'node:net';
import { PassThrough } from 'node:stream';
import WebSocket from 'ws';
import { connectInProcess } from '../../../src/client/connect';
import { ExecServer } from '../../../src/server/exec-server';
import { donateChunk, dropFreeBlocks, holdChunk, isRecycled, lendChunk, READ_BLOCK_BYTES, readBlockStats, releaseChunk, returnChunk, takeReadBlock, trimFreeBlocks, WARM_FREE_BYTES } from '../../../src/server/process/read-blocks';
import { readRecycled } from '../../../src/server/process/recycled-pipe-reader';
import { spawn } from 'node:child_process';
import { decodeOutputFrame } from '../../../src/transports/output-frame';
import { LineChecker, ourWsServer } from '../../support/flow';
import { waitFor } from '../../support/wait';
import { connectClient, startParams, uri } from '../../support/server';
import os from 'node:os';
import v8 from 'node:v8';
import vm from 'node:vm';

/** python3 writing numbered 10-byte lines ("A00000001\n"…) in 1 MiB writes (so pipe reads are full 64 KiB). */
function numbered(prefix: string, lines: number): string[] {
  const py = [
    'import sys',
    'out = sys.stdout.buffer',
    `n = ${lines}`,
    'i = 1',
    'while i <= n:',
    '    j = min(n + 1, i + 100000)',
    `    out.write(b''.join(b'${prefix}%08d\\n' % k for k in range(i, j)))`,
    '    i = j',
    'out.flush()',
  ].join('\n');
  return ['python3', '-c', py];
}

function expectedLines(prefix: string, from: number, to: number): string {
  let s = '';
  for (let k = from; k <= to; k++) s += `${prefix}${String(k).padStart(8, '0')}\n`;
  return s;
}

/** Checks "P%08d\n" lines as they arrive (any prefix letter), from line 1 on. */
class PrefixedLines extends LineChecker {
  constructor(private readonly prefix: string) {
    super();
  }
  override push(data: Uint8Array): void {
    // The base checker expects "%09d": map "P" to "0" (the prefix is the 9th digit's place).
    const copy = Buffer.from(data);
    for (let i = 0; i < copy.length; i++) if (copy[i] === this.prefix.charCodeAt(0)) copy[i] = 0x30;
    super.push(copy);
  }
}

test('read blocks: a held block is not handed out again; the last release makes it reusable; a donated one never is', () => {
  const a = takeReadBlock();
  assert.equal(a.length, READ_BLOCK_BYTES);
  assert.ok(isRecycled(a) && isRecycled(a.subarray(10, 20)), 'views of a block are recognised');
  const chunk = a.subarray(0, 100);
  holdChunk(chunk); // e.g. retention
  releaseChunk(a); // the reader's hold
  const b = takeReadBlock();
  assert.notEqual(b.buffer, a.buffer, 'still held: not reused');
  releaseChunk(chunk);
  const c = takeReadBlock();
  assert.equal(c.buffer, a.buffer, 'released by everyone: reused (most recent first)');
  // Donated: whoever got it keeps it; no release makes it reusable.
  donateChunk(c);
  assert.ok(!isRecycled(c));
  releaseChunk(c);
  releaseChunk(c);
  const d = takeReadBlock();
  assert.notEqual(d.buffer, c.buffer);
  releaseChunk(b);
  releaseChunk(d);
  // Buffers that are not blocks: every call is a no-op.
  const plain = Buffer.alloc(10);
  holdChunk(plain);
  releaseChunk(plain);
  donateChunk(plain);
  assert.ok(!isRecycled(plain));
});

test('lent chunks: given back once, and only by a view of the chunk lent; a second or a stranger\'s give-back releases nothing', () => {
  const a = takeReadBlock();
  const lent = a.subarray(100, 1000);
  lendChunk(lent);
  releaseChunk(a); // the reader moves on
  // Not the lent chunk: another chunk of the block, one ending elsewhere, a buffer of no block.
  returnChunk(a.subarray(1000, 2000));
  returnChunk(a.subarray(100, 999));
  returnChunk(Buffer.alloc(900));
  assert.notEqual(takeReadBlock().buffer, a.buffer, 'still lent: not reused');
  // The receiver gives back a payload cut from the lent message (it ends where the message ends).
  returnChunk(Buffer.from(a.buffer, a.byteOffset + 500, 500));
  returnChunk(lent); // twice: no second release
  const b = takeReadBlock();
  assert.equal(b.buffer, a.buffer, 'given back: reused');
  // Were the second give-back a release, the block would be free again while b reads into it.
  assert.notEqual(takeReadBlock().buffer, b.buffer, 'b is held once, by its reader');
  // A plain hold is not a lend: returnChunk does not end it.
  holdChunk(b.subarray(0, 10));
  returnChunk(b.subarray(0, 10));
  releaseChunk(b);
  assert.notEqual(takeReadBlock().buffer, b.buffer, 'the hold stands');
});

test('read blocks: the memory of dropped blocks goes back to the system, also with live allocations between them', async () => {
  // As in a server: blocks taken while other buffers are allocated, so live C-heap chunks sit
  // between the blocks. Blocks from malloc stayed resident after being freed (glibc returns
  // only the top of its heap); mapped blocks are unmapped once collected.
  const blocks: Buffer[] = [];
  const between: Buffer[] = [];
  for (let i = 0; i < 512; i++) {
    const b = takeReadBlock();
    b.fill(i & 0xff); // touched: resident
    blocks.push(b);
    between.push(Buffer.allocUnsafeSlow(256));
  }
  const full = process.memoryUsage.rss();
  for (const b of blocks.splice(0)) releaseChunk(b);
  dropFreeBlocks();
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  const back = () => process.memoryUsage.rss() < full - 24 * 1024 * 1024;
  await waitFor(back, { what: '32 MiB of dropped blocks to leave the resident set', timeout: 5_000, interval: 20, detail: () => `rss ${full >> 20} -> ${process.memoryUsage.rss() >> 20} MiB` });
  assert.equal(between.length, 512);
});

test('recycled reader: a streaming child is read into reused blocks; every byte arrives in order, also across pauses', async () => {
  const child = spawn(numbered('Q', 3_000_000)[0], numbered('Q', 3_000_000).slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = new PrefixedLines('Q');
  const before = { ...readBlockStats };
  let recycledChunks = 0;
  readRecycled(child.stdout!, (d) => {
    if (isRecycled(d)) recycledChunks++;
    lines.push(d);
  });
  // Pause and resume now and then (as a full window does): order and completeness hold.
  const timer = setInterval(() => {
    child.stdout!.pause();
    setTimeout(() => child.stdout!.resume(), 5);
  }, 20);
  await new Promise((r) => child.once('close', r));
  clearInterval(timer);
  assert.equal(lines.error, undefined);
  assert.equal(lines.lines, 3_000_000);
  assert.ok(recycledChunks > 100, `chunks were read into recycled blocks (${recycledChunks})`);
  assert.ok(readBlockStats.reused - before.reused > 100, 'blocks were reused, not allocated per read');
});

test('recycled reader: a pipe that streamed and went quiet gives its block back (and takes one again when it streams)', async () => {
  const py = [
    'import sys, time',
    'out = sys.stdout.buffer',
    // In pieces: the switch to blocks happens after a large read, in the next event-loop turn.
    'for i in range(8):',
    "    out.write(b'a' * (1 << 17)); out.flush(); time.sleep(0.02)",
    'time.sleep(0.3)',
    "out.write(b'quiet\\n'); out.flush()",
    'sys.stdin.readline()', // the test looks at the blocks now
    "out.write(b'b' * (1 << 20)); out.flush()",
    'sys.stdin.readline()',
  ].join('\n');
  const child = spawn('python3', ['-c', py], { stdio: ['pipe', 'pipe', 'inherit'] });
  const heldBefore = readBlockStats.held;
  const takenBefore = readBlockStats.allocated + readBlockStats.reused;
  let text = '';
  let bytes = 0;
  let recycled = 0;
  readRecycled(child.stdout!, (d) => {
    bytes += d.length;
    if (isRecycled(d)) recycled++;
    if (d.length < 100) text += d.toString();
  });
  try {
    await waitFor(() => text.includes('quiet'), { what: 'the quiet line' });
    assert.ok(readBlockStats.allocated + readBlockStats.reused > takenBefore, 'the burst switched the pipe to recycled blocks');
    assert.equal(readBlockStats.held, heldBefore, 'no block held by the quiet pipe');
    const recycledBefore = recycled;
    child.stdin!.write('\n');
    await waitFor(() => bytes === 2 * (1 << 20) + 6, { what: 'the second burst' });
    assert.ok(recycled > recycledBefore + 4, 'streaming again: blocks again');
  } finally {
    child.stdin!.end('\n');
    await new Promise((r) => child.once('close', r));
  }
  assert.equal(readBlockStats.held, heldBefore, 'nothing held after close');
});

test('recycled reader: a stream without the net internals (or a quiet pipe) stays on data events', async () => {
  const s = new PassThrough();
  const got: Buffer[] = [];
  readRecycled(s, (d) => got.push(d));
  const big = Buffer.alloc(200 * 1024, 7);
  s.write(big);
  // The switch is tried in a setImmediate queued on the data: once it came, the next turn is past it.
  await waitFor(() => got.length > 0, { what: 'the data' });
  for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r));
  s.end(Buffer.from('tail'));
  await new Promise((r) => s.once('end', r));
  assert.ok(!got.some(isRecycled));
  assert.deepEqual(Buffer.concat(got), Buffer.concat([big, Buffer.from('tail')]));
});

test('attack: retained output of one process survives 64 MiB of another through the same blocks (process/read after exit)', async () => {
  const server = new ExecServer();
  const c = await connectClient(server);
  try {
    // A: 4 MiB of numbered lines; retention keeps the newest 1 MiB (default cap).
    await c.call('process/start', startParams('a', numbered('A', 419_430)));
    await c.sink.waitFor(() => c.sink.closed('a'), 30_000, 'a closed');
    // B: 64 MiB more through the pipe readers (the blocks A's retention lets go of, and more).
    await c.call('process/start', startParams('b', ['head', '-c', String(64 * 1024 * 1024), '/dev/zero']));
    await c.sink.waitFor(() => c.sink.closed('b'), 60_000, 'b closed');
    const r = await c.call('process/read', { processId: 'a', afterSeq: 0 });
    const text = Buffer.concat(r.chunks.map((ch: { chunk: string }) => Buffer.from(ch.chunk, 'base64'))).toString('latin1');
    assert.ok(text.length >= 1024 * 1024 - 64 * 1024, `A's retention kept about 1 MiB (${text.length})`);
    // Retention drops whole chunks, so it starts anywhere in a line: compare with the end of A's output.
    assert.ok(expectedLines('A', 1, 419_430).endsWith(text), "retained bytes are what A wrote (not overwritten by B's output)");
  } finally {
    await server.shutdown();
  }
});

test('attack: output frames still queued in the server while the client does not read keep their bytes (no window, binary frames)', async () => {
  const s = await ourWsServer({ maxRetainedBytesPerProcess: 256 * 1024 });
  const ws = new WebSocket(s.url, { maxPayload: 64 * 1024 * 1024 });
  try {
    await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
    const lines = new PrefixedLines('W');
    let closed = false;
    const replies = new Map<number, any>();
    ws.on('message', (d: Buffer, binary) => {
      if (binary) return lines.push(decodeOutputFrame(d).params.data);
      const m = JSON.parse(d.toString());
      if (m.id !== undefined) replies.set(m.id, m);
      else if (m.method === 'process/closed') closed = true;
    });
    const call = async (id: number, method: string, params: unknown) => {
      ws.send(JSON.stringify({ id, method, params }));
      await waitFor(() => replies.has(id), { what: method });
      return replies.get(id);
    };
    await call(1, 'initialize', { clientName: 'slow-reader', binaryOutput: true });
    ws.send(JSON.stringify({ method: 'initialized', params: {} }));
    const raw = (ws as unknown as { _socket: net.Socket })._socket;
    const total = 4_000_000; // 40 MB
    await call(2, 'process/start', { processId: 'w', argv: numbered('W', total), cwd: uri(os.tmpdir()), env: { PATH: process.env.PATH }, tty: false });
    // Stop reading: the kernel buffers fill, then frames queue in the server (up to its 4 MiB
    // high-water mark), while retention (256 KiB here) lets go of their chunks.
    raw.pause();
    // Until the server's send buffer is past its high water (it then stops reading the child):
    // every frame queued by then was sent while retention let go of its chunk.
    const served = s.transports[0];
    await waitFor(() => served.bufferedAmount > served.highWaterMark, { what: 'frames to queue in the server past its high water', timeout: 60_000, detail: () => `${served.bufferedAmount} bytes queued` });
    raw.resume();
    await waitFor(() => closed, { what: 'process/closed', timeout: 120_000 });
    assert.equal(lines.error, undefined);
    assert.equal(lines.lines, total);
  } finally {
    ws.terminate();
    await s.stop();
  }
});

test('attack: an in-process client that keeps every output Buffer still has the original bytes after more output', async () => {
  const server = new ExecServer();
  const client = await connectInProcess(server, { clientName: 'keeper', binaryOutput: true });
  try {
    const kept: Buffer[] = [];
    const total = 1_600_000; // 16 MB: far beyond retention, so blocks would come round again
    const h = await client.startProcess({ argv: numbered('K', total), cwd: os.tmpdir(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    h.onOutput((e) => kept.push(e.data as Buffer));
    await h.closed;
    const h2 = await client.startProcess({ argv: ['head', '-c', String(32 * 1024 * 1024), '/dev/zero'], cwd: os.tmpdir(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    await h2.closed;
    const lines = new PrefixedLines('K');
    for (const k of kept) lines.push(k);
    assert.equal(lines.error, undefined);
    assert.equal(lines.lines, total);
  } finally {
    await client.close();
    await server.shutdown();
  }
});

test('read blocks: when a stream ends the free blocks beyond a warm few leave at once, without waiting for a collection', () => {
  // As after a congested peer caught up: many blocks free at the same time.
  const size = 96 * 1024;
  const blocks = Array.from({ length: 200 }, () => takeReadBlock(size));
  for (const b of blocks) b.fill(7);
  for (const b of blocks) releaseChunk(b);
  const full = process.memoryUsage.rss();
  trimFreeBlocks();
  const dropped = full - process.memoryUsage.rss();
  // No collection ran: the pages went with the shrink (before: they stayed until the GC freed the blocks).
  assert.ok(dropped > 12 * 1024 * 1024, `rss fell by ${(dropped / 1048576).toFixed(1)} MiB`);
  // The warm ones are still reused, and intact; a trimmed one is never handed out again.
  const kept = Array.from({ length: WARM_FREE_BYTES / size }, () => takeReadBlock(size));
  assert.ok(kept.every((k) => blocks.some((b) => b.buffer === k.buffer) && k.length === size && k[size - 1] === 7));
  const fresh = takeReadBlock(size);
  assert.ok(!blocks.some((b) => b.buffer === fresh.buffer) && fresh.length === size);
  for (const k of [...kept, fresh]) releaseChunk(k);
  dropFreeBlocks();
});
