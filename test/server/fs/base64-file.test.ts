// src/server/fs/base64-file.ts: a file's base64 encoded in place in the buffer it was read into
// equals Buffer.toString('base64') for every size around the slice and padding boundaries; a file
// that grew after its size was taken is read whole (up to the limit: refused past it), one that shrank is answered as read; and the
// answer's bytes are the one buffer of the base64's size (no second copy of the data).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { Base64Text } from '../../../src/rpc/verbatim';
import { readBase64 } from '../../../src/server/fs/base64-file';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'base64-file-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
const SLICE = 48 * 1024;

async function read(data: Buffer, size = data.length): Promise<Base64Text | string> {
  const p = path.join(dir, 'f');
  fs.writeFileSync(p, data);
  const fh = await fs.promises.open(p, 'r');
  try {
    return await readBase64(fh, size);
  } finally {
    await fh.close();
  }
}

test('in-place base64 equals Buffer.toString("base64") across slice and padding boundaries', async () => {
  const sizes = [0, 1, 2, 3, 4, 5, 1000, SLICE - 1, SLICE, SLICE + 1, SLICE + 2, 2 * SLICE + 1, 3 * SLICE + 2, 3 * 1024 * 1024 + 1, 10 * 1024 * 1024 + 7];
  for (const n of sizes) {
    const data = randomBytes(n);
    const got = await read(data);
    assert.ok(got instanceof Base64Text, `${n}: a Base64Text`);
    assert.equal(got.toString(), data.toString('base64'), `${n} bytes`);
    assert.equal(got.bytes.buffer.byteLength >= got.bytes.length, true);
    // One buffer of the text's size holds the answer: the file was read into it.
    assert.equal(got.bytes.length, 4 * Math.ceil(n / 3));
    if (n > 4096) assert.equal(got.bytes.buffer.byteLength, got.bytes.length, `${n}: its own allocation, exactly the text's size`);
  }
});

test('a file larger than the size taken is read whole; a shorter one as it is', async () => {
  const data = randomBytes(SLICE + 100);
  const grown = await read(data, 1000);
  assert.equal(grown.toString(), data.toString('base64'), 'grown: the whole file');
  const shrunk = await read(data, data.length + 5000);
  assert.equal(shrunk.toString(), data.toString('base64'), 'shrunk: what is there');
});

test('a file that keeps growing while it is read is refused past the limit, not read until memory runs out', async () => {
  // The size taken said 1 MiB; by the read there are 20 MiB (a command appending to it).
  const data = Buffer.alloc(20 * 1024 * 1024, 0x61);
  const p = path.join(dir, 'growing');
  fs.writeFileSync(p, data);
  const fh = await fs.promises.open(p, 'r');
  try {
    // Before: the grown file was read whole, whatever the limit (20 MiB answered for a 4 MiB bound).
    await assert.rejects(readBase64(fh, 1024 * 1024, 4 * 1024 * 1024), /too large to read: limit is 4194304 bytes \(it grew while it was read\)/);
    // Within the limit a grown file is still read whole.
    assert.equal((await readBase64(fh, 1024 * 1024, 32 * 1024 * 1024)).toString(), data.toString('base64'));
  } finally {
    await fh.close();
  }
});
