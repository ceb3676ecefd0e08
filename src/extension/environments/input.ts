// What the user types in Add Environment, turned into a settings entry: a websocket URL (also a
// bare `host:port`, which means ws://), or a command line split like a POSIX shell splits it
// (quotes, backslashes), so `sh -c "exec-server --listen stdio"` keeps its quoted argument.
// Also the paths environment/info reports (file:// URIs) as plain absolute paths. Free of `vscode`.

export type Where = { kind: 'websocket'; url: string } | { kind: 'command'; command: string; args: string[] };

/**
 * Splits a command line into words like `sh` does for a simple command: whitespace separates,
 * '…' is literal, "…" keeps spaces (backslash escapes " \ $ ` only), a backslash outside quotes
 * escapes the next character. Throws on an unterminated quote or a trailing backslash.
 * No expansion ($VAR, ~, globs) and no operators: the command is run directly, not by a shell.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error('unterminated single quote');
      word += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      inWord = true;
      for (;;) {
        if (i >= line.length) throw new Error('unterminated double quote');
        const d = line[i];
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) {
          word += line[i + 1];
          i += 2;
        } else {
          word += d;
          i++;
        }
      }
    } else if (c === '\\') {
      if (i + 1 >= line.length) throw new Error('a backslash at the end of the line escapes nothing');
      word += line[i + 1];
      inWord = true;
      i += 2;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** `host:port`, `[v6]:port` (no scheme, no spaces): the user meant a websocket server. */
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})(\/\S*)?$/;

/**
 * Reads the "where" answer of Add Environment: ws:// / wss:// URLs as given, `host:port` as
 * ws://host:port, anything else as a command line. Throws a message fit for the input box.
 */
export function parseWhere(input: string): Where {
  const text = input.trim();
  if (!text) throw new Error('Enter a websocket URL (ws://host:port) or a command');
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text)) {
    let u: URL;
    try {
      u = new URL(text);
    } catch {
      throw new Error(`"${text}" is not a valid URL`);
    }
    if (u.protocol !== 'ws:' && u.protocol !== 'wss:') throw new Error(`Only ws:// and wss:// URLs are supported (got ${u.protocol}//)`);
    return { kind: 'websocket', url: text };
  }
  const m = HOST_PORT.exec(text);
  if (m) {
    const port = Number(m[3]);
    if (port < 1 || port > 65535) throw new Error(`port ${m[3]} is out of range (1–65535)`);
    return { kind: 'websocket', url: `ws://${text}` };
  }
  let words: string[];
  try {
    words = splitCommandLine(text);
  } catch (e) {
    throw new Error(`Cannot read the command: ${(e as Error).message}`);
  }
  if (words.length === 0 || words[0] === '') throw new Error('The command is empty');
  return { kind: 'command', command: words[0], args: words.slice(1) };
}

/** Quotes argv back into a line that splitCommandLine() reads as the same words (for display and edits). */
export function joinCommandLine(argv: readonly string[]): string {
  return argv.map((a) => (a !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/**
 * environment/info reports cwd and userHomeDir as file:// URIs (the reference does too); a
 * folder path for the exec-server:// scheme is a plain absolute path. Undefined if neither.
 */
export function infoPath(v: unknown): string | undefined {
  if (typeof v !== 'string' || v === '') return undefined;
  if (v.startsWith('/')) return v;
  if (!/^file:/i.test(v)) return undefined;
  try {
    const u = new URL(v);
    if (u.protocol !== 'file:') return undefined;
    const p = decodeURIComponent(u.pathname);
    return p.startsWith('/') ? p : undefined;
  } catch {
    return undefined;
  }
}
