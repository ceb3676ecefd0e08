// src/server/network/stream-io.ts: splice() relays every byte in order through recycled read
// blocks (large ones for the first relays open, smaller ones past that bound), with a slow
// reader on the far side, and a relay stops counting as open once either side closes.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import net from 'node:net';
import { test } from 'node:test';
import { LARGE_BLOCK_RELAYS, openRelayCount, splice } from '../../../src/server/network/stream-io';

/** A connected pair of loopback TCP sockets (the relay's side, the far side). */
async function pair(): Promise<[net.Socket, net.Socket]> {
  const srv = net.createServer({ allowHalfOpen: true });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const accepted = new Promise<net.Socket>((r) => srv.once('connection', r));
  const far = net.connect({ port: (srv.address() as net.AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true });
  const near = await accepted;
  srv.close();
  await new Promise<void>((r) => (far.connecting ? far.once('connect', () => r()) : r()));
  return [near, far];
}

/** Bytes that differ everywhere (a block reused before its write finished shows as a wrong digest). */
function pattern(bytes: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < bytes; i += 4) b.writeUInt32LE((i * 2654435761 + seed) >>> 0, i);
  return b;
}

const digest = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

test('every byte arrives in order across more relays than get large blocks, with a receiver that stalls', async () => {
  const relays = LARGE_BLOCK_RELAYS + 4;
  const size = 6 * 1024 * 1024;
  const before = openRelayCount();
  const results = await Promise.all(
    Array.from({ length: relays }, async (_, k) => {
      // source → [a | relay | b] → sink
      const [a, source] = await pair();
      const [b, sink] = await pair();
      splice(a, b);
      const data = pattern(size, k);
      const got: Buffer[] = [];
      let n = 0;
      const done = new Promise<void>((r) => sink.once('end', () => r()));
      sink.on('data', (d: Buffer) => {
        got.push(Buffer.from(d));
        n += d.length;
        // Stalls now and then, so the relay's writes back up and it must pause and resume.
        if (n % (3 * 1024 * 1024) < d.length) {
          sink.pause();
          setImmediate(() => sink.resume());
        }
      });
      source.end(data);
      await done;
      sink.end();
      source.destroy();
      return { sent: digest(data), got: digest(Buffer.concat(got)), n };
    }),
  );
  for (const r of results) {
    assert.equal(r.n, size);
    assert.equal(r.got, r.sent);
  }
  // Every relay above ended with its sockets.
  const deadline = Date.now() + 10_000;
  while (openRelayCount() !== before && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  assert.equal(openRelayCount(), before);
});
