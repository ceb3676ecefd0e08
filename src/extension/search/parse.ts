// Find in Files: streaming parsers for the search process's stdout — ripgrep's JSON lines and
// grep's `name NUL lineno ':' text '\n'` records — turning chunks (split anywhere, even inside
// a UTF-8 character or a file name) into matches with line numbers and UTF-16 match ranges.
import type { SearchQuery } from './argv';
import { relativeResultPath, SEARCH_ROOT } from './argv';

export interface SearchMatch {
  /** Relative to the searched folder, as the host names it (may hold any character but NUL). */
  path: string;
  /** 1-based. */
  line: number;
  /** The matched line without its line break (see MAX_LINE_CHARS). */
  text: string;
  /** [start, end) in UTF-16 code units of `text`; at least one (possibly empty) range. */
  ranges: [number, number][];
  /** Where `text` starts in the full line (0 unless a long line was cut): column = offset + range start. */
  offset: number;
}

/** Longer lines are cut (a minified file would otherwise put megabytes into one tree row). */
export const MAX_LINE_CHARS = 2000;

/**
 * The most of one output record held while it streams in. A file on the host with a matching
 * line of gigabytes (no newline) would otherwise be buffered whole in the extension host until
 * its end: rg --json puts the whole line in one JSON line (--max-columns does not apply to
 * --json), grep prints it whole. An rg record past this is skipped (its file is named); of a
 * grep line only the first GREP_KEPT_BYTES are kept (grep's line number comes first).
 */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024;
export const GREP_KEPT_BYTES = 1024 * 1024;
/** A file name longer than this is not grep's (PATH_MAX is 4096): the record is skipped. */
const MAX_NAME_BYTES = 64 * 1024;
/** What is kept of an over-long rg record to name its file. */
const HEAD_BYTES = 64 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: false });
const encoder = new TextEncoder();

export interface OutputParser {
  push(chunk: Uint8Array): void;
  /** End of output: a last record without its terminator is still parsed. */
  end(): void;
}

function stripEol(s: string): string {
  return s.replace(/\r?\n$/, '');
}

/** Cuts a long line, keeping the first match visible; ranges are clipped into the kept part. */
export function clipLine(text: string, ranges: [number, number][], max = MAX_LINE_CHARS): { text: string; ranges: [number, number][]; offset: number } {
  if (text.length <= max) return { text, ranges, offset: 0 };
  const first = ranges[0]?.[0] ?? 0;
  const from = Math.max(0, Math.min(first - 40, text.length - max));
  const kept = text.slice(from, from + max);
  const shifted = ranges
    .map(([s, e]): [number, number] => [Math.max(0, s - from), Math.min(kept.length, e - from)])
    .filter(([s, e]) => e >= s && s <= kept.length);
  return { text: kept, ranges: shifted.length ? shifted : [[0, 0]], offset: from };
}

/** Byte offsets of a UTF-8 line → UTF-16 offsets of its decoded text. */
function byteToCharOffsets(bytes: Uint8Array, offsets: number[]): number[] {
  return offsets.map((o) => utf8.decode(bytes.subarray(0, Math.max(0, Math.min(o, bytes.length)))).length);
}

interface RgText {
  text?: string;
  bytes?: string;
}
function rgString(v: RgText | undefined): { text: string; bytes: Uint8Array } {
  if (v?.text !== undefined) return { text: v.text, bytes: encoder.encode(v.text) };
  const bytes = v?.bytes !== undefined ? Uint8Array.from(Buffer.from(v.bytes, 'base64')) : new Uint8Array();
  return { text: utf8.decode(bytes), bytes };
}

/**
 * Splits a byte stream on '\n' (bytes kept until a whole line is there). A line longer than
 * `limit` is not kept: only its first HEAD_BYTES, handed to `onTooLong` with its length.
 */
class LineSplitter {
  private pending: Uint8Array[] = [];
  private size = 0;
  /** The start of an over-long line (set once it passed the limit), and its length so far. */
  private head: Uint8Array | undefined;
  private long = 0;
  constructor(
    private readonly onLine: (line: Uint8Array) => void,
    private readonly onTooLong: (head: Uint8Array, bytes: number) => void = () => undefined,
    private readonly limit = MAX_RECORD_BYTES,
  ) {}
  private add(part: Uint8Array, copy: boolean): void {
    if (!this.head && this.size + part.length <= this.limit) {
      this.pending.push(copy ? part.slice() : part);
      this.size += part.length;
      return;
    }
    if (!this.head) {
      this.head = concat([...this.pending, part]).slice(0, HEAD_BYTES);
      this.long = this.size;
      this.pending = [];
      this.size = 0;
    }
    this.long += part.length;
  }
  private lineEnd(): void {
    if (this.head) this.onTooLong(this.head, this.long);
    else this.onLine(concat(this.pending));
    this.pending = [];
    this.size = 0;
    this.head = undefined;
    this.long = 0;
  }
  push(chunk: Uint8Array): void {
    let start = 0;
    for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, start)) {
      this.add(chunk.subarray(start, i), false);
      this.lineEnd();
      start = i + 1;
    }
    if (start < chunk.length) this.add(chunk.subarray(start), true);
  }
  end(): void {
    if (this.pending.length || this.head) this.lineEnd();
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The file an rg --json record is about, read from its first bytes (its "path" comes first). */
function rgPathOf(head: Uint8Array, root: string): string | undefined {
  const m = /^\{"type":"match","data":\{"path":(\{"(?:text|bytes)":"(?:[^"\\]|\\.)*"\})/.exec(utf8.decode(head));
  if (!m) return undefined;
  try {
    return relativeResultPath(rgString(JSON.parse(m[1]) as RgText).text, root);
  } catch {
    return undefined;
  }
}

/** ripgrep --json: one JSON object per line; only "match" objects produce results. */
export function rgJsonParser(onMatch: (m: SearchMatch) => void, onBadLine?: (line: string) => void, root = SEARCH_ROOT): OutputParser {
  const tooLong = (head: Uint8Array, bytes: number) => {
    const file = rgPathOf(head, root);
    onBadLine?.(`a matching line of ${Math.round(bytes / 1048576)} MiB${file === undefined ? '' : ` in ${file}`} was skipped (longer than ${MAX_RECORD_BYTES / 1048576} MiB)`);
  };
  return new LineSplitter((raw) => {
    const line = utf8.decode(raw);
    if (line.trim() === '') return;
    let msg: { type?: string; data?: { path?: RgText; lines?: RgText; line_number?: number; submatches?: { start: number; end: number }[] } };
    try {
      msg = JSON.parse(line);
    } catch {
      onBadLine?.(line);
      return;
    }
    if (msg.type !== 'match' || !msg.data) return;
    const d = msg.data;
    const p = rgString(d.path);
    const l = rgString(d.lines);
    const subs = Array.isArray(d.submatches) ? d.submatches : [];
    const ends = byteToCharOffsets(l.bytes, subs.flatMap((s) => [s.start, s.end]));
    const ranges: [number, number][] = [];
    for (let i = 0; i < ends.length; i += 2) ranges.push([ends[i], ends[i + 1]]);
    const text = stripEol(l.text);
    const clipped = clipLine(text, ranges.length ? ranges.map(([s, e]) => [Math.min(s, text.length), Math.min(e, text.length)]) : [[0, 0]]);
    onMatch({ path: relativeResultPath(p.text, root), line: Number(d.line_number ?? 0), ...clipped });
  }, tooLong);
}

/**
 * Where the query matches in a line grep reported (grep prints no columns). Fixed strings are
 * found exactly; a regex is tried as a JavaScript regex (ERE and JS agree on common patterns);
 * when that fails the row still opens at the right line.
 */
export function matchRanges(text: string, q: SearchQuery): [number, number][] {
  let re: RegExp;
  try {
    const body = q.isRegex ? q.pattern : q.pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    re = new RegExp(q.wholeWord ? `(?<![\\p{L}\\p{N}_])(?:${body})(?![\\p{L}\\p{N}_])` : body, `gu${q.caseSensitive ? '' : 'i'}`);
  } catch {
    return [[0, 0]];
  }
  const out: [number, number][] = [];
  for (const m of text.matchAll(re)) {
    if (m[0].length === 0) continue;
    out.push([m.index!, m.index! + m[0].length]);
    if (out.length >= 100) break;
  }
  return out.length ? out : [[0, 0]];
}

/**
 * grep -rnH --null: `<file name> NUL <line number> ':' <line> '\n'`. The file name ends at the
 * NUL (so it may hold newlines and colons); the line ends at the newline. A record that does not
 * fit (no digits before ':') is skipped up to the next newline and reported.
 */
export function grepNulParser(q: SearchQuery, onMatch: (m: SearchMatch) => void, onBadRecord?: (text: string) => void, root = SEARCH_ROOT): OutputParser {
  let state: 'name' | 'number' | 'text' | 'skip' = 'name';
  let name: Uint8Array[] = [];
  let nameBytes = 0;
  let num = '';
  let text: Uint8Array[] = [];
  let textBytes = 0;
  /** Keeps at most GREP_KEPT_BYTES of the line (the rest is not needed for a row). */
  const keepText = (part: Uint8Array) => {
    const room = GREP_KEPT_BYTES - textBytes;
    if (room <= 0) return;
    const kept = part.slice(0, room); // a copy: the caller's chunk is not ours to keep
    text.push(kept);
    textBytes += kept.length;
  };
  const emit = () => {
    const line = stripEol(utf8.decode(concat(text)));
    // Stray NULs inside a line (a binary part grep did not detect) are shown as U+FFFD.
    const shown = line.replace(/\0/g, '\uFFFD');
    onMatch({ path: relativeResultPath(utf8.decode(concat(name)), root), line: Number(num), ...clipLine(shown, matchRanges(shown, q)) });
  };
  const reset = () => {
    state = 'name';
    name = [];
    nameBytes = 0;
    num = '';
    text = [];
    textBytes = 0;
  };
  return {
    push(chunk: Uint8Array) {
      let start = 0;
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i];
        if (state === 'name') {
          if (b === 0) {
            name.push(chunk.slice(start, i));
            state = 'number';
            start = i + 1;
          } else if (nameBytes + (i - start) > MAX_NAME_BYTES) {
            onBadRecord?.(`a file name longer than ${MAX_NAME_BYTES} bytes…`);
            state = 'skip';
            name = [];
            nameBytes = 0;
          }
        } else if (state === 'number') {
          if (b >= 0x30 && b <= 0x39 && num.length < 12) num += String.fromCharCode(b);
          else if (b === 0x3a && num !== '') {
            state = 'text';
            start = i + 1;
          } else {
            onBadRecord?.(`${utf8.decode(concat(name))}\\0${num}${String.fromCharCode(b)}…`);
            state = b === 0x0a ? 'name' : 'skip';
            name = [];
            num = '';
            start = i + 1;
          }
        } else if (state === 'text') {
          if (b === 0x0a) {
            keepText(chunk.subarray(start, i));
            emit();
            reset();
            start = i + 1;
          }
        } else if (b === 0x0a) {
          reset();
          start = i + 1;
        }
      }
      if (start < chunk.length) {
        if (state === 'name') {
          name.push(chunk.slice(start));
          nameBytes += chunk.length - start;
        } else if (state === 'text') keepText(chunk.subarray(start));
      }
    },
    end() {
      if (state === 'text') emit();
      else if (state !== 'name' || name.length) onBadRecord?.(`${utf8.decode(concat(name))} (cut off)`);
      reset();
    },
  };
}

/**
 * A path or line as shown in the UI: characters that would break or hide the row (newlines,
 * other controls, bidi overrides, zero-width characters) become visible escapes. Everything
 * else, including `<`, `[`, `](`, is plain text in a tree row.
 */
export function visiblePath(s: string): string {
  return s.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (ch) => {
    const cp = ch.codePointAt(0)!;
    if (cp === 0x0a) return '\\n';
    if (cp === 0x09) return '\\t';
    if (cp === 0x0d) return '\\r';
    return cp < 0x100 ? `\\x${cp.toString(16).padStart(2, '0')}` : `\\u${cp.toString(16).padStart(4, '0')}`;
  });
}

/** A matched line for a tree row: one character per character (the ranges stay valid), tabs as spaces, other invisibles as '�'. */
export function visibleLine(s: string): string {
  return s.replace(/\t/g, ' ').replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (ch) => (ch.length === 2 ? '\uFFFD\uFFFD' : '\uFFFD'));
}
