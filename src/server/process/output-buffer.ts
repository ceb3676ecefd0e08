// Retained output of one process, for process/read. Capped in bytes: the oldest chunks are
// dropped first, and the highest dropped seq is remembered so a reader can tell it missed
// output (rather than silently receiving a gap).
import type { OutputStream } from '../../protocol/types';
import { holdChunk, isRecycled, releaseChunk } from './read-blocks';

export interface RetainedChunk {
  seq: number;
  stream: OutputStream;
  data: Buffer;
}

/** Retained chunks shorter than this are copied out of their recycled block (a quarter of a 64 KiB block). */
export const COPY_BELOW_BYTES = 16 * 1024;

/** Placeholder left in evicted slots (below `head`, never read). */
const EVICTED: RetainedChunk = Object.freeze({ seq: 0, stream: 'stdout', data: Buffer.alloc(0) });

export class OutputBuffer {
  private chunks: RetainedChunk[] = [];
  private head = 0; // index of the oldest retained chunk (avoids O(n) shift)
  private bytes = 0;
  /** Highest seq dropped by the cap (0 = nothing dropped). */
  evictedThroughSeq = 0;

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
    this.chunks.push(chunk);
    this.bytes += chunk.data.length;
    this.evictToCap();
  }

  /** Drops the oldest chunks until the retained bytes fit the cap (after a push, or a lowered cap). */
  evictToCap(): void {
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
    return this.chunks.length > this.head && this.chunks[this.chunks.length - 1].seq > afterSeq;
  }

  /** The newest retained output, at most `maxBytes` (whole chunks, oldest first), as text. */
  tail(maxBytes: number): string {
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
}
