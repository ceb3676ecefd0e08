// Recycled read blocks for children's output pipes, and the hold/release rules that make
// reusing them safe.
//
// Why: for every pipe read Node allocates a new 64 KiB buffer. Streaming 128 MiB that is 2,048
// fresh allocations, and each one touches memory the kernel must fault in and zero (~9,900
// page faults per 128 MiB on the benchmark machine). The server's RSS also grew to ~150 MiB,
// and every later spawn got slower with it (fork copies the page tables). A small set of
// reused blocks keeps the streamed bytes in memory that is already mapped and warm.
//
// Ownership: the bytes of a block may be overwritten only when nothing refers to them any
// more. Code that keeps a chunk beyond the synchronous output call holds it, and releases it
// when done: the process's output retention (./output-buffer.ts) and a websocket write in
// flight (../../transports/websocket-transport.ts). A consumer that cannot say when it is done
// (the in-process client gets the Buffer itself) gets the block donated: it is never reused
// and the garbage collector frees it, exactly as without recycling. A missing release only
// costs reuse; a missing hold would let later output overwrite a chunk, so holds are taken
// where the reference is stored, and session.ts donates for every sink that does not hold.

/** Size of one block: Node's own read size for pipes. */
export const READ_BLOCK_BYTES = 64 * 1024;

/**
 * Size of a block for a network relay (../network/stream-io.ts): a socket whose peer sends
 * fast has more than 64 KiB waiting per wakeup, and one read per 256 KiB took the proxied
 * download's system time from ~70 to ~45 ms per 64 MiB (docs/performance.md "The managed
 * network proxy").
 */
export const NET_BLOCK_BYTES = 256 * 1024;

/** Bytes of free blocks kept for reuse per size (16 MiB); beyond that a released block is left to the GC. */
const MAX_FREE_BYTES = 16 * 1024 * 1024;
/**
 * Bytes of free blocks per size kept when a stream ends (trimFreeBlocks): a congested peer had up to
 * ~150 JSON frames in flight (14 MiB), all free again once it caught up, and kept until the server
 * idled. What the next stream needs beyond this it faults in again.
 */
export const WARM_FREE_BYTES = 2 * 1024 * 1024;

/**
 * Where a block's bytes live. `mapped` (the default): a resizable ArrayBuffer, which V8 maps
 * with mmap outside the C heap and unmaps once it is collected. Buffers from malloc (Node's
 * own) went back to glibc, which kept them: after one 128 MiB stream its heap stayed ~30 MiB
 * larger for the life of the process, as freed 64 KiB chunks below live ones are never returned.
 * `heap`: for a block whose bytes JavaScript reads or writes one at a time (the websocket
 * reader's slab, unmasked in place): V8 11 indexes a typed array over a resizable buffer about
 * three times slower.
 */
export type BlockMemory = 'mapped' | 'heap';

/** ArrayBuffer with its resizable form (ES2024; the TypeScript lib of this tree predates it). */
const ResizableArrayBuffer = ArrayBuffer as unknown as new (bytes: number, options: { maxByteLength: number }) => ArrayBuffer;

function allocBlock(bytes: number, memory: BlockMemory): Buffer {
  if (memory === 'heap') return Buffer.allocUnsafeSlow(bytes);
  return Buffer.from(new ResizableArrayBuffer(bytes, { maxByteLength: bytes }));
}

interface Block {
  readonly bytes: Buffer;
  /** The free list it goes back to (one per block size). */
  readonly free: Block[];
  /** Holders: the reader (while it reads into the block) and every keeper of a chunk of it. */
  refs: number;
}

const blockOf = new WeakMap<ArrayBufferLike, Block>();
/** Free blocks by size: mapped blocks under their size, heap blocks under minus their size. */
const freeBySize = new Map<number, Block[]>();
/** Counters for tests and diagnostics; `held`: blocks someone holds now (donated ones not counted). */
export const readBlockStats = { allocated: 0, reused: 0, donated: 0, held: 0 };

/**
 * A block for a reader to read into, held once by that reader (release it, or hand the hold
 * on with the chunk read into it). Every block is its own allocation, so `chunk.buffer`
 * identifies the block of any chunk cut from it.
 */
export function takeReadBlock(bytes: number = READ_BLOCK_BYTES, memory: BlockMemory = 'mapped'): Buffer {
  const key = memory === 'heap' ? -bytes : bytes;
  let free = freeBySize.get(key);
  if (!free) freeBySize.set(key, (free = []));
  let block = free.pop();
  if (block) readBlockStats.reused++;
  else {
    block = { bytes: allocBlock(bytes, memory), free, refs: 0 };
    blockOf.set(block.bytes.buffer, block);
    readBlockStats.allocated++;
  }
  block.refs = 1;
  readBlockStats.held++;
  return block.bytes;
}

/** Is this chunk (a view) in a recycled block? */
export function isRecycled(data: Uint8Array): boolean {
  return blockOf.has(data.buffer);
}

/** Keeps the chunk's bytes from being reused until releaseChunk (no-op for other buffers). */
export function holdChunk(data: Uint8Array): void {
  const block = blockOf.get(data.buffer);
  if (block) block.refs++;
}

/** Ends one hold taken by holdChunk or takeReadBlock; the last one frees the block for reuse. */
export function releaseChunk(data: Uint8Array): void {
  const block = blockOf.get(data.buffer);
  if (!block) return;
  block.refs--;
  if (block.refs !== 0) return;
  readBlockStats.held--;
  if ((block.free.length + 1) * block.bytes.length <= MAX_FREE_BYTES) block.free.push(block);
}

/** Forgets the free blocks kept for reuse (an idle server's memory goes back); held blocks are untouched. */
export function dropFreeBlocks(): void {
  trimFreeBlocks(0);
}

/**
 * Forgets free blocks beyond `keepBytes` per size (the oldest go first), their pages at once: a
 * mapped block is shrunk to nothing (V8 decommits the pages of a resizable ArrayBuffer that
 * shrinks), not left for the next full collection. Held blocks are untouched.
 */
export function trimFreeBlocks(keepBytes: number = WARM_FREE_BYTES): void {
  for (const free of freeBySize.values()) {
    const keep = free.length === 0 ? 0 : Math.floor(keepBytes / free[0].bytes.length);
    if (free.length <= keep) continue;
    for (const block of free.splice(0, free.length - keep)) {
      blockOf.delete(block.bytes.buffer);
      const ab = block.bytes.buffer as ArrayBuffer & { resizable?: boolean; resize?(n: number): void };
      if (ab.resizable) ab.resize!(0);
    }
  }
}

/** The chunk goes to a consumer that keeps it as long as it likes: its block is never reused. */
export function donateChunk(data: Uint8Array): void {
  const block = blockOf.get(data.buffer);
  if (!block || block.refs === Infinity) return;
  block.refs = Infinity;
  blockOf.delete(data.buffer);
  readBlockStats.donated++;
  readBlockStats.held--;
}

/**
 * Ends of the chunks lent out of each block (lendChunk), so that a chunk is given back once and
 * only by a view of that chunk: a release by anyone else could let the block be read into
 * while its holder still refers to it.
 */
const lentEnds = new WeakMap<ArrayBufferLike, Set<number>>();

/**
 * A reader hands `data` (a view of one of its blocks) to a receiver that keeps it past the
 * synchronous call: the block is held until the receiver calls returnChunk. No-op for other
 * buffers. A chunk never given back only costs reuse.
 */
export function lendChunk(data: Uint8Array): void {
  if (!blockOf.has(data.buffer)) return;
  let ends = lentEnds.get(data.buffer);
  if (!ends) lentEnds.set(data.buffer, (ends = new Set()));
  ends.add(data.byteOffset + data.byteLength);
  holdChunk(data);
}

/**
 * The receiver is done with a lent chunk: `data` is the chunk or a view ending where it ends
 * (a payload cut from a lent message). Only the first call counts; for any other buffer (not
 * lent, or lent and given back already) it does nothing.
 */
export function returnChunk(data: Uint8Array): void {
  if (!lentEnds.get(data.buffer)?.delete(data.byteOffset + data.byteLength)) return;
  releaseChunk(data);
}
