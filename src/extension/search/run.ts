// Find in Files on an environment: picks the tool on the host (ripgrep if it runs, else grep),
// starts it through the executor (process/start in /, the folder as its argument, argv — no shell), parses its
// output while it streams, keeps at most `maxResults` rows and counts the rest, and on cancel
// terminates the process and waits until it is gone (no search left running on the host).
// The tool choice is cached per client; when the cached tool can no longer be run (rg removed
// from the host) it is probed again and the search retried once with the new choice.
import type { ExecClient, ProcessHandle } from '../../client/api';
import type { EnvPolicy } from '../../protocol/types';
import { noLinks } from '../common';
import { grepArgv, rgArgv, validateQuery, type SearchQuery, type SearchTool } from './argv';
import { grepNulParser, rgJsonParser, type OutputParser, type SearchMatch } from './parse';

export const DEFAULT_MAX_RESULTS = 2000;
/** Rows beyond the shown ones are only counted — up to this many; then the search is stopped. */
export const DEFAULT_COUNT_LIMIT = 100_000;
/**
 * After Cancel, how long to wait for the host to confirm the process ended. Over a dropped
 * connection the client keeps trying to resume for ~25 s: Cancel must not wait that long.
 */
export const CANCEL_GRACE_MS = 3000;

/**
 * The child's environment: only the host's core variables (PATH, HOME, USER, ...), so a
 * RIPGREP_CONFIG_PATH, GREP_OPTIONS or GREP_COLORS of the host changes nothing. grep runs in
 * the C locale: only NUL bytes make a file binary (in a UTF-8 locale any Latin-1 file would be
 * skipped as binary); ripgrep is Unicode-aware whatever the locale.
 */
// Every field given: the reference rejects a policy without them ("missing field `exclude`").
const SEARCH_ENV: EnvPolicy = { inherit: 'core', ignoreDefaultExcludes: false, exclude: [], set: {}, includeOnly: [] };
const GREP_ENV = { LC_ALL: 'C' };

export interface SearchRunOptions {
  maxResults?: number;
  countLimit?: number;
  /** 'auto' (default): ripgrep when `rg --version` runs on the host, else grep. */
  tool?: 'auto' | SearchTool;
  /** Program names/paths (default 'rg' / 'grep', looked up in the host's PATH). */
  rgProgram?: string;
  grepProgram?: string;
  signal?: AbortSignal;
  /** Called as rows arrive (batched by the caller if it wants). */
  onMatch?(m: SearchMatch): void;
  /** Called once the process is started (tests look for it on the host); again for a retry with a re-probed tool. */
  onStarted?(processId: string, argv: string[]): void;
}

export interface SearchOutcome {
  tool: SearchTool;
  argv: string[];
  matches: SearchMatch[];
  /** Distinct files among the shown rows. */
  files: number;
  /** Matching lines found but not kept (cap); a lower bound when `stoppedAtCountLimit`. */
  notShown: number;
  stoppedAtCountLimit: boolean;
  cancelled: boolean;
  exitCode: number | undefined;
  /** The tool's complaints (unreadable files, a bad regex...), first lines only. */
  errors: string[];
  /** Set when the search could not run or failed without results (e.g. an invalid regex). */
  failure?: string;
  /** Set when the rows may be incomplete: the connection was lost, or Cancel got no confirmation from the host. */
  incomplete?: string;
}

/**
 * The tool chosen per client and rg program. A cached choice can go stale (rg uninstalled or
 * installed on the host since): a search whose tool cannot start probes again, once (see
 * searchInFolder), so the user gets results rather than "cannot run rg".
 */
const toolCache = new WeakMap<ExecClient, Map<string, Promise<SearchTool>>>();

/**
 * Where the probe runs: `rg --version` does not depend on its cwd, and a folder that does not
 * exist (a typo, a folder removed) would fail the probe and cache "grep" for rg's host.
 */
const PROBE_CWD = '/';
/** Where the search itself runs (the folder is its argument): see runTool. */
const TOOL_CWD = '/';

/**
 * Exit statuses of a program that could not be run by a wrapper in between (a shell script
 * `exec`ing a removed binary, `env`, a sandbox launcher): 126 not executable, 127 not found.
 * Neither rg nor grep exits with them on its own (0 found, 1 nothing found, 2 error).
 */
const NOT_RUNNABLE_EXIT = new Set([126, 127]);

/** Runs argv to completion, collecting a little output (tool probes). */
async function probe(client: ExecClient, argv: string[], cwd: string): Promise<{ code: number; out: string } | undefined> {
  let h: ProcessHandle;
  try {
    h = await client.startProcess({ argv, cwd, env: {}, envPolicy: SEARCH_ENV, tty: false });
  } catch {
    return undefined; // not on PATH / not executable
  }
  let out = '';
  const sub = h.onOutput((e) => {
    if (out.length < 4096) out += new TextDecoder().decode(e.data);
  });
  const code = await h.exited.catch(() => -1);
  await h.closed;
  sub.dispose();
  return { code, out };
}

/**
 * ripgrep if `rg --version` runs and says so on this host, else grep (cached per client).
 * `stale`: the cached answer that just failed to start — it is replaced by a fresh probe
 * (unless another search already replaced it: then that newer answer is shared).
 */
export function detectTool(client: ExecClient, rgProgram = 'rg', stale?: Promise<SearchTool>): Promise<SearchTool> {
  let perClient = toolCache.get(client);
  if (!perClient) toolCache.set(client, (perClient = new Map()));
  let found = perClient.get(rgProgram);
  if (!found || found === stale) {
    found = probe(client, [rgProgram, '--version'], PROBE_CWD).then((r) => (r && r.code === 0 && /^ripgrep /m.test(r.out) ? 'rg' : 'grep'));
    perClient.set(rgProgram, found);
  }
  return found;
}

/** A search whose program could not be run at all (spawn failed, or exit 126/127 with no rows). */
class NotRunnable extends Error {
  constructor(
    message: string,
    /** Set when the process started (exit 126/127): what to return if no retry is made. */
    readonly outcome?: SearchOutcome,
  ) {
    super(message);
  }
}

/**
 * Searches `folder` (absolute path on the host) for `query`. Rejects only on bad input or when
 * no tool can start. With tool 'auto', a cached tool that cannot start (uninstalled since the
 * probe) is probed again and the search retried once with the fresh choice — never more.
 */
export async function searchInFolder(client: ExecClient, folder: string, query: SearchQuery, opts: SearchRunOptions = {}): Promise<SearchOutcome> {
  validateQuery(query);
  if (opts.tool && opts.tool !== 'auto') return runTool(client, folder, query, opts.tool, opts).catch(notRunnableOutcome);
  const cached = detectTool(client, opts.rgProgram);
  const tool = await cached;
  try {
    return await runTool(client, folder, query, tool, opts);
  } catch (e) {
    if (!(e instanceof NotRunnable) || opts.signal?.aborted) return notRunnableOutcome(e);
    const fresh = await detectTool(client, opts.rgProgram, cached);
    if (fresh === tool) return notRunnableOutcome(e); // the tool is there: the folder or the host is the problem
    return runTool(client, folder, query, fresh, opts).catch(notRunnableOutcome);
  }
}

/** A NotRunnable that started (exit 127) is an outcome with its failure; one that did not start rejects. */
function notRunnableOutcome(e: unknown): SearchOutcome {
  if (e instanceof NotRunnable && e.outcome) return e.outcome;
  throw e;
}

/** One run of `tool`; NotRunnable when its program cannot be run. */
async function runTool(client: ExecClient, folder: string, query: SearchQuery, tool: SearchTool, opts: SearchRunOptions): Promise<SearchOutcome> {
  const maxResults = Math.max(0, opts.maxResults ?? DEFAULT_MAX_RESULTS);
  const countLimit = Math.max(maxResults, opts.countLimit ?? DEFAULT_COUNT_LIMIT);
  const argv = tool === 'rg' ? rgArgv(query, opts.rgProgram, folder) : grepArgv(query, opts.grepProgram, folder);
  const outcome: SearchOutcome = { tool, argv, matches: [], files: 0, notShown: 0, stoppedAtCountLimit: false, cancelled: false, exitCode: undefined, errors: [] };
  if (opts.signal?.aborted) return { ...outcome, cancelled: true };

  // The tool runs in `/` with the folder as its argument, not in the folder: a host PATH with an
  // empty or relative entry (`PATH=:/usr/bin`, `.`) is searched relative to the cwd, so a `grep`
  // or `rg` file in the searched folder (a cloned repository keeps the executable bit) ran.
  if (!folder.startsWith('/')) throw new Error(`cannot run ${argv[0]} on the host in ${folder}: not an absolute path`);
  let meta;
  try {
    meta = await client.fs.stat(folder);
  } catch (e) {
    throw new Error(`cannot run ${argv[0]} on the host in ${folder}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!meta.isDirectory) throw new Error(`cannot run ${argv[0]} on the host in ${folder}: not a folder`);
  let handle: ProcessHandle;
  try {
    handle = await client.startProcess({ argv, cwd: TOOL_CWD, env: tool === 'grep' ? GREP_ENV : {}, envPolicy: SEARCH_ENV, tty: false });
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new NotRunnable(`cannot run ${argv[0]} on the host in ${folder}: ${why}`);
  }
  opts.onStarted?.(handle.processId, argv);

  const files = new Set<string>();
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void handle.terminate().catch(() => undefined);
  };
  const onMatch = (m: SearchMatch) => {
    if (outcome.cancelled) return;
    if (outcome.matches.length < maxResults) {
      outcome.matches.push(m);
      files.add(m.path);
      opts.onMatch?.(m);
      return;
    }
    outcome.notShown++;
    if (outcome.matches.length + outcome.notShown >= countLimit && !outcome.stoppedAtCountLimit) {
      outcome.stoppedAtCountLimit = true;
      stop();
    }
  };
  const noteError = (line: string) => {
    if (line.trim() && outcome.errors.length < 20) outcome.errors.push(line.trim());
  };
  const parser: OutputParser = tool === 'rg' ? rgJsonParser(onMatch, noteError, folder) : grepNulParser(query, onMatch, (t) => noteError(`unreadable output: ${t}`), folder);
  let stderr = '';
  const sub = handle.onOutput((e) => {
    if (e.stream === 'stderr') {
      if (stderr.length < 16_384) stderr += new TextDecoder().decode(e.data);
      return;
    }
    if (!outcome.cancelled) parser.push(e.data);
  });
  let closeError: string | undefined;
  const closeSub = handle.onClose((e) => (closeError = e.error));
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  let unconfirmed = false;
  let onAbort = () => {};
  const graceOver = new Promise<void>((resolve) => {
    onAbort = () => {
      outcome.cancelled = true;
      stop();
      graceTimer = setTimeout(() => {
        unconfirmed = true;
        resolve();
      }, CANCEL_GRACE_MS);
    };
  });
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const ended = (async () => {
      outcome.exitCode = await handle.exited.catch(() => undefined);
      await handle.closed;
    })();
    await Promise.race([ended, graceOver]);
  } finally {
    clearTimeout(graceTimer);
    opts.signal?.removeEventListener('abort', onAbort);
    sub.dispose();
    closeSub.dispose();
  }
  if (unconfirmed) outcome.incomplete = `the host did not confirm within ${CANCEL_GRACE_MS / 1000} s that the search process ended (connection lost?)`;
  else if (outcome.exitCode === undefined && !outcome.cancelled) outcome.incomplete = `the search process was lost${closeError ? `: ${closeError}` : ''}`;
  if (!outcome.cancelled) parser.end();
  for (const l of stderr.split('\n')) noteError(l);
  outcome.files = files.size;
  // Exit 1: nothing found (both tools). 2 (or more) with no rows: the search itself failed.
  if (!outcome.cancelled && !outcome.stoppedAtCountLimit && (outcome.exitCode ?? 2) >= 2 && outcome.matches.length === 0 && outcome.notShown === 0) {
    outcome.failure = outcome.incomplete ?? outcome.errors[0] ?? `${argv[0]} exited with code ${outcome.exitCode}`;
    if (NOT_RUNNABLE_EXIT.has(outcome.exitCode ?? 0)) throw new NotRunnable(`cannot run ${argv[0]} on the host in ${folder}: ${outcome.failure}`, outcome);
  }
  return outcome;
}

/**
 * "12 matching lines in 3 files", "… — 40 more not shown", for the view and notifications. A
 * failure quotes the host's tool (a file name in its error): no `](`, so no notification link.
 */
export function summarize(o: SearchOutcome): string {
  if (o.failure) return `Search failed: ${noLinks(o.failure)}`;
  const n = o.matches.length;
  const lines = `${n} matching line${n === 1 ? '' : 's'} in ${o.files} file${o.files === 1 ? '' : 's'}`;
  const parts = [n === 0 && !o.cancelled ? 'No results' : lines];
  if (o.notShown > 0) parts.push(`${o.stoppedAtCountLimit ? 'at least ' : ''}${o.notShown} more not shown`);
  if (o.cancelled) parts.push('cancelled');
  if (o.incomplete && !o.failure) parts.push(`incomplete: ${noLinks(o.incomplete)}`);
  if (o.errors.length > 0) parts.push(`${o.errors.length}${o.errors.length >= 20 ? '+' : ''} unreadable/skipped`);
  return parts.join(' — ');
}
