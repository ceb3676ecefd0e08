// Sends one binary websocket message as writes on the TCP socket — the websocket frame header,
// our frame header, then the payload buffer as it is — instead of copying header + payload into
// one new buffer for `ws.send` (the transport corks the socket, so they leave in one writev).
// For process output that copy, and the 64 KiB allocation behind it, was a fifth to a quarter of
// our server's CPU per streamed byte (a bare ws server without it: 78–107 ms per 128 MiB instead
// of 100–154 ms, measured alternating on this 2-core machine).
//
// Only on the server side of a `ws` socket (server frames are not masked) and only while `ws`'s
// own sender has nothing queued (no compression, no pending Blob), so the bytes on the wire are
// exactly what `ws.send` would have written, in the same order. Otherwise the caller falls back
// to `ws.send`. `ws.bufferedAmount` keeps counting these bytes (it reads the socket's queue).
import type WebSocket from 'ws';
import type { Socket } from 'node:net';

/** The parts of `ws` internals this relies on (checked at every send; absent → fall back). */
interface WsInternals {
  _isServer?: boolean;
  _socket?: Socket;
  _sender?: { _state?: number; _queue?: unknown[] };
}

/** The websocket frame header (FIN, binary, unmasked: server → client) for a `length`-byte payload. */
export function wsBinaryHeader(length: number): Buffer {
  if (length < 126) return Buffer.from([0x82, length]);
  if (length < 0x1_0000) return Buffer.from([0x82, 126, length >>> 8, length & 0xff]);
  const buf = Buffer.allocUnsafe(10);
  buf[0] = 0x82;
  buf[1] = 127;
  buf.writeUInt32BE(Math.floor(length / 0x1_0000_0000), 2);
  buf.writeUInt32BE(length >>> 0, 6);
  return buf;
}

/** The raw socket to write to, when writing around `ws.send` is safe right now. */
export function directSocket(ws: WebSocket): Socket | undefined {
  const w = ws as unknown as WsInternals;
  const sender = w._sender;
  const raw = w._socket;
  if (w._isServer !== true || !sender || !raw || ws.readyState !== 1 /* OPEN */) return undefined;
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
