// Serializing messages that carry a large base64 payload without JSON.stringify scanning it.
//
// JSON.stringify looks at every character of every string for escapes: for a 1 MiB block
// (1.4 MB of base64) that cost ~2.2 ms here, against ~0.1 ms to copy the same string into a
// frame. Base64 never needs escaping, so a producer that just encoded a buffer marks the
// object holding it (markVerbatim); the transport then serializes the envelope with a short
// placeholder and splices the payload in. Unmarked messages take the plain JSON.stringify
// path, so a caller-supplied string can never produce invalid JSON.

/**
 * Base64 text held in a Buffer (one ASCII byte per character) rather than a string: a whole-file
 * read (fs/readFile) is encoded in place in the buffer it was read into, and the transport writes
 * that buffer behind the envelope's head — one copy of the data instead of three (the file's
 * Buffer, its base64 string, the frame). Serializes as the string everywhere else (toJSON).
 */
export class Base64Text {
  constructor(readonly bytes: Buffer) {}
  get length(): number {
    return this.bytes.length;
  }
  toString(): string {
    return this.bytes.toString('latin1');
  }
  toJSON(): string {
    return this.toString();
  }
}

/**
 * A value already serialized as JSON by this process, all ASCII: a large answer built as text
 * (fs/walk's entries) instead of tens of thousands of objects for JSON.stringify to walk again.
 * The transport splices the text in as it is (no quotes); everywhere else it is the value the
 * text holds (toJSON, or converted in process). Only for text this process produced from values
 * it escaped itself (asciiJsonString).
 */
export class JsonText {
  constructor(readonly text: string) {}
  get length(): number {
    return this.text.length;
  }
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/**
 * The inside of a JSON string literal for `s`, all ASCII: `"`, `\`, control and non-ASCII
 * characters escaped as \uXXXX. Returns `s` itself when nothing needs escaping.
 */
export function asciiJsonString(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return s.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
  }
  return s;
}

/** Objects whose named string member is trusted base64 (no character needs JSON escaping). */
const verbatimMembers = new WeakMap<object, string>();

/** Below this size the splice saves nothing worth the bookkeeping. */
const MIN_VERBATIM_LENGTH = 1024;

/** Placeholder swapped in while the envelope is serialized; random so no real value equals it. */
const PLACEHOLDER = `verbatim-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
const QUOTED_PLACEHOLDER = `"${PLACEHOLDER}"`;

/**
 * Declares that `holder[key]` is a string (or a Base64Text) needing no JSON escaping — only call it on a string
 * this process produced with a base64 encoder — or a JsonText. Returns `holder` for use in expressions.
 */
export function markVerbatim<T extends object>(holder: T, key: keyof T & string): T {
  verbatimMembers.set(holder, key);
  return holder;
}

/** A serialized message in three parts: `head + payload + tail` is the JSON text. */
export interface SplicedJson {
  head: string;
  /** The verbatim text, to be copied as is between the quotes that end `head` / start `tail` (a Buffer: a Base64Text's bytes). */
  payload: string | Buffer;
  tail: string;
}

/** JSON text of a message, or its parts when it carries a marked payload in `params`/`result`. */
export function serializeMessage(message: object): string | SplicedJson {
  const m = message as { params?: unknown; result?: unknown };
  const holder = (isObject(m.result) ? m.result : isObject(m.params) ? m.params : undefined) as Record<string, unknown> | undefined;
  const key = holder ? verbatimMembers.get(holder) : undefined;
  if (!holder || key === undefined) return JSON.stringify(message);
  const value = holder[key];
  const json = value instanceof JsonText;
  const payload = value instanceof Base64Text ? value.bytes : json ? value.text : value;
  if ((typeof payload !== 'string' && !Buffer.isBuffer(payload)) || payload.length < MIN_VERBATIM_LENGTH || !Object.isExtensible(holder)) return JSON.stringify(message);
  holder[key] = PLACEHOLDER;
  let text: string;
  try {
    text = JSON.stringify(message);
  } finally {
    holder[key] = value;
  }
  const at = text.indexOf(QUOTED_PLACEHOLDER);
  // Exactly one occurrence, or do it the slow, certain way.
  if (at < 0 || text.indexOf(QUOTED_PLACEHOLDER, at + 1) >= 0) return JSON.stringify(message);
  // Base64 goes between the placeholder's quotes; JSON text replaces them too.
  if (json) return { head: text.slice(0, at), payload, tail: text.slice(at + QUOTED_PLACEHOLDER.length) };
  return { head: text.slice(0, at + 1), payload, tail: text.slice(at + 1 + PLACEHOLDER.length) };
}

/** The full JSON text of serializeMessage's result (for tests and non-splicing carriers). */
export function joinSerialized(s: string | SplicedJson): string {
  return typeof s === 'string' ? s : s.head + (typeof s.payload === 'string' ? s.payload : s.payload.toString('latin1')) + s.tail;
}

/**
 * The result with a Base64Text member as a plain string and a JsonText member as its value, for a
 * carrier that hands results over as objects (in process): the caller sees the same member as
 * over any wire.
 */
export function verbatimAsPlain<T>(result: T): T {
  if (result === null || typeof result !== 'object') return result;
  const key = verbatimMembers.get(result);
  if (key === undefined) return result;
  const r = result as Record<string, unknown>;
  const v = r[key];
  if (v instanceof Base64Text) r[key] = v.toString();
  else if (v instanceof JsonText) r[key] = v.toJSON();
  return result;
}

function isObject(v: unknown): v is object {
  return v !== null && typeof v === 'object';
}
