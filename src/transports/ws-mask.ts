// ws's optional `bufferutil` (masking and unmasking websocket payloads), in JS a 32-bit word
// at a time: the bundles alias `bufferutil` to this module (esbuild.mjs). ws's own fallback
// XORs byte by byte; for fs/writeBlock's binary frames (every client → server frame is masked)
// it was a third of our server's JS time per streamed byte (docs/performance.md).
import { endianness } from 'node:os';

const LITTLE_ENDIAN = endianness() === 'LE';

/** XORs `buf` in place with the 4-byte `mask`, the mask's byte 0 falling on `buf[0]`. */
export function unmask(buf: Uint8Array, mask: Uint8Array): void {
  const len = buf.length;
  let i = 0;
  if (LITTLE_ENDIAN && len >= 32) {
    // Bytes up to the first 4-byte-aligned address, then whole words, then the rest.
    const lead = (4 - (buf.byteOffset & 3)) & 3;
    for (; i < lead; i++) buf[i] ^= mask[i & 3];
    const words = (len - i) >>> 2;
    // Four words a turn: about twice as fast as one (docs/performance.md, fs/writeBlock).
    const w = new Int32Array(buf.buffer, buf.byteOffset + i, words);
    const m = mask[i & 3] | (mask[(i + 1) & 3] << 8) | (mask[(i + 2) & 3] << 16) | (mask[(i + 3) & 3] << 24);
    const quads = words & ~3;
    let k = 0;
    for (; k < quads; k += 4) {
      w[k] ^= m;
      w[k + 1] ^= m;
      w[k + 2] ^= m;
      w[k + 3] ^= m;
    }
    for (; k < words; k++) w[k] ^= m;
    i += words * 4;
  }
  for (; i < len; i++) buf[i] ^= mask[i & 3];
}

/** `output[offset + i] = source[i] ^ mask[i & 3]` for i < length. */
export function mask(source: Uint8Array, maskBytes: Uint8Array, output: Uint8Array, offset: number, length: number): void {
  output.set(length === source.length ? source : source.subarray(0, length), offset);
  unmask(output.subarray(offset, offset + length), maskBytes);
}
