// Responses whose result carries raw bytes (a Buffer) instead of base64 — the server marks
// them, each transport decides how they travel. Kept in src/rpc (like verbatim.ts) so the
// server engine can mark a result without depending on src/transports.

/**
 * Result objects whose named member holds raw bytes (a Buffer) instead of base64: only produced
 * for a connection that negotiated binaryOutput. A websocket sends such a response as a kind 2
 * frame; any other carrier encodes the member as base64 (bytesToBase64Members), so it can never
 * leak as JSON of a Buffer.
 */
const bytesMembers = new WeakMap<object, string>();

export function markBytes<T extends object>(holder: T, key: keyof T & string): T {
  bytesMembers.set(holder, key);
  return holder;
}

/** The marked bytes member of a response's result, if any. */
export function bytesMemberOf(message: object): { result: Record<string, unknown>; key: string; bytes: Uint8Array } | undefined {
  const result = (message as { result?: unknown }).result;
  if (result === null || typeof result !== 'object') return undefined;
  const key = bytesMembers.get(result);
  if (key === undefined) return undefined;
  const bytes = (result as Record<string, unknown>)[key];
  return bytes instanceof Uint8Array ? { result: result as Record<string, unknown>, key, bytes } : undefined;
}

/** The message with a marked bytes member as base64 (for JSON-only carriers). */
export function bytesToBase64Members(message: object): object {
  const m = bytesMemberOf(message);
  if (!m) return message;
  return { ...message, result: { ...m.result, [m.key]: Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength).toString('base64') } };
}
