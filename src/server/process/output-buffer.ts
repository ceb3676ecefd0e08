// Retained output of one process, for process/read. Capped in bytes: the oldest chunks are
// dropped first, and the highest dropped seq is remembered so a reader can tell it missed
// output (rather than silently receiving a gap).
import type { OutputStream } from '../../protocol/types';

export interface RetainedChunk {
  seq: number;
  stream: OutputStream;
  data: Buffer;
}

export class OutputBuffer {
  private chunks: RetainedChunk[] = [];
  private head = 0; // index of the oldest retained chunk (avoids O(n) shift)
  private bytes = 0;
  /** Highest seq dropped by the cap (0 = nothing dropped). */
  evictedThroughSeq = 0;

  constructor(private readonly capBytes: number) {}

  get retainedBytes(): number {
    return this.bytes;
  }

  push(chunk: RetainedChunk): void {
    this.chunks.push(chunk);
    this.bytes += chunk.data.length;
    // Keep at least the newest chunk even if it alone exceeds the cap.
    while (this.bytes > this.capBytes && this.chunks.length - this.head > 1) {
      const old = this.chunks[this.head++];
      this.bytes -= old.data.length;
      this.evictedThroughSeq = old.seq;
    }
    if (this.head > 1024 && this.head * 2 > this.chunks.length) {
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
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
}
