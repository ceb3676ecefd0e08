// src/transports/ws-mask.ts (the bundles' `bufferutil`): word-at-a-time masking equals ws's byte-by-byte XOR at every alignment and length.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { mask, unmask } from '../../src/transports/ws-mask';

const byByte = (buf: Uint8Array, m: Uint8Array) => {
  const out = Buffer.from(buf);
  for (let i = 0; i < out.length; i++) out[i] ^= m[i & 3];
  return out;
};

test('unmask and mask equal the byte-by-byte XOR for every start alignment and lengths around the word path', () => {
  const backing = randomBytes(4096 + 8);
  for (let start = 0; start < 8; start++) {
    for (const len of [0, 1, 3, 4, 5, 31, 32, 33, 35, 64, 127, 1000, 4096]) {
      const m = randomBytes(4);
      const src = Buffer.from(backing.buffer, backing.byteOffset + start, len);
      const want = byByte(src, m);
      const inPlace = Buffer.from(src); // aligned differently from src: copy into the same offset of a fresh buffer
      const shifted = Buffer.alloc(len + start);
      inPlace.copy(shifted, start);
      const view = shifted.subarray(start);
      unmask(view, m);
      assert.ok(view.equals(want), `unmask start ${start} len ${len}`);
      const out = Buffer.alloc(len + 7, 0xaa);
      mask(src, m, out, 5, len);
      assert.ok(out.subarray(5, 5 + len).equals(want), `mask start ${start} len ${len}`);
      assert.ok(out.subarray(0, 5).every((b) => b === 0xaa) && out.subarray(5 + len).every((b) => b === 0xaa), 'mask wrote outside its range');
      unmask(view, m);
      assert.ok(view.equals(src), 'unmask twice gives the input back');
    }
  }
});
