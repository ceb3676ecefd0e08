// Raw websocket frames for the frame-reader tests (server → client unmasked, client → server
// masked with a key of the test's choosing), and the seeded random source their random streams use.

/** A frame; `mask`: true for a zero key, or the 4-byte key to mask the payload with. `first` overrides byte 0 (RSV/opcode tests). */
export function wsFrame(opcode: number, payload: Buffer, opts: { fin?: boolean; mask?: boolean | Buffer; first?: number } = {}): Buffer {
  const len = payload.length;
  const head = len < 126 ? Buffer.from([0, len]) : len < 65536 ? Buffer.from([0, 126, len >> 8, len & 0xff]) : Buffer.alloc(10);
  if (len >= 65536) {
    head[1] = 127;
    head.writeUInt32BE(Math.floor(len / 2 ** 32), 2);
    head.writeUInt32BE(len >>> 0, 6);
  }
  head[0] = opts.first ?? ((opts.fin === false ? 0 : 0x80) | opcode);
  if (!opts.mask) return Buffer.concat([head, payload]);
  head[1] |= 0x80;
  const key = Buffer.isBuffer(opts.mask) ? opts.mask : Buffer.alloc(4);
  const body = Buffer.from(payload);
  for (let k = 0; k < len; k++) body[k] ^= key[k & 3];
  return Buffer.concat([head, key, body]);
}

/** A deterministic source of integers in [0, n) (mulberry32), so a failing random case can be replayed by its seed. */
export function rng(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}
