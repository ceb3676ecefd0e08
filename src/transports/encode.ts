// Message → bytes for the stream transports, splicing marked base64 payloads (src/rpc/verbatim.ts)
// into the frame with a latin1 copy instead of JSON-escaping and UTF-8-encoding them.
import { serializeMessage } from '../rpc/verbatim';
import { bytesToBase64Members } from '../rpc/bytes-members';

/** The message's JSON text followed by `suffix`: a string, or a Buffer when a payload was spliced. */
export function encodeMessage(message: object, suffix = ''): string | Buffer {
  const s = serializeMessage(bytesToBase64Members(message));
  if (typeof s === 'string') return suffix ? s + suffix : s;
  const tail = s.tail + suffix;
  const headBytes = Buffer.byteLength(s.head, 'utf8');
  const tailBytes = Buffer.byteLength(tail, 'utf8');
  const buf = Buffer.allocUnsafe(headBytes + s.payload.length + tailBytes);
  buf.write(s.head, 0, 'utf8');
  // Base64 is ASCII: one byte per character, and latin1 copies without encoding work.
  buf.write(s.payload, headBytes, 'latin1');
  buf.write(tail, headBytes + s.payload.length, 'utf8');
  return buf;
}
