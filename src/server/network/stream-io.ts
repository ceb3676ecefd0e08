// Small helpers the proxy handlers share: reading a bounded prefix (an HTTP head, a SOCKS5
// message) from a stream before switching it to raw relaying, connecting to pinned addresses,
// and joining two streams so that either side's end or reset reaches the other.
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { holdChunk, NET_BLOCK_BYTES, releaseChunk } from '../process/read-blocks';
import { readRecycled } from '../process/recycled-pipe-reader';
import type { ResolvedAddress } from './resolve';

/** How long a proxied connection may take to send its request (head / SOCKS5 handshake). */
export const HANDSHAKE_TIMEOUT_MS = 30_000;
/** How long one upstream connect may take. */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Read block of a streaming relayed connection (see relayOneWay): 1 MiB while few relays are
 * open, NET_BLOCK_BYTES (256 KiB) beyond that. A proxied 64 MiB download cost the executor
 * ~92 ms of CPU above a direct one with 256 KiB blocks and ~59 ms with 1 MiB ones (fewer reads,
 * writes and wakeups; 512 KiB: ~69, 4 MiB: ~76; docs/performance.md "The managed network
 * proxy"). A streaming direction mostly holds two blocks (the one read into, the one being
 * written), so the bound keeps many streaming connections at the memory they had before: only
 * the first 16 relays open at a time get the large blocks.
 */
export const RELAY_BLOCK_BYTES = 1024 * 1024;
/** Open relays (both directions of one connection) that get RELAY_BLOCK_BYTES. */
export const LARGE_BLOCK_RELAYS = 16;
let openRelays = 0;
/** Relays open now (for tests: each one ends when either side closes). */
export const openRelayCount = (): number => openRelays;

/** Buffers what `stream` sends until `take` finds a complete message in it. */
export class PrefixReader {
  private buf: Buffer = Buffer.alloc(0);
  private waiter: (() => void) | undefined;
  private ended = false;
  private readonly onData = (d: Buffer) => {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    if (this.buf.length > this.limit) this.stream.pause();
    this.waiter?.();
  };
  private readonly onEnd = () => {
    this.ended = true;
    this.waiter?.();
  };
  constructor(
    private readonly stream: Duplex,
    private readonly limit: number,
  ) {
    stream.on('data', this.onData);
    stream.on('end', this.onEnd);
    stream.on('close', this.onEnd);
  }

  /**
   * Waits until `parse(buffer)` returns a length (bytes consumed) or the stream ends / the limit
   * is passed (undefined). `parse` returns undefined while it needs more bytes.
   */
  async read(parse: (b: Buffer) => number | undefined): Promise<Buffer | undefined> {
    const deadline = Date.now() + HANDSHAKE_TIMEOUT_MS;
    for (;;) {
      const n = parse(this.buf);
      if (n !== undefined) {
        const msg = this.buf.subarray(0, n);
        this.buf = this.buf.subarray(n);
        return msg;
      }
      if (this.ended || this.buf.length > this.limit || Date.now() >= deadline) return undefined;
      this.stream.resume();
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.max(1, deadline - Date.now()));
        this.waiter = () => {
          clearTimeout(t);
          r();
        };
      });
      this.waiter = undefined;
    }
  }

  /** Stops buffering: the bytes read past the last message, for the raw relay. */
  release(): Buffer {
    this.stream.off('data', this.onData);
    this.stream.off('end', this.onEnd);
    this.stream.off('close', this.onEnd);
    this.stream.pause();
    const rest = this.buf;
    this.buf = Buffer.alloc(0);
    return rest;
  }
}

/** Connects to the first of `addresses` that answers (in the resolver's order). */
export async function connectPinned(addresses: readonly ResolvedAddress[], port: number): Promise<net.Socket> {
  let last: Error = new Error('no address');
  for (const a of addresses) {
    try {
      return await new Promise<net.Socket>((resolve, reject) => {
        // allowHalfOpen: an origin that half-closes still gets what the child sends after that.
        const s = net.connect({ host: a.address, port, family: a.family, allowHalfOpen: true });
        const timer = setTimeout(() => s.destroy(new Error('connect timeout')), CONNECT_TIMEOUT_MS);
        s.once('connect', () => {
          clearTimeout(timer);
          s.off('error', reject);
          resolve(s);
        });
        s.once('error', (e) => {
          clearTimeout(timer);
          reject(e);
        });
      });
    } catch (e) {
      last = e as Error;
    }
  }
  throw last;
}

/**
 * Moves `from`'s bytes to `to` in recycled read blocks (../process/read-blocks.ts): once a
 * connection streams, its reads go into blocks (RELAY_BLOCK_BYTES) that are already mapped instead of a
 * fresh 64 KiB allocation per read, which the kernel had to fault in and zero (measured in a
 * one-hop forwarder: ~300 → ~70 ms of CPU per 64 MiB; docs/performance.md "The managed network proxy").
 * A block is held until `to` has taken it; `from` waits while `to` is above its mark.
 */
function relayOneWay(from: Duplex, to: Duplex, blockBytes: number): void {
  let waiting = false;
  readRecycled(from, (d) => {
    if (to.destroyed) return;
    holdChunk(d);
    if (!to.write(d, () => releaseChunk(d)) && !waiting) {
      waiting = true;
      from.pause();
      to.once('drain', () => {
        waiting = false;
        from.resume();
      });
    }
  }, blockBytes);
  from.once('end', () => to.end());
}

/** Relays both ways; an end is passed on as a half close, a reset or error destroys both. */
export function splice(a: Duplex, b: Duplex, aPrefix?: Buffer): void {
  if (aPrefix && aPrefix.length > 0) b.write(aPrefix);
  const blockBytes = openRelays < LARGE_BLOCK_RELAYS ? RELAY_BLOCK_BYTES : NET_BLOCK_BYTES;
  openRelays++;
  relayOneWay(a, b, blockBytes);
  relayOneWay(b, a, blockBytes);
  let open = true;
  const kill = () => {
    if (open) openRelays--;
    open = false;
    a.destroy();
    b.destroy();
  };
  a.on('error', kill);
  b.on('error', kill);
  a.on('close', kill);
  b.on('close', kill);
  a.resume();
  b.resume();
}
