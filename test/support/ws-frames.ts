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

/** A random valid stream (randomStream): its frames, the messages it carries in order, its pings' payloads. */
export interface RandomStream {
  wire: Buffer[];
  /** A text message's JSON value, or a binary message's index and bytes. */
  expected: ({ json: unknown } | { index: number; data: Buffer })[];
  pings: string[];
}

/**
 * 1–20 messages drawn from `r`: JSON text (up to ~40 KB of multi-byte characters) or a binary
 * payload (up to 200 KB, one in ten ~1.5 MB) wrapped by `binary`, some cut into 2–4 fragments,
 * with pings between frames; `frame` writes each frame (masked or not).
 */
export function randomStream(seed: number, r: (n: number) => number, binary: (index: number, data: Buffer) => Buffer, frame: (opcode: number, payload: Buffer, fin: boolean) => Buffer): RandomStream {
  const out: RandomStream = { wire: [], expected: [], pings: [] };
  const count = 1 + r(20);
  for (let i = 0; i < count; i++) {
    let opcode: number;
    let payload: Buffer;
    if (r(2) === 0) {
      const json = { jsonrpc: '2.0', method: 'm', params: { i, s: 'äx€😀'.repeat(r(3000)) } };
      out.expected.push({ json });
      opcode = 1;
      payload = Buffer.from(JSON.stringify(json));
    } else {
      const n = r(10) === 0 ? 1_500_000 + r(1000) : 1 + r(200_000);
      const data = Buffer.allocUnsafe(n);
      for (let k = 0; k < n; k++) data[k] = (k * 7 + i + seed) & 0xff;
      out.expected.push({ index: i, data });
      opcode = 2;
      payload = binary(i, data);
    }
    const parts = r(3) === 0 ? 2 + r(3) : 1;
    const cut = Math.ceil(payload.length / parts);
    for (let p = 0; p < parts; p++) {
      out.wire.push(frame(p === 0 ? opcode : 0, payload.subarray(p * cut, (p + 1) * cut), p === parts - 1));
      if (r(4) === 0) {
        out.pings.push(`ping ${seed}.${i}.${p}`);
        out.wire.push(frame(9, Buffer.from(out.pings[out.pings.length - 1]), true));
      }
    }
  }
  return out;
}
