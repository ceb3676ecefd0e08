// Find in Files on a remote host: the argv of the search process (ripgrep or grep). The query
// is one argv element — never a shell line — and always the value of an explicit pattern
// option (`--regexp=` / `-e`), followed by `--`, so a query such as `--pre=sh` or `-f/etc/x`
// can never be read as an option (rg's --pre runs a program on every file).

export type SearchTool = 'rg' | 'grep';

export interface SearchQuery {
  /** The text (or regular expression) to find; one line. */
  pattern: string;
  isRegex?: boolean;
  caseSensitive?: boolean;
  wholeWord?: boolean;
  /** Globs of files to search (rg --glob / grep --include), e.g. `*.ts`. */
  include?: string[];
  /** Names of folders never entered and files never searched (default: DEFAULT_EXCLUDED_NAMES). */
  excludeNames?: readonly string[];
}

/** Like VS Code's default files.exclude/search.exclude: VCS metadata and dependency trees. */
export const DEFAULT_EXCLUDED_NAMES: readonly string[] = ['.git', '.hg', '.svn', 'CVS', '.DS_Store', 'Thumbs.db', 'node_modules', 'bower_components'];

/**
 * The names a files.exclude / search.exclude setting turns off, from its entries that name one
 * file or folder at any depth ("**" + "/name"; true: excluded, false: a default turned back on).
 * Other glob shapes are not understood by grep, rg and the fs/walk lister alike: left out.
 */
export function excludedNamesFromSettings(settings: readonly (Record<string, unknown> | undefined)[], defaults = DEFAULT_EXCLUDED_NAMES): string[] {
  const names = new Set(defaults);
  for (const s of settings) {
    for (const [pattern, on] of Object.entries(s ?? {})) {
      const m = /^\*\*\/([^*?/[\]{}!\\]+)$/.exec(pattern);
      if (!m) continue;
      if (on === true) names.add(m[1]);
      else if (on === false) names.delete(m[1]);
    }
  }
  return [...names];
}

/**
 * The folder searched when none is given: the process's cwd. searchInFolder gives the folder's
 * absolute path instead and runs the tool in `/` (see search-run.ts: a PATH with an empty or
 * relative entry would otherwise find a `grep` or `rg` planted in the searched folder).
 */
export const SEARCH_ROOT = '.';

/** The root as the tools get it (a directory: rg gets a trailing '/'). */
function rootArg(root: string, slash: boolean): string {
  if (!slash) return root;
  return root.endsWith('/') ? root : `${root}/`;
}

/** Bad input: a clear message, nothing is started. */
export function validateQuery(q: SearchQuery): void {
  if (typeof q.pattern !== 'string' || q.pattern === '') throw new Error('the search text is empty');
  if (/[\r\n]/.test(q.pattern)) throw new Error('the search text must be a single line');
  const all = [q.pattern, ...(q.include ?? []), ...(q.excludeNames ?? [])];
  // A NUL cannot be passed in an argv element; spawn would fail with a less helpful message.
  if (all.some((s) => s.includes('\0'))) throw new Error('the search text or a glob contains a NUL character');
  for (const d of q.excludeNames ?? []) if (d === '' || d.includes('/') || /[*?[\]{}!\\]/.test(d)) throw new Error(`excluded name "${d}" must be a plain file or folder name`);
  for (const g of q.include ?? []) if (g === '') throw new Error('an empty include glob');
}

/**
 * ripgrep: JSON lines (paths and lines as UTF-8 text or base64 bytes, byte offsets of every
 * submatch); --no-config ignores RIPGREP_CONFIG_PATH; hidden files are searched (as VS Code
 * does) but the excluded folders are not; binary files are skipped by rg itself.
 * --no-ignore-parent (VS Code's default too, search.useParentIgnoreFiles): the folder's own
 * .gitignore/.ignore/.rgignore apply, those of the folders above it do not — anyone who can
 * write a parent (/tmp/.ignore holding `*`) would otherwise hide every result.
 */
export function rgArgv(q: SearchQuery, rg = 'rg', root = SEARCH_ROOT): string[] {
  validateQuery(q);
  const argv = [rg, '--json', '--no-config', '--no-ignore-parent', '--hidden', '--no-follow', q.caseSensitive ? '--case-sensitive' : '--ignore-case'];
  if (!q.isRegex) argv.push('--fixed-strings');
  if (q.wholeWord) argv.push('--word-regexp');
  // A glob without '/' matches that name at any depth, folder or file.
  for (const d of q.excludeNames ?? DEFAULT_EXCLUDED_NAMES) argv.push(`--glob=!${d}`);
  for (const g of q.include ?? []) argv.push(`--glob=${g}`);
  // `--regexp=<q>`: the query is this option's value whatever its first character.
  argv.push(`--regexp=${q.pattern}`, '--', rootArg(root, true));
  return argv;
}

/**
 * grep (GNU or BSD): -r (symlinks not followed), -n line numbers, -H always a file name,
 * -I binary files skipped, --null: a NUL ends each file name (names may hold ':' or newlines).
 * -E/-F: extended regex or fixed string. -e <q> is POSIX's "the next argument is the pattern".
 */
export function grepArgv(q: SearchQuery, grep = 'grep', root = SEARCH_ROOT): string[] {
  validateQuery(q);
  const argv = [grep, '-r', '-n', '-H', '-I', '--null', '--color=never', q.isRegex ? '-E' : '-F'];
  if (!q.caseSensitive) argv.push('-i');
  if (q.wholeWord) argv.push('-w');
  // --include before --exclude: GNU grep includes a file no such option matches unless the
  // FIRST of them is an --include — after the excludes, `--include=*.ts` filtered nothing.
  for (const g of q.include ?? []) argv.push(`--include=${g}`);
  for (const d of q.excludeNames ?? DEFAULT_EXCLUDED_NAMES) argv.push(`--exclude-dir=${d}`, `--exclude=${d}`);
  argv.push('-e', q.pattern, '--', rootArg(root, false));
  return argv;
}

/** The tool's path prefix removed: `./a/b` → `a/b`; with the root `/x/y`: `/x/y/a/b` → `a/b`. */
export function relativeResultPath(p: string, root = SEARCH_ROOT): string {
  const prefix = root === SEARCH_ROOT ? './' : rootArg(root, true);
  if (p.startsWith(prefix)) return p.slice(prefix.length).replace(/^\/+/, '');
  return p;
}
