// Retained output of one process, for process/read. Capped in bytes: the oldest chunks are
// dropped first, and the highest dropped seq is remembered so a reader can tell it missed
// output (rather than silently receiving a gap).
// A closed process stays readable for a while (30 s by default) with up to 1 MiB of output, which
// is rarely read again: once it is settled that output is kept deflated (see pack()).
import zlib from 'node:zlib';
import type { OutputStream } from '../../protocol/types';
import { holdChunk, isRecycled, releaseChunk, trimFreeBlocks } from './read-blocks';

export interface RetainedChunk {
  seq: number;
  stream: OutputStream;
  data: Buffer;
}

/** Retained chunks shorter than this are copied out of their recycled block (a quarter of a 64 KiB block). */
export const COPY_BELOW_BYTES = 16 * 1024;

/** Retained output below this is not worth deflating (a closed process's few lines). */
export const PACK_MIN_BYTES = 32 * 1024;
/** Deflated output is kept only when it is at most this fraction of the raw bytes (else the raw chunks stay). */
const PACK_MAX_RATIO = 0.5;
/** How long a settled buffer waits before it is deflated, and again after a read inflated it. */
export const PACK_AFTER_MS = 1000;

/** What became of each deflate (tests, diagnostics): kept, not worth keeping, or dropped because the chunks changed meanwhile. */
export const outputPackStats = { packed: 0, declined: 0, dropped: 0 };

/** Deflated retained output: the chunks' seqs, streams and lengths, and their bytes in one blob. */
interface Packed {
  blob: Buffer;
  seqs: Float64Array;
  streams: Uint8Array;
  lengths: Uint32Array;
}
/** The streams of packed chunks, by their index in Packed.streams. */
const STREAMS: readonly OutputStream[] = ['stdout', 'stderr', 'pty'];

/** Placeholder left in evicted slots (below `head`, never read). */
const EVICTED: RetainedChunk = Object.freeze({ seq: 0, stream: 'stdout', data: Buffer.alloc(0) });

export class OutputBuffer {
  private chunks: RetainedChunk[] = [];
  private head = 0; // index of the oldest retained chunk (avoids O(n) shift)
  private bytes = 0;
  /** Highest seq dropped by the cap (0 = nothing dropped). */
  evictedThroughSeq = 0;
  /** The retained output, deflated (then `chunks` is empty): see settle(). */
  private packed: Packed | undefined;
  /** Bumped by every change of the chunks: a deflate that finishes after one is dropped. */
  private version = 0;
  private packTimer: ReturnType<typeof setTimeout> | undefined;
  /** settle() was called: no more output comes, so the buffer may be packed. */
  private settled = false;
  /** A deflate is running, or the output was found not worth deflating (not tried again). */
  private packTried = false;

  /** Raised for a flow-controlled process (retention ≥ its window); applies from the next push. */
  constructor(public capBytes: number) {}

  get retainedBytes(): number {
    return this.bytes;
  }

  /**
   * Retains the chunk; a chunk in a recycled read block is held until it is dropped, unless it is
   * small: then a copy is kept and the block goes back for reuse. A process that printed one line
   * kept a whole 64 KiB block for the 30 s its output stays readable after its exit.
   */
  push(chunk: RetainedChunk): void {
    if (chunk.data.length < COPY_BELOW_BYTES && isRecycled(chunk.data)) chunk = { seq: chunk.seq, stream: chunk.stream, data: Buffer.from(chunk.data) };
    else holdChunk(chunk.data);
    this.unpack();
    this.version++;
    this.chunks.push(chunk);
    this.bytes += chunk.data.length;
    this.evictToCap();
  }

  /** Drops the oldest chunks until the retained bytes fit the cap (after a push, or a lowered cap). */
  evictToCap(): void {
    if (this.bytes <= this.capBytes) return;
    this.unpack();
    this.version++;
    // Keep at least the newest chunk even if it alone exceeds the cap.
    while (this.bytes > this.capBytes && this.chunks.length - this.head > 1) {
      const old = this.chunks[this.head];
      // Drop the reference now, not at the next compaction: up to 1024 evicted 64 KiB chunks
      // (64 MiB) stayed reachable, were promoted to the old generation and freed late, which
      // left the C heap (RSS) ~90 MiB bigger after one large stream — and fork, hence every
      // spawn, slower.
      this.chunks[this.head++] = EVICTED;
      releaseChunk(old.data);
      this.bytes -= old.data.length;
      this.evictedThroughSeq = old.seq;
    }
    if (this.head > 1024 && this.head * 2 > this.chunks.length) {
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
  }

  /** Drops everything retained (the process is gone): recycled blocks go back for reuse. */
  clear(): void {
    clearTimeout(this.packTimer);
    this.settled = false;
    this.version++;
    if (this.packed) this.evictedThroughSeq = this.packed.seqs[this.packed.seqs.length - 1];
    this.packed = undefined;
    for (let i = this.head; i < this.chunks.length; i++) releaseChunk(this.chunks[i].data);
    if (this.chunks.length > this.head) this.evictedThroughSeq = this.chunks[this.chunks.length - 1].seq;
    this.chunks = [];
    this.head = 0;
    this.bytes = 0;
  }

  /**
   * Chunks with seq > afterSeq, within a byte budget (at least one chunk if any).
   * `complete` is false when the budget cut the answer short.
   */
  read(afterSeq: number, maxBytes: number | undefined): { chunks: RetainedChunk[]; complete: boolean } {
    if (this.packed && !this.hasAfter(afterSeq)) return { chunks: [], complete: true };
    this.unpack();
    if (this.settled) this.schedulePack(); // packed again only once reads stop
    const out: RetainedChunk[] = [];
    let used = 0;
    // Binary search for the first chunk with seq > afterSeq (seqs increase).
    let lo = this.head;
    let hi = this.chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.chunks[mid].seq <= afterSeq) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.chunks.length; i++) {
      const c = this.chunks[i];
      if (maxBytes !== undefined && out.length > 0 && used + c.data.length > maxBytes) return { chunks: out, complete: false };
      out.push(c);
      used += c.data.length;
    }
    return { chunks: out, complete: true };
  }

  hasAfter(afterSeq: number): boolean {
    if (this.packed) return this.packed.seqs[this.packed.seqs.length - 1] > afterSeq;
    return this.chunks.length > this.head && this.chunks[this.chunks.length - 1].seq > afterSeq;
  }

  /** The newest retained output, at most `maxBytes` (whole chunks, oldest first), as text. */
  tail(maxBytes: number): string {
    this.unpack();
    const parts: Buffer[] = [];
    let used = 0;
    for (let i = this.chunks.length - 1; i >= this.head && used < maxBytes; i--) {
      const d = this.chunks[i].data;
      const take = d.length > maxBytes - used ? d.subarray(d.length - (maxBytes - used)) : d;
      parts.push(take);
      used += take.length;
    }
    return Buffer.concat(parts.reverse()).toString('utf8');
  }

  /**
   * No more output will come (the process closed): the retained output is deflated in the
   * background after PACK_AFTER_MS, and its blocks go back. A read inflates it again (and packs
   * it again later). Output that does not deflate to half its size, or is small, stays as it is.
   */
  settle(): void {
    this.settled = true;
    this.schedulePack();
  }

  /** Is the retained output deflated now (tests, diagnostics)? */
  get isPacked(): boolean {
    return this.packed !== undefined;
  }

  private schedulePack(): void {
    if (!this.settled || this.packed || this.packTried || this.bytes < PACK_MIN_BYTES) return;
    clearTimeout(this.packTimer);
    this.packTimer = setTimeout(() => this.pack(), PACK_AFTER_MS);
    this.packTimer.unref?.();
  }

  private pack(): void {
    if (this.packed || this.chunks.length === this.head) return;
    const live = this.chunks.slice(this.head);
    const raw = Buffer.concat(live.map((c) => c.data));
    const version = this.version;
    this.packTried = true;
    // Level 1: a tenth of level 6's time for most of its gain on text; on the thread pool, so the
    // event loop only copies the chunks.
    zlib.deflateRaw(raw, { level: 1 }, (err, blob) => {
      if (err || version !== this.version || blob.length > raw.length * PACK_MAX_RATIO) {
        // Evicted or cleared meanwhile: tried again (when still settled); incompressible: never.
        if (!err && version !== this.version) {
          outputPackStats.dropped++;
          this.packTried = false;
          this.schedulePack();
        } else outputPackStats.declined++;
        return;
      }
      outputPackStats.packed++;
      this.packed = {
        blob: Buffer.from(blob), // exactly its size (zlib's may be a view of a larger block)
        seqs: Float64Array.from(live, (c) => c.seq),
        streams: Uint8Array.from(live, (c) => STREAMS.indexOf(c.stream)),
        lengths: Uint32Array.from(live, (c) => c.data.length),
      };
      for (const c of live) releaseChunk(c.data);
      trimFreeBlocks();
      this.chunks = [];
      this.head = 0;
    });
  }

  /** Inflates packed output back into chunks (one buffer, viewed per chunk), and packs it again later. */
  private unpack(): void {
    const p = this.packed;
    if (!p) return;
    this.packed = undefined;
    const raw = zlib.inflateRawSync(p.blob);
    let at = 0;
    this.chunks = Array.from(p.seqs, (seq, i) => ({ seq, stream: STREAMS[p.streams[i]], data: raw.subarray(at, (at += p.lengths[i])) }));
    this.head = 0;
    this.packTried = false;
    this.schedulePack();
  }
}
