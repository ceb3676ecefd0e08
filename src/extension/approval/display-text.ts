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
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}]/u;
const INVISIBLE_ALL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}]/gu;

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
