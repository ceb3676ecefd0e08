// How logs name a session. A session id is a bearer capability (initialize
// {resumeSessionId} takes over the session and its processes), so it never appears in a
// log: logs show a short, stable tag derived from it instead. 32 bits of FNV-1a say which
// lines belong together and cannot be turned back into the 122 random bits of the id.
// Free of Node types (shared by server, client and extension).

export function sessionLogTag(sessionId: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < sessionId.length; i++) {
    h ^= sessionId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return `session #${h.toString(16).padStart(8, '0')}`;
}
