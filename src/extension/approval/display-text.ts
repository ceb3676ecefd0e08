// How agent-supplied text (argv, paths, env, URLs) is shown in an approval question. The text
// is never interpreted: characters that hide or reorder what follows (control, bidi, zero-width,
// other format characters) are written as visible escapes, and the quoting is shell-exact (a
// shown command line pasted into bash gives the same argv) while never containing the
// `[label](target)` shape that VS Code turns into a link inside a notification.

/**
 * Characters that change how the text around them looks or hide themselves: C0/C1 controls,
 * DEL, format characters (bidi embeddings/overrides/isolates, zero-width space/joiners, word
 * joiner, BOM, soft hyphen...), line/paragraph separators, and unassigned/private code points.
 */
// Also every space but U+0020 and the blank-looking letters and symbols (Braille blank, Hangul
// fillers): a run of them pads a command as well as spaces do, and is not one to the eye.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u2800\u3164\uffa0\u115f\u1160]/u;
const INVISIBLE_ALL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u2800\u3164\uffa0\u115f\u1160]/gu;

export function hasInvisible(s: string): boolean {
  return INVISIBLE.test(s);
}

function escapeCodePoint(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  if (cp === 0x0a) return '\\n';
  if (cp === 0x09) return '\\t';
  if (cp === 0x0d) return '\\r';
  if (cp < 0x100) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if (cp < 0x10000) return `\\u${cp.toString(16).padStart(4, '0')}`;
  return `\\U${cp.toString(16).padStart(8, '0')}`;
}

/** Any agent string (path, URL, env entry, argument) as shown in a question: shell-quoted. */
export function shown(s: string): string {
  return shellQuote(s);
}

const SAFE = /^[\w@%+=:,./-]+$/;

/**
 * One argument quoted as bash reads it: bare when it needs no quoting, '…' otherwise, and
 * $'…' (ANSI-C quoting with \xNN / \uNNNN escapes) when it holds invisible characters. A `](`
 * or `$(` inside is split across two adjacent quoted words (`…]''(…`), which bash joins again.
 */
export function shellQuote(a: string): string {
  if (a !== '' && SAFE.test(a)) return a;
  if (hasInvisible(a)) {
    const body = a.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(INVISIBLE_ALL, escapeCodePoint);
    // (a function replacement: in a replacement string `$'` would mean "the text after the match")
    return `$'${body.replace(/([\]$])\(/g, (_m, c: string) => `${c}'$'(`)}'`;
  }
  const body = a.replace(/'/g, `'\\''`);
  // `$(name)` is also split: some VS Code surfaces render it as an icon.
  return `'${body.replace(/([\]$])\(/g, "$1''(")}'`;
}

export function commandLine(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}

/** True if `text` has the link shape VS Code's notification renderer turns into an anchor. */
export function formsLink(text: string): boolean {
  return /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)/i.test(text);
}

/** Spaces in a row from which a question shows a count instead (padding pushes the rest out of sight). */
const SPACE_RUN = 8;

/**
 * `text` with every run of SPACE_RUN or more spaces (or of one repeated escape, e.g. `\t` or
 * `\u3000` from shellQuote) written as `⟨N spaces⟩`: a command padded with 700 spaces otherwise
 * pushes its payload and the question's flags past the notification's cut, or off to column 723
 * of the details. (Shown text only: the exact argv is the request's, as the details list it.)
 */
export function countedRuns(text: string): string {
  return text
    .replace(new RegExp(` {${SPACE_RUN},}`, 'g'), (m) => `⟨${m.length} spaces⟩`)
    .replace(/((\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[tnr]))\2{7,})/g, (m, _all: string, one: string) => `⟨${m.length / one.length} × ${one}⟩`);
}

/** Lines longer than this are broken in a question's details (its editor tab has no word wrap). */
export const DETAIL_COLUMNS = 160;

/** `line` broken into pieces of at most DETAIL_COLUMNS characters, each continuation marked `↪ `. */
export function wrapDetail(line: string): string[] {
  const chars = [...line];
  if (chars.length <= DETAIL_COLUMNS) return [line];
  const out: string[] = [chars.slice(0, DETAIL_COLUMNS).join('')];
  for (let i = DETAIL_COLUMNS; i < chars.length; i += DETAIL_COLUMNS - 2) out.push(`↪ ${chars.slice(i, i + DETAIL_COLUMNS - 2).join('')}`);
  return out;
}
