// Messages whose result (a response) or params (a request) carry raw bytes (a Buffer) instead
// of base64 — the producer marks the holder, each transport decides how they travel. Kept in
// src/rpc (like verbatim.ts) so the server engine and the client can mark an object without
// depending on src/transports.
import { markVerbatim } from './verbatim';

/**
 * Objects whose named member holds raw bytes (a Buffer) instead of base64: only produced for a
 * connection that negotiated binaryOutput (fs/readBlock's answer on the server, fs/writeBlock's
 * request on the client). A websocket sends such a message as a kind 2 (response) or kind 3
 * (request) frame; any other carrier encodes the member as base64 (bytesToBase64Members), so it
 * can never leak as JSON of a Buffer.
 */
const bytesMembers = new WeakMap<object, string>();

export function markBytes<T extends object>(holder: T, key: keyof T & string): T {
  bytesMembers.set(holder, key);
  return holder;
}

export interface BytesMember {
  /** Where the holder is in the message: a response's `result` or a request's `params`. */
  where: 'result' | 'params';
  holder: Record<string, unknown>;
  key: string;
  bytes: Uint8Array;
}

/** The marked bytes member of a response's result or a request's params, if any. */
export function bytesMemberOf(message: object): BytesMember | undefined {
  const m = message as { result?: unknown; params?: unknown; method?: unknown };
  const where = m.result !== undefined ? 'result' : typeof m.method === 'string' ? 'params' : undefined;
  if (!where) return undefined;
  const holder = m[where];
  if (holder === null || typeof holder !== 'object') return undefined;
  const key = bytesMembers.get(holder);
  if (key === undefined) return undefined;
  const bytes = (holder as Record<string, unknown>)[key];
  return bytes instanceof Uint8Array ? { where, holder: holder as Record<string, unknown>, key, bytes } : undefined;
}

/** The message with a marked bytes member as base64 (for JSON-only carriers). */
export function bytesToBase64Members(message: object): object {
  const m = bytesMemberOf(message);
  if (!m) return message;
  const holder = markVerbatim({ ...m.holder, [m.key]: Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength).toString('base64') }, m.key);
  return { ...message, [m.where]: holder };
}
