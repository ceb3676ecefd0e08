// OutputBuffer must not keep evicted chunks reachable: it used to hold them until a compaction
// at 1 024 evicted entries (64 MiB of 64 KiB pipe reads per process), which grew the server's
// RSS and with it the cost of every later fork.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OutputBuffer } from '../../../src/server/process/output-buffer';
import { releaseChunk, takeReadBlock } from '../../../src/server/process/read-blocks';

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
