// Sends one binary websocket message as writes on the TCP socket — the websocket frame header,
// our frame header, then the payload buffer as it is — instead of copying header + payload into
// one new buffer for `ws.send` (the transport corks the socket, so they leave in one writev).
// For process output that copy, and the 64 KiB allocation behind it, was a fifth to a quarter of
// our server's CPU per streamed byte (the CHANGELOG, "Stdout streaming against its ceilings").
//
// Only on the server side of a `ws` socket (server frames are not masked) and only while `ws`'s
// own sender has nothing queued (no compression, no pending Blob), so the bytes on the wire are
// exactly what `ws.send` would have written, in the same order. Otherwise the caller falls back
// to `ws.send`. `ws.bufferedAmount` keeps counting these bytes (it reads the socket's queue).
import type WebSocket from 'ws';
import type { Socket } from 'node:net';
import { randomFillSync } from 'node:crypto';
import { unmask } from './ws-mask';
import { releaseChunk, takeReadBlock } from '../server/process/read-blocks';

/** The parts of `ws` internals this relies on (checked at every send; absent → fall back). */
interface WsInternals {
  _isServer?: boolean;
  _socket?: Socket;
  _sender?: { _state?: number; _queue?: unknown[] };
}

/** The websocket frame header (FIN, binary, unmasked: server → client) for a `length`-byte payload. */
export function wsBinaryHeader(length: number): Buffer {
  return wsHeader(0x82, length);
}

/** FIN + `first` (0x82 binary, 0x81 text), unmasked, for a `length`-byte payload. */
function wsHeader(first: number, length: number): Buffer {
  if (length < 126) return Buffer.from([first, length]);
  if (length < 0x1_0000) return Buffer.from([first, 126, length >>> 8, length & 0xff]);
  const buf = Buffer.allocUnsafe(10);
  buf[0] = first;
  buf[1] = 127;
  buf.writeUInt32BE(Math.floor(length / 0x1_0000_0000), 2);
  buf.writeUInt32BE(length >>> 0, 6);
  return buf;
}

/** The raw socket to write to, when writing around `ws.send` is safe right now (`client`: our side is the client). */
export function directSocket(ws: WebSocket, client = false): Socket | undefined {
  const w = ws as unknown as WsInternals;
  const sender = w._sender;
  const raw = w._socket;
  if (w._isServer !== !client || !sender || !raw || ws.readyState !== 1 /* OPEN */) return undefined;
  // ws's sender queues while it compresses or reads a Blob (state ≠ 0): then order needs ws.send.
  if (sender._state !== 0 || !Array.isArray(sender._queue) || sender._queue.length > 0) return undefined;
  if (!raw.writable || typeof raw.write !== 'function') return undefined;
  return raw;
}

/**
 * Writes `head` followed by `payload` as one binary message. False when it did not (use ws.send
 * then). `written` is called once the socket is done with `payload` (written, or failed).
 */
export function sendDirect(ws: WebSocket, head: Buffer, payload: Uint8Array, written?: () => void): boolean {
  const raw = directSocket(ws);
  if (!raw) return false;
  raw.write(wsBinaryHeader(head.length + payload.length));
  raw.write(head);
  if (payload.length > 0) raw.write(payload, written);
  else written?.();
  return true;
}

/** Frames up to this size (a 64 KiB block and its headers) come from a pool of at most MAX_POOLED_FRAMES. */
const POOLED_FRAME_BYTES = 64 * 1024 + 4096;
const MAX_POOLED_FRAMES = 128;
const framePool: Buffer[] = [];
const maskKeys = Buffer.alloc(4096);
let maskAt = maskKeys.length;

/**
 * Client side: `head` followed by `payload` as one masked binary message, built in one buffer
 * (websocket header, mask key, then the masked bytes), pooled up to 64 KiB blocks. `ws.send` of
 * a frame we built copies it once more to mask it. False when it did not send (use ws.send then).
 */
export function sendMaskedDirect(ws: WebSocket, head: Buffer, payload: Uint8Array): boolean {
  const raw = directSocket(ws, true);
  if (!raw) return false;
  const length = head.length + payload.length;
  const hdr = length < 126 ? 2 : length < 0x1_0000 ? 4 : 10;
  const size = hdr + 4 + length;
  const owned = size <= POOLED_FRAME_BYTES ? (framePool.pop() ?? Buffer.allocUnsafeSlow(POOLED_FRAME_BYTES)) : undefined;
  const frame = owned ? owned.subarray(0, size) : Buffer.allocUnsafe(size);
  frame[0] = 0x82;
  if (hdr === 2) frame[1] = 0x80 | length;
  else if (hdr === 4) {
    frame[1] = 0x80 | 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 0x80 | 127;
    frame.writeUInt32BE(Math.floor(length / 0x1_0000_0000), 2);
    frame.writeUInt32BE(length >>> 0, 6);
  }
  // A fresh random key per frame (RFC 6455 5.3), drawn from a pool as ws does.
  if (maskAt === maskKeys.length) {
    randomFillSync(maskKeys);
    maskAt = 0;
  }
  const key = maskKeys.subarray(maskAt, maskAt + 4);
  maskAt += 4;
  key.copy(frame, hdr);
  head.copy(frame, hdr + 4);
  frame.set(payload, hdr + 4 + head.length);
  unmask(frame.subarray(hdr + 4), key);
  // A pooled buffer is reused once the socket is done with it: the blocks in flight are all the
  // memory this holds (fresh 64 KiB buffers per block were garbage up to V8's 64 MiB external limit).
  raw.write(frame, owned && (() => void (framePool.length < MAX_POOLED_FRAMES && framePool.push(owned))));
  return true;
}

/**
 * Writes `parts` in order as one text message (JSON whose large payload is a buffer of its own,
 * src/transports/encode.ts). False when it did not (use ws.send of the joined parts then).
 */
export function sendDirectText(ws: WebSocket, parts: Uint8Array[]): boolean {
  const raw = directSocket(ws);
  if (!raw) return false;
  let length = 0;
  for (const p of parts) length += p.length;
  raw.write(wsHeader(0x81, length));
  for (const p of parts) if (p.length > 0) raw.write(p);
  return true;
}

/**
 * Text frames up to this size (a 64 KiB output chunk as base64 JSON: ~87.5 KiB, plus its headers)
 * are built in recycled blocks (../server/process/read-blocks.ts, kept up to 16 MiB and dropped
 * when the server idles). A fresh ~88 KiB malloc per chunk, freed whenever the collector got to
 * its Buffer, left the C heap fragmented and ~20 MiB larger after a JSON stream.
 */
export const POOLED_TEXT_FRAME_BYTES = 96 * 1024;

/** A text frame being built in a recycled block: its JSON goes into `body`, then `send` writes it. */
export interface PooledTextFrame {
  body: Buffer;
  send(): void;
}

/**
 * Server side: a recycled block for a text message of `length` bytes, when writing around
 * `ws.send` is safe right now and the frame fits; undefined otherwise (use ws.send then).
 * `send()` writes header and body in one write; the block is reused once the socket is done with it.
 */
export function pooledTextFrame(ws: WebSocket, length: number): PooledTextFrame | undefined {
  if (length + 10 > POOLED_TEXT_FRAME_BYTES) return undefined;
  const raw = directSocket(ws);
  if (!raw) return undefined;
  const block = takeReadBlock(POOLED_TEXT_FRAME_BYTES);
  const hdr = length < 126 ? 2 : length < 0x1_0000 ? 4 : 10;
  block[0] = 0x81;
  if (hdr === 2) block[1] = length;
  else if (hdr === 4) {
    block[1] = 126;
    block.writeUInt16BE(length, 2);
  } else {
    block[1] = 127;
    block.writeUInt32BE(0, 2);
    block.writeUInt32BE(length, 6);
  }
  return {
    body: block.subarray(hdr, hdr + length),
    send: () => {
      // Checked again: nothing may have been queued by ws in between (encoding is synchronous).
      const now = directSocket(ws);
      if (now) now.write(block.subarray(0, hdr + length), () => releaseChunk(block));
      else {
        ws.send(Buffer.from(block.subarray(hdr, hdr + length)), { binary: false });
        releaseChunk(block);
      }
    },
  };
}
