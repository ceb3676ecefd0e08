// Reads a child's output pipe into recycled blocks (./read-blocks.ts) once it streams.
//
// A pipe starts on Node's own 'data' events. At its first large read (the child writes a lot)
// the socket switches to reading into a block of ours, through the mechanism behind net's
// public `onread` option (user buffers), which child_process pipes do not offer: the internal
// symbols and `useUserBuffer` are looked up and, when this Node lacks them, the pipe simply
// stays on 'data' events. Quiet pipes never hold a block. One that streamed and went quiet (a
// read below COPY_BELOW_BYTES) gives its block back and reads into a small buffer of its own
// until a read fills that: a thousand such processes hold 4 MiB, not 64.
import type { Readable } from 'node:stream';
import { READ_BLOCK_BYTES, releaseChunk, takeReadBlock } from './read-blocks';

/** A read at least this large makes the pipe switch to recycled blocks. */
const SWITCH_AT_BYTES = 32 * 1024;
/** Reads smaller than this are copied out, and the pipe goes back to its small buffer. */
const COPY_BELOW_BYTES = 16 * 1024;
/** The buffer of a pipe that went quiet; a read that fills it takes a block again. */
const QUIET_BUFFER_BYTES = 4 * 1024;

interface UserBufferInternals {
  _handle?: { useUserBuffer?(buf: Uint8Array): void } | null;
}

/**
 * Delivers every byte of `socket` to `deliver`, in order. A chunk in a recycled block is valid
 * only during the call unless the callee holds it (read-blocks.ts); `release` of the block
 * follows right after.
 */
export function readRecycled(socket: Readable, deliver: (data: Buffer) => void, blockBytes: number = READ_BLOCK_BYTES): void {
  const onData = (d: Buffer) => {
    deliver(d);
    if (d.length >= SWITCH_AT_BYTES && !switchScheduled) {
      switchScheduled = true;
      // Outside the read callback: the switch pushes a new listener on the C++ stream.
      setImmediate(() => {
        switchScheduled = false;
        trySwitch();
      });
    }
  };
  let switchScheduled = false;
  socket.on('data', onData);

  const trySwitch = () => {
    // (Once switched, onData is gone, so nothing schedules this again.)
    if (socket.destroyed || !socket.readable) return;
    // Only while flowing with nothing buffered: chunks waiting in the stream (it was paused)
    // must come out first, and a paused pipe must not start delivering. A later large read
    // tries again.
    if (socket.readableFlowing !== true || socket.readableLength > 0) return;
    const keys = userBufferKeys(socket);
    const handle = (socket as unknown as UserBufferInternals)._handle;
    if (!keys || !handle || typeof handle.useUserBuffer !== 'function') return;
    // What the next read goes into: a recycled block (held by this reader), or `quiet`.
    let block: Buffer | undefined = takeReadBlock(blockBytes);
    let quiet: Buffer | undefined;
    const next = () => block ?? (quiet ??= Buffer.allocUnsafeSlow(QUIET_BUFFER_BYTES));
    const onRead = (n: number) => {
      if (!block) {
        // Read into the small buffer: copied out; a full one means the pipe streams again.
        const full = n === quiet!.length;
        deliver(Buffer.from(quiet!.subarray(0, n)));
        if (full) block = takeReadBlock(blockBytes);
        return;
      }
      if (n < COPY_BELOW_BYTES) {
        deliver(Buffer.from(block.subarray(0, n)));
        // Gone quiet: the block goes back, the next reads use the small buffer.
        releaseChunk(block);
        block = undefined;
        return;
      }
      const chunk = block.subarray(0, n);
      // The reader's hold on the block passes to the chunk; read on into a new block.
      block = takeReadBlock(blockBytes);
      try {
        deliver(chunk);
      } finally {
        releaseChunk(chunk);
      }
    };
    const s = socket as unknown as Record<symbol, unknown>;
    s[keys.buffer] = next();
    s[keys.generator] = next;
    s[keys.callback] = onRead;
    handle.useUserBuffer(next());
    socket.off('data', onData);
    // The block being read into: given back once the pipe can no longer be read.
    socket.once('close', () => {
      if (block) releaseChunk(block);
      block = undefined;
    });
  };
}

/** net.Socket's own symbols behind `onread` (kBuffer, kBufferGen, kBufferCb), if this Node has them. */
function userBufferKeys(socket: Readable): { buffer: symbol; generator: symbol; callback: symbol } | undefined {
  const own = Object.getOwnPropertySymbols(socket);
  const find = (name: string) => own.find((s) => s.description === name);
  const buffer = find('kBuffer');
  const generator = find('kBufferGen');
  const callback = find('kBufferCb');
  return buffer && generator && callback ? { buffer, generator, callback } : undefined;
}
