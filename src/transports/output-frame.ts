// Binary frames (extension `binaryOutput`, websocket only): bytes travel as they are instead
// of base64 inside JSON. Only sent to a client that opted in at initialize; everything else
// (requests, other responses and notifications, process/read) stays JSON.
//
// Kind 1, one process/output event per binary websocket message (big-endian):
//   offset 0   u8   magic 0xE5 (no JSON text starts with this byte; a UTF-8 BOM starts 0xEF)
//          1   u8   version 1
//          2   u8   kind: 1 = process/output
//          3   u8   stream: 0 stdout, 1 stderr, 2 pty
//          4   u32  seq, high 21 bits (seq is a JSON-safe integer < 2^53)
//          8   u32  seq, low 32 bits
//         12   u16  n = processId length in UTF-8 bytes
//         14   n    processId (UTF-8)
//       14+n   ...  the output bytes (the rest of the message)
//
// Kind 2, a response whose result carries bytes (fs/readBlock's `chunk`):
//   offset 0   u8   magic 0xE5
//          1   u8   version 1
//          2   u8   kind: 2 = response with bytes
//          3   u8   n = length of the result member's name (ASCII)
//          4   u32  m = length of the JSON text
//          8   n    the member name (e.g. "chunk")
//        8+n   m    the response as JSON, with that member null
//      8+n+m   ...  the member's bytes (the rest of the message)
//
// Kind 3, a request whose params carry bytes (fs/writeBlock's `chunk`, sent by a client whose
// server enabled binaryOutput): kind 2's layout, the member in `params` instead of `result`.
import type { OutputStream } from '../protocol/types';
import { bytesMemberOf } from '../rpc/bytes-members';

export const FRAME_MAGIC = 0xe5;
export const FRAME_VERSION = 1;
export const FRAME_KIND_OUTPUT = 1;
export const FRAME_KIND_RESPONSE_BYTES = 2;
export const FRAME_KIND_REQUEST_BYTES = 3;
export const FRAME_HEADER_BYTES = 14;

const STREAMS: readonly OutputStream[] = ['stdout', 'stderr', 'pty'];
const STREAM_CODE: Record<OutputStream, number> = { stdout: 0, stderr: 1, pty: 2 };

/** The decoded frame, as the notification the client handles (`data` instead of base64 `chunk`). */
export interface OutputFrameMessage {
  method: 'process/output';
  params: { processId: string; seq: number; stream: OutputStream; data: Buffer };
}

/** Header + payload in one buffer (one copy of `data`: a websocket message is one buffer). */
export function encodeOutputFrame(processId: string, seq: number, stream: OutputStream, data: Uint8Array): Buffer {
  const buf = encodeOutputFrameHeader(processId, seq, stream, data.length);
  buf.set(data, buf.length - data.length);
  return buf;
}

/**
 * The frame up to the output bytes (header and process id), with room for `extra` more bytes
 * behind it: encodeOutputFrame copies the payload there; a sender that writes the payload
 * buffer separately (./ws-direct-frame.ts) passes 0.
 */
export function encodeOutputFrameHeader(processId: string, seq: number, stream: OutputStream, extra = 0): Buffer {
  const idLen = Buffer.byteLength(processId, 'utf8');
  if (idLen > 0xffff) throw new Error(`process id too long for a binary frame (${idLen} bytes)`);
  const buf = Buffer.allocUnsafe(FRAME_HEADER_BYTES + idLen + extra);
  buf[0] = FRAME_MAGIC;
  buf[1] = FRAME_VERSION;
  buf[2] = FRAME_KIND_OUTPUT;
  buf[3] = STREAM_CODE[stream];
  buf.writeUInt32BE(Math.floor(seq / 0x1_0000_0000), 4);
  buf.writeUInt32BE(seq >>> 0, 8);
  buf.writeUInt16BE(idLen, 12);
  buf.write(processId, FRAME_HEADER_BYTES, 'utf8');
  return buf;
}

export function encodeResponseBytesFrame(message: object): Buffer {
  return encodeResponseBytesHeader(message, true).head;
}

/**
 * A kind 2 (response) or 3 (request) frame up to the bytes (header, member name, JSON) and the member's bytes; with
 * `withBytes` the bytes are copied in behind (then `head` is the whole frame), else a sender
 * writes them separately (./ws-direct-frame.ts).
 */
export function encodeResponseBytesHeader(message: object, withBytes = false): { head: Buffer; bytes: Uint8Array } {
  const m = bytesMemberOf(message)!;
  const json = Buffer.from(JSON.stringify({ ...message, [m.where]: { ...m.holder, [m.key]: null } }), 'utf8');
  const name = Buffer.from(m.key, 'latin1');
  if (name.length > 0xff) throw new Error('bytes member name too long for a binary frame');
  const buf = Buffer.allocUnsafe(8 + name.length + json.length + (withBytes ? m.bytes.length : 0));
  buf[0] = FRAME_MAGIC;
  buf[1] = FRAME_VERSION;
  buf[2] = m.where === 'result' ? FRAME_KIND_RESPONSE_BYTES : FRAME_KIND_REQUEST_BYTES;
  buf[3] = name.length;
  buf.writeUInt32BE(json.length, 4);
  name.copy(buf, 8);
  json.copy(buf, 8 + name.length);
  if (withBytes) buf.set(m.bytes, 8 + name.length + json.length);
  return { head: buf, bytes: m.bytes };
}

/** Decodes any of our binary frames into the message it stands for (payloads are views, not copies). */
export function decodeFrame(buf: Buffer): object {
  if (buf.length >= 3 && buf[1] === FRAME_VERSION) {
    if (buf[2] === FRAME_KIND_RESPONSE_BYTES) return decodeBytesFrame(buf, 'result');
    if (buf[2] === FRAME_KIND_REQUEST_BYTES) return decodeBytesFrame(buf, 'params');
  }
  return decodeOutputFrame(buf);
}

function decodeBytesFrame(buf: Buffer, where: 'result' | 'params'): object {
  if (buf.length < 8) throw new Error(`binary frame too short (${buf.length} bytes)`);
  const n = buf[3];
  const m = buf.readUInt32BE(4);
  const what = where === 'result' ? 'response' : 'request';
  if (buf.length < 8 + n + m) throw new Error(`binary ${what} frame truncated`);
  const key = buf.toString('latin1', 8, 8 + n);
  const message = JSON.parse(buf.toString('utf8', 8 + n, 8 + n + m)) as Record<string, unknown>;
  const holder = message?.[where];
  if (!key || holder === null || typeof holder !== 'object' || Array.isArray(holder) || (where === 'params' && typeof message.method !== 'string')) {
    throw new Error(`binary ${what} frame without a ${where} object to hold its bytes`);
  }
  (holder as Record<string, unknown>)[key] = buf.subarray(8 + n + m);
  return message;
}

/** Is this binary message one of our frames (rather than JSON sent in a binary frame)? */
export function isOutputFrame(buf: Uint8Array): boolean {
  return buf.length > 0 && buf[0] === FRAME_MAGIC;
}

/** Decodes a frame; the payload is a view into `buf` (no copy). Throws a clear error on a malformed frame. */
export function decodeOutputFrame(buf: Buffer): OutputFrameMessage {
  if (buf.length < FRAME_HEADER_BYTES) throw new Error(`binary frame too short (${buf.length} bytes)`);
  if (buf[1] !== FRAME_VERSION) throw new Error(`unsupported binary frame version ${buf[1]}`);
  if (buf[2] !== FRAME_KIND_OUTPUT) throw new Error(`unknown binary frame kind ${buf[2]}`);
  const stream = STREAMS[buf[3]];
  if (!stream) throw new Error(`unknown output stream code ${buf[3]} in binary frame`);
  const hi = buf.readUInt32BE(4);
  if (hi > 0x1f_ffff) throw new Error('binary frame seq out of range');
  const seq = hi * 0x1_0000_0000 + buf.readUInt32BE(8);
  const idLen = buf.readUInt16BE(12);
  if (buf.length < FRAME_HEADER_BYTES + idLen) throw new Error('binary frame truncated in its process id');
  const processId = buf.toString('utf8', FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + idLen);
  return { method: 'process/output', params: { processId, seq, stream, data: buf.subarray(FRAME_HEADER_BYTES + idLen) } };
}
