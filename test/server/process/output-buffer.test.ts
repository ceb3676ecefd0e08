// OutputBuffer must not keep evicted chunks reachable: it used to hold them until a compaction
// at 1 024 evicted entries (64 MiB of 64 KiB pipe reads per process), which grew the server's
// RSS and with it the cost of every later fork.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { test } from 'node:test';
import { OutputBuffer, outputPackStats, PACK_AFTER_MS } from '../../../src/server/process/output-buffer';
import { readBlockStats, releaseChunk, takeReadBlock } from '../../../src/server/process/read-blocks';
import { waitFor } from '../../support/wait';

test('output retention: evicted chunks are released at once, retained ones still read back in order', () => {
  const cap = 16 * 1024;
  const buf = new OutputBuffer(cap);
  const chunks: Buffer[] = [];
  for (let seq = 1; seq <= 600; seq++) {
    const data = Buffer.alloc(1024, seq % 251);
    chunks.push(data);
    buf.push({ seq, stream: 'stdout', data });
  }
  // White-box: every slot the buffer still references, evicted or not.
  const held = (buf as unknown as { chunks: { data: Buffer }[] }).chunks.filter((c) => chunks.includes(c.data));
  assert.equal(held.length, cap / 1024, 'only the retained chunks stay referenced');
  const { chunks: read, complete } = buf.read(0, undefined);
  assert.ok(complete);
  assert.deepEqual(read.map((c) => c.seq), Array.from({ length: 16 }, (_, i) => 585 + i));
  assert.equal(buf.evictedThroughSeq, 584);
  assert.ok(read.every((c) => c.data === chunks[c.seq - 1]));
});

test('output retention: a short chunk is kept as a copy and its recycled block goes back for reuse; a long one holds its block', () => {
  const buf = new OutputBuffer(1024 * 1024);
  // A one-line output, read into a recycled block (as a pipe read is).
  const block = takeReadBlock();
  block.write('hello\n', 0, 'latin1');
  const line = block.subarray(0, 6);
  buf.push({ seq: 1, stream: 'stdout', data: line });
  // The reader's hold ends: nothing else keeps the block, so the next reader gets it back.
  releaseChunk(line);
  const next = takeReadBlock();
  assert.equal(next.buffer, block.buffer, 'the block was free for reuse');
  next.fill(0x78);
  assert.equal(buf.read(0, undefined).chunks[0].data.toString('latin1'), 'hello\n', 'the retained copy is untouched by the reuse');
  releaseChunk(next);
  // A full read is held (a copy would cost as much as the block it frees).
  const big = takeReadBlock();
  big.fill(0x61);
  buf.push({ seq: 2, stream: 'stdout', data: big });
  releaseChunk(big);
  const other = takeReadBlock();
  assert.notEqual(other.buffer, big.buffer, 'a retained full chunk keeps its block');
  releaseChunk(other);
  buf.clear();
});

/** A line of text output as a build would print it, numbered so no two lines are alike. */
const textLine = (i: number) => `src/module-${i % 97}/file-${i}.ts(${i % 400},${i % 80}): warning TS${6000 + (i % 300)}: '${'x'.repeat(i % 23)}' is declared but never used.\n`;

/** Fills `buf` with ~`bytes` of output in recycled 64 KiB blocks (as pipe reads are), stdout and stderr mixed; returns what was pushed. */
function pushBlocks(buf: OutputBuffer, bytes: number, content: (i: number) => string): { seq: number; stream: 'stdout' | 'stderr'; text: string }[] {
  const pushed: { seq: number; stream: 'stdout' | 'stderr'; text: string }[] = [];
  let i = 0;
  for (let seq = 1; pushed.reduce((n, p) => n + p.text.length, 0) < bytes; seq++) {
    const block = takeReadBlock();
    let text = '';
    while (text.length < 60_000) text += content(i++);
    block.write(text, 0, 'latin1');
    const stream = seq % 5 === 0 ? 'stderr' : 'stdout';
    buf.push({ seq, stream, data: block.subarray(0, text.length) });
    releaseChunk(block.subarray(0, text.length)); // the reader's hold ends; the retention's stays
    pushed.push({ seq, stream, text });
  }
  return pushed;
}

const readAll = (buf: OutputBuffer) => buf.read(0, undefined).chunks.map((c) => ({ seq: c.seq, stream: c.stream, text: c.data.toString('latin1') }));

test('output retention: a settled buffer is deflated, its blocks go back, and it reads back byte for byte', async () => {
  const buf = new OutputBuffer(1024 * 1024);
  const pushed = pushBlocks(buf, 900 * 1024, textLine);
  const heldBefore = readBlockStats.held;
  buf.settle();
  await waitFor(() => buf.isPacked, { what: 'the settled output deflated', timeout: PACK_AFTER_MS + 10_000 });
  assert.equal(readBlockStats.held, heldBefore - pushed.length, 'every block of the retained output went back');
  // Nothing new after the last seq: answered without inflating.
  assert.deepEqual(buf.read(pushed[pushed.length - 1].seq, undefined), { chunks: [], complete: true });
  assert.equal(buf.hasAfter(pushed.length - 1), true);
  assert.ok(buf.isPacked);
  // A read gets every chunk back as it was pushed (seq, stream, bytes), budgets included.
  const half = buf.read(3, 130_000);
  assert.deepEqual(half.chunks.map((c) => c.seq), [4, 5]);
  assert.equal(half.complete, false);
  assert.deepEqual(readAll(buf), pushed);
  assert.equal(buf.retainedBytes, pushed.reduce((n, p) => n + p.text.length, 0));
  // ...and once reads stop it is deflated again.
  await waitFor(() => buf.isPacked, { what: 'deflated again after the read', timeout: PACK_AFTER_MS + 10_000 });
  assert.deepEqual(readAll(buf), pushed);
  buf.clear();
  assert.equal(buf.evictedThroughSeq, pushed[pushed.length - 1].seq);
});

test('output retention: output that does not deflate to half its size, and a buffer cleared while deflating, stay as they are', async () => {
  const declined0 = outputPackStats.declined;
  const random = new OutputBuffer(1024 * 1024);
  const pushed = pushBlocks(random, 512 * 1024, () => crypto.randomBytes(600).toString('latin1'));
  random.settle();
  const cleared = new OutputBuffer(1024 * 1024);
  pushBlocks(cleared, 512 * 1024, textLine);
  cleared.settle();
  await waitFor(() => outputPackStats.declined > declined0 && cleared.isPacked, { what: 'both deflates done', timeout: PACK_AFTER_MS + 10_000 });
  assert.equal(random.isPacked, false, 'random output is kept raw');
  assert.deepEqual(readAll(random), pushed);
  assert.equal(cleared.isPacked, true);
  // Cleared while its deflate runs (started here at once, white-box, rather than by the timer
  // at a moment the test cannot catch): the deflate's result is dropped.
  const again = new OutputBuffer(1024 * 1024);
  pushBlocks(again, 512 * 1024, textLine);
  again.settle();
  const dropped0 = outputPackStats.dropped;
  (again as unknown as { pack(): void }).pack();
  again.clear();
  await waitFor(() => outputPackStats.dropped > dropped0, { what: 'the deflate to finish and be dropped', timeout: 10_000 });
  assert.equal(again.isPacked, false);
  assert.deepEqual(again.read(0, undefined).chunks, []);
  random.clear();
  cleared.clear();
});
