// Message → bytes for the stream transports, splicing marked base64 payloads (src/rpc/verbatim.ts)
// into the frame with a latin1 copy instead of JSON-escaping and UTF-8-encoding them.
import { serializeMessage } from '../rpc/verbatim';
import { bytesToBase64Members } from '../rpc/bytes-members';

/**
 * The message's JSON text followed by `suffix`: a string, a Buffer when a string payload was
 * spliced, or three Buffers (head, the payload buffer itself, tail) when the payload was a
 * Base64Text: the carrier writes them in order, and the payload is never copied. A spliced
 * string payload is written into `into(bytes)` when that gives a buffer.
 */
export function encodeMessage(message: object, suffix = '', into?: (bytes: number) => Buffer | undefined): string | Buffer | Buffer[] {
  const s = serializeMessage(bytesToBase64Members(message));
  if (typeof s === 'string') return suffix ? s + suffix : s;
  const tail = s.tail + suffix;
  if (typeof s.payload !== 'string') return [Buffer.from(s.head, 'utf8'), s.payload, Buffer.from(tail, 'utf8')];
  const headBytes = Buffer.byteLength(s.head, 'utf8');
  const tailBytes = Buffer.byteLength(tail, 'utf8');
  const bytes = headBytes + s.payload.length + tailBytes;
  // `into` may lend a buffer of exactly `bytes` (a recycled frame of the websocket transport).
  const buf = into?.(bytes) ?? Buffer.allocUnsafe(bytes);
  buf.write(s.head, 0, 'utf8');
  // Base64 is ASCII: one byte per character, and latin1 copies without encoding work.
  buf.write(s.payload, headBytes, 'latin1');
  buf.write(tail, headBytes + s.payload.length, 'utf8');
  return buf;
}
