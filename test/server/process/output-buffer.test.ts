// OutputBuffer must not keep evicted chunks reachable: it used to hold them until a compaction
// at 1 024 evicted entries (64 MiB of 64 KiB pipe reads per process), which grew the server's
// RSS and with it the cost of every later fork.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OutputBuffer } from '../../../src/server/process/output-buffer';

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
