// The hosts of an OpenSSH client config (~/.ssh/config), for Connect to Host's list: every
// `Host` pattern that names one host (wildcards and negations are rules, not hosts), with the
// HostName/User/Port of its block for the description, following `Include` (globs, ~, paths
// relative to ~/.ssh) as ssh does. Only lists: ssh itself still reads the config when it
// connects, so nothing here has to match every rule of ssh_config(5). Free of `vscode`.
import { closeSync, constants, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface SshConfigHost {
  /** What the user types after `ssh` (the Host pattern). */
  alias: string;
  hostName?: string;
  user?: string;
  port?: string;
  /** Where it is defined (for the log and the quick pick's detail). */
  file: string;
  line: number;
}

export interface SshConfigRead {
  hosts: SshConfigHost[];
  /** Unreadable includes, include loops: worth a log line, never fatal. */
  problems: string[];
}

/** ssh's own limit on nested Include (readconf.c READCONF_MAX_DEPTH). */
const MAX_DEPTH = 16;
/** A config file larger than this is not read (ssh configs are a few KiB). */
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/** Splits the arguments of a config line: whitespace separates, "…" groups (ssh_config quoting). */
export function splitConfigArgs(text: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) out.push(m[1] ?? m[2]);
  return out;
}

/** `Keyword args` or `Keyword=args`; undefined for blank lines and comments. */
export function parseConfigLine(raw: string): { keyword: string; args: string[] } | undefined {
  const line = raw.trim();
  if (!line || line.startsWith('#')) return undefined;
  const m = /^([A-Za-z][A-Za-z0-9]*)(?:\s*=\s*|\s+)(.*)$/.exec(line) ?? /^([A-Za-z][A-Za-z0-9]*)$/.exec(line);
  if (!m) return undefined;
  const rest = (m[2] ?? '').replace(/\s+#.*$/, '');
  return { keyword: m[1].toLowerCase(), args: splitConfigArgs(rest) };
}

/** A Host pattern that names exactly one host (no `*`, `?`, `!` negation, no empty). */
export function isConcreteHost(pattern: string): boolean {
  return pattern !== '' && !/[*?!]/.test(pattern);
}

function expandTilde(p: string, home: string): string {
  return p === '~' ? home : p.startsWith('~/') ? path.join(home, p.slice(2)) : p;
}

/** Shell-like glob of one path component: `*` any run, `?` one character (no `/`). */
function componentMatcher(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]');
  return new RegExp(`^${body}$`);
}

/**
 * What one listing of the config may spend on Include globs: it runs on the extension host's
 * thread, and an Include of `*` six folders deep from the root walked the whole file system (over a minute, frozen).
 */
export interface GlobBudget {
  /** Directories still to be read. */
  reads: number;
  /** Set when a glob stopped for lack of budget. */
  exhausted?: boolean;
}
export const GLOB_DIRECTORY_READS = 512;
/** Files read through Include at most (ssh configs include a handful). */
const MAX_INCLUDED_FILES = 64;
/** Paths considered at once by one glob (matches of the components so far). */
const GLOB_MAX_PATHS = 4096;

/** Files matching an absolute path that may hold `*`/`?` in any component, sorted (glob(3) order). */
export function globFiles(pattern: string, budget: GlobBudget = { reads: GLOB_DIRECTORY_READS }): string[] {
  const parts = pattern.split('/').filter((p, i) => p !== '' || i === 0);
  let bases = [parts[0] === '' ? '/' : parts[0]];
  for (const part of parts.slice(1)) {
    const next: string[] = [];
    for (const base of bases) {
      if (!/[*?]/.test(part)) {
        next.push(path.join(base, part));
        continue;
      }
      if (budget.reads <= 0 || next.length > GLOB_MAX_PATHS) {
        budget.exhausted = true;
        break;
      }
      budget.reads--;
      let names: string[];
      try {
        names = readdirSync(base);
      } catch {
        continue;
      }
      const re = componentMatcher(part);
      // Like glob(3) without GLOB_PERIOD: a wildcard does not match a leading dot.
      for (const n of names.sort()) if (re.test(n) && !(n.startsWith('.') && !part.startsWith('.'))) next.push(path.join(base, n));
    }
    if (next.length > GLOB_MAX_PATHS) {
      next.length = GLOB_MAX_PATHS;
      budget.exhausted = true;
    }
    bases = next;
  }
  return bases.filter((f) => {
    try {
      return statSync(f).isFile();
    } catch {
      return false;
    }
  });
}

/**
 * Reads the hosts of `file` (default ~/.ssh/config) and the files it includes. A missing top
 * file gives no hosts and no problem (most users have none). The first definition of an alias wins.
 */
export function readSshConfigHosts(file?: string, opts: { home?: string } = {}): SshConfigRead {
  const home = opts.home ?? os.homedir();
  const top = file ? path.resolve(expandTilde(file, home)) : path.join(home, '.ssh', 'config');
  const hosts: SshConfigHost[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  // Blocks whose descriptions are still being filled: the current Host line's hosts.
  let current: SshConfigHost[] = [];
  const budget: GlobBudget = { reads: GLOB_DIRECTORY_READS };
  let included = 0;

  const readOne = (f: string, depth: number, stack: string[]) => {
    let text: string;
    try {
      // Read on the extension host's thread: only a regular file of a sane size. An Include of
      // a FIFO would block it for ever, /dev/zero would fill its memory.
      // O_NONBLOCK: opening a FIFO does not wait for a writer; the checks are on what was opened.
      const fd = openSync(f, constants.O_RDONLY | constants.O_NONBLOCK);
      try {
        const st = fstatSync(fd);
        if (!st.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'not a regular file' });
        // Read at most the bound whatever st.size says: /proc and /sys files say 0 and some never end.
        const parts: Buffer[] = [];
        const chunk = Buffer.alloc(64 * 1024);
        let total = 0;
        for (let n = readSync(fd, chunk, 0, chunk.length, null); n > 0; n = readSync(fd, chunk, 0, chunk.length, null)) {
          total += n;
          if (total > MAX_CONFIG_BYTES) throw Object.assign(new Error('too large'), { code: `larger than ${MAX_CONFIG_BYTES / 1048576} MiB` });
          parts.push(Buffer.from(chunk.subarray(0, n)));
        }
        text = Buffer.concat(parts).toString('utf8');
      } finally {
        closeSync(fd);
      }
    } catch (e) {
      if (depth > 0) problems.push(`${f}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      return;
    }
    const lines = text.split(/\r?\n/);
    for (let i = 0; i < lines.length; i++) {
      const parsed = parseConfigLine(lines[i]);
      if (!parsed) continue;
      const { keyword, args } = parsed;
      if (keyword === 'host') {
        current = [];
        for (const pattern of args) {
          if (!isConcreteHost(pattern)) continue;
          const entry: SshConfigHost = { alias: pattern, file: f, line: i + 1 };
          current.push(entry);
          if (!seen.has(pattern.toLowerCase())) {
            seen.add(pattern.toLowerCase());
            hosts.push(entry);
          }
        }
      } else if (keyword === 'match') {
        current = []; // conditional settings apply to no listed host
      } else if (keyword === 'include') {
        if (depth + 1 > MAX_DEPTH) {
          problems.push(`${f}:${i + 1}: Include nested more than ${MAX_DEPTH} deep; not followed`);
          continue;
        }
        for (const arg of args) {
          // Relative includes of the user config are relative to ~/.ssh (ssh_config(5)).
          const abs = path.isAbsolute(expandTilde(arg, home)) ? expandTilde(arg, home) : path.join(home, '.ssh', arg);
          const files = /[*?]/.test(abs) ? globFiles(abs, budget) : [abs];
          if (budget.exhausted) {
            problems.push(`${f}:${i + 1}: Include ${arg} reaches too many folders; not followed further`);
            budget.exhausted = false;
          }
          for (const inc of files) {
            if (++included > MAX_INCLUDED_FILES) {
              problems.push(`${f}:${i + 1}: more than ${MAX_INCLUDED_FILES} files included; ${inc} and the rest not read`);
              break;
            }
            if (stack.includes(inc)) {
              problems.push(`${f}:${i + 1}: Include of ${inc} loops; not followed`);
              continue;
            }
            const outer = current;
            readOne(inc, depth + 1, [...stack, inc]);
            current = outer; // an included file does not end the block that included it
          }
        }
      } else if (keyword === 'hostname' || keyword === 'user' || keyword === 'port') {
        const key = keyword === 'hostname' ? 'hostName' : keyword;
        // ssh uses the first value it obtains for each option.
        for (const h of current) if (h[key] === undefined && args[0] !== undefined) h[key] = args[0];
      }
    }
  };
  readOne(top, 0, [top]);
  return { hosts, problems };
}
