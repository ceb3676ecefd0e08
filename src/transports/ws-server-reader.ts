// The receive side of a server `ws` WebSocket on an accepted plain TCP socket (./ws-frame-reader.ts
// parses and unmasks in place).
//
// Why: streaming 1 GiB of fs/writeBlock (64 KiB binary frames), Node's fresh 64 KiB buffer per
// socket read and ws's copy of every frame that spans two reads were 2 GiB of external memory,
// and V8 ran a full garbage collection for every 64 MiB of it: most of our server's CPU beyond
// the file writes themselves (docs/performance.md).
//
// How: the accepted socket is switched to user-buffer reads (what net's `onread` option sets up
// for a socket we connect ourselves; an accepted one has no such option, so the same three
// fields of the socket are set and its handle told to use our buffer). The slabs are recycled
// blocks (../server/process/read-blocks.ts): a binary payload is lent to its receiver, and a
// slab is read into again only after the reader has moved on and every payload lent from it was
// given back (fs/writeBlock gives its chunk back once written). A payload never given back only
// costs that slab's reuse.
//
// Declines (ws's own receiver reads as before) for TLS sockets, and where Node's socket
// internals are not as expected.
import * as net from 'node:net';
import type WebSocket from 'ws';
import { lendChunk, releaseChunk, takeReadBlock } from '../server/process/read-blocks';
import { FrameReader, SERVER_MESSAGES_PER_SLICE, SLAB_BYTES, wsSocket } from './ws-frame-reader';

/** Node's socket fields behind `onread` (lib/net.js: kBuffer, kBufferCb, kBufferGen). */
interface UserBufferFields {
  buffer: symbol;
  callback: symbol;
  generator: symbol;
}

function userBufferFields(socket: net.Socket): UserBufferFields | undefined {
  const named = (name: string) => Object.getOwnPropertySymbols(socket).find((s) => s.description === name);
  const buffer = named('kBuffer');
  const callback = named('kBufferCb');
  const generator = named('kBufferGen');
  if (!buffer || !callback || !generator) return undefined;
  const fields = socket as unknown as Record<symbol, unknown>;
  // Already reading into a caller's buffer: not ours to take over.
  if (fields[buffer] !== null || fields[callback] !== null || fields[generator] !== null) return undefined;
  return { buffer, callback, generator };
}

class ServerFrameReader extends FrameReader {
  constructor(maxPayload: number) {
    super(maxPayload, true, SERVER_MESSAGES_PER_SLICE);
  }

  protected allocSlab(bytes: number): Buffer {
    // Only slab-sized blocks are recycled; a larger frame's own slab is left to the GC. Heap
    // memory: payloads are unmasked in place by JavaScript (read-blocks.ts BlockMemory).
    return bytes === SLAB_BYTES ? takeReadBlock(SLAB_BYTES, 'heap') : Buffer.allocUnsafeSlow(bytes);
  }
  protected dropSlab(slab: Buffer): void {
    releaseChunk(slab);
  }
  protected lend(view: Buffer): void {
    lendChunk(view);
  }

  takeOver(ws: WebSocket, socket: net.Socket, fields: UserBufferFields, handle: { useUserBuffer(buf: Uint8Array): void }): void {
    // The bytes read before now go into the slab first, before the kernel gets a buffer.
    this.adopt(ws, socket);
    const f = socket as unknown as Record<symbol, unknown>;
    f[fields.callback] = (n: number) => {
      this.onRead(n);
      return true;
    };
    f[fields.generator] = () => this.nextBuffer();
    const first = this.nextBuffer();
    f[fields.buffer] = first;
    handle.useUserBuffer(first);
    // In user-buffer mode nothing is pushed as 'data'; the listener keeps the stream flowing,
    // so that EOF still ends it ('end', which ws listens for).
    socket.on('data', () => undefined);
    socket.once('close', () => this.release());
  }
}

/**
 * Takes over receiving for a server-side `ws` (call from handleUpgrade's callback). False when
 * it cannot (TLS, an unexpected socket): ws's receiver then reads as before.
 */
export function attachServerReader(ws: WebSocket, maxPayload: number): boolean {
  const socket = wsSocket(ws);
  if (!(socket instanceof net.Socket) || (socket as { encrypted?: boolean }).encrypted) return false;
  const handle = (socket as unknown as { _handle?: { useUserBuffer?: (buf: Uint8Array) => void } })._handle;
  if (!handle || typeof handle.useUserBuffer !== 'function' || socket.destroyed) return false;
  const fields = userBufferFields(socket);
  if (!fields) return false;
  new ServerFrameReader(maxPayload).takeOver(ws, socket, fields, handle as { useUserBuffer(buf: Uint8Array): void });
  return true;
}
