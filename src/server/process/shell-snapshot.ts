// process/start.shellSnapshot (shellSnapshotV2, REFERENCE-CAPABILITIES §4.1): a login shell
// `[shell.path, "-lc", S, ...]` runs its login profile once per scope; later starts of the
// scope run S in a non-login shell that restores what the profile left (exported variables,
// functions, aliases, `set -o` and shopt options; zsh: `setopt` options), so the profile
// neither runs again nor prints, and its `cd` does not move the command. As measured on the reference (0.169 and 0.171
// alike): one cache per session; the key is the scope, the shell, the cwd, the envPolicy and
// the sandbox (a sandboxed start is captured inside that sandbox and never shares a state with
// an unsandboxed one); the request's own `env` keys win over captured values; errexit and the
// umask are not restored. A failed capture falls back to the unchanged login shell.
//
// zsh, as measured on both versions: the capture runs the login files (/etc/zshenv, ~/.zshenv,
// ~/.zprofile, ~/.zlogin) and then sources ${ZDOTDIR:-$HOME}/.zshrc itself (a `-lc` shell would
// not); the restoring shell is `zsh -fc` — only /etc/zshenv runs, ~/.zshenv does not run again —
// whose script begins with `setopt RCS` and one line restoring the state, so S's line numbers
// are 2 more. The `login` option comes back with the others; non-exported parameters, named
// directories and the umask do not. The aliases are defined but not expanded in S: zsh parses
// a `-c` script whole before running it.
//
// Where the state lives. Each capture is a private file (0600 in a 0700 directory of this
// session, named by a hash of the key, never by the client's scope), removed when the session
// ends or the server exits. The file is checked before every use (owner, mode, size and the
// SHA-256 recorded at capture) and its text reaches the shell through the environment, not a
// path the shell would open later: a file swapped after the check cannot be sourced, and a
// sandbox need not see this directory.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { invalidParams } from '../../protocol/errors';
import type { EnvPolicy } from '../../protocol/types';
import type { SandboxBackend } from '../sandbox/backend';
import type { ManagedSandboxProfile } from '../sandbox/profile';
import { killGroup, type SpawnRequest } from './child';
import { buildChildEnv } from './env-policy';
import type { ShellSnapshotRequest } from './start-options';

/** A capture that runs longer is killed (the reference's limit too). */
export const CAPTURE_TIMEOUT_MS = 10_000;
/** What a capture may print (profile output included) before it is killed. */
export const MAX_CAPTURE_BYTES = 4 * 1024 * 1024;
/** The restored state (functions, aliases, options) and the captured environment, each. */
export const MAX_SNAPSHOT_BYTES = 512 * 1024;
/** Scopes kept per session; the oldest goes (with its file) beyond. */
export const MAX_SNAPSHOTS = 16;
/** A failed scope is tried again after this long, at most MAX_ATTEMPTS times in all. */
const RETRY_AFTER_MS = 1_000;
const MAX_ATTEMPTS = 3;
/**
 * Environment variables that carry the state into the shell: each under Linux's 128 KiB per
 * string (32 Ki UTF-16 units are at most 96 KiB of UTF-8).
 */
const STATE_VAR = '__EXEC_SERVER_SHELL_SNAPSHOT_';
const STATE_CHUNK = 32 * 1024;

/** Where snapshots are taken (environmentInfo.capabilities.shellSnapshotV2): Linux, where they were built and measured. */
export const SHELL_SNAPSHOTS = process.platform === 'linux';

export type SnapshotShell = 'bash' | 'sh' | 'zsh';

/**
 * Whether this start is one the snapshot applies to: a login shell `-lc` of exactly the
 * announced shell. An announced shell the reference knows no snapshot for is -32602 with its
 * text. (`kind: 'unsupported'` is kept for a shell announced but not restored here: none now.)
 */
export function snapshotTarget(argv: readonly string[], req: ShellSnapshotRequest | undefined): { kind: 'snapshot'; shell: SnapshotShell } | { kind: 'unsupported' } | undefined {
  if (!req || !SHELL_SNAPSHOTS || argv.length < 3 || argv[0] !== req.shell.path || argv[1] !== '-lc') return undefined;
  if (req.shell.name === 'bash' || req.shell.name === 'sh' || req.shell.name === 'zsh') return { kind: 'snapshot', shell: req.shell.name };
  throw invalidParams(`shell snapshots are unsupported for shell \`${req.shell.name}\``);
}

export interface SnapshotLaunch {
  req: ShellSnapshotRequest;
  shell: SnapshotShell;
  /** The start as it would run without a snapshot (argv[1] is "-lc"). */
  spawn: SpawnRequest;
  /** The keys of the request's own `env`: they keep their values. */
  requestEnvKeys: readonly string[];
  envPolicy: EnvPolicy | undefined;
  /** The raw `sandbox` param (part of the key) and, when managed, how to confine the capture. */
  sandboxParam: unknown;
  sandbox?: { backend: SandboxBackend; profile: ManagedSandboxProfile };
  log(level: 'info' | 'warn', message: string): void;
}

interface Captured {
  file: string;
  sha256: string;
  size: number;
  env: Record<string, string>;
}
interface Entry {
  capture: Promise<Captured | undefined>;
  attempts: number;
  failedAt?: number;
}

/** JSON with object keys sorted: the same params give the same key whatever their order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** Every live snapshot directory of this process, removed if it exits without ending its sessions. */
const liveDirs = new Set<string>();
let exitHook = false;
function trackDir(dir: string): void {
  liveDirs.add(dir);
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const d of liveDirs) fs.rmSync(d, { recursive: true, force: true });
  });
}

export class ShellSnapshots {
  private readonly entries = new Map<string, Entry>();
  private dir: string | undefined;
  private disposed = false;

  /** The live snapshot files' directory (tests). */
  get directory(): string | undefined {
    return this.dir;
  }

  /**
   * The start rewritten to restore the scope's snapshot (captured now on first use), or
   * undefined to run it unchanged (a failed capture: logged).
   */
  async prepare(l: SnapshotLaunch): Promise<SpawnRequest | undefined> {
    if (this.disposed) return undefined;
    const key = createHash('sha256')
      .update(canonical([l.req.scopeId, l.req.shell.name, l.req.shell.path, l.spawn.cwd, l.envPolicy ?? null, l.sandboxParam ?? null]))
      .digest('hex');
    let entry = this.entries.get(key);
    if (entry && entry.failedAt !== undefined && entry.attempts < MAX_ATTEMPTS && Date.now() - entry.failedAt >= RETRY_AFTER_MS) {
      this.entries.delete(key);
      entry = { capture: this.capture(key, l), attempts: entry.attempts + 1 };
    }
    if (!entry) {
      entry = { capture: this.capture(key, l), attempts: 1 };
      while (this.entries.size >= MAX_SNAPSHOTS) this.evict(this.entries.keys().next().value as string);
    }
    // Most recently used last (the eviction order).
    this.entries.delete(key);
    this.entries.set(key, entry);
    const e = entry;
    const captured = await e.capture;
    if (!captured) {
      e.failedAt ??= Date.now();
      return undefined;
    }
    const state = this.read(captured);
    if (state === undefined) {
      l.log('warn', `shell snapshot of scope ${JSON.stringify(l.req.scopeId)}: the snapshot file is not the one captured; running the login shell`);
      if (this.entries.get(key) === e) this.evict(key);
      return undefined;
    }
    return launchRequest(l, captured.env, state);
  }

  /** The snapshot text if the file is still the private file written at capture, else undefined. */
  private read(c: Captured): string | undefined {
    let fd: number | undefined;
    try {
      fd = fs.openSync(c.file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      const st = fs.fstatSync(fd);
      const uid = process.getuid?.();
      if (!st.isFile() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o077) !== 0 || st.size !== c.size) return undefined;
      const data = Buffer.alloc(c.size);
      if (fs.readSync(fd, data, 0, c.size, 0) !== c.size) return undefined;
      if (createHash('sha256').update(data).digest('hex') !== c.sha256) return undefined;
      return data.toString('utf8');
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
  }

  private evict(key: string): void {
    const e = this.entries.get(key);
    this.entries.delete(key);
    void e?.capture.then((c) => c && fs.rmSync(c.file, { force: true }));
  }

  private directoryFor(): string {
    if (this.dir) return this.dir;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exec-server-snapshots-'));
    fs.chmodSync(dir, 0o700);
    trackDir(dir);
    this.dir = dir;
    return dir;
  }

  private async capture(key: string, l: SnapshotLaunch): Promise<Captured | undefined> {
    const scope = JSON.stringify(l.req.scopeId);
    try {
      const out = await runCapture(l);
      if (typeof out === 'string') {
        l.log('warn', `shell snapshot of scope ${scope}: ${out}; running the login shell`);
        return undefined;
      }
      if (this.disposed) return undefined;
      const dir = this.directoryFor();
      const file = path.join(dir, `${key}.sh`);
      const data = Buffer.from(out.state, 'utf8');
      const tmp = path.join(dir, `.${key}.${randomBytes(6).toString('hex')}`);
      fs.writeFileSync(tmp, data, { mode: 0o600, flag: 'wx' });
      fs.renameSync(tmp, file);
      l.log('info', `shell snapshot of scope ${scope} captured in ${file} (${data.length} bytes of state, ${Object.keys(out.env).length} variables)`);
      return { file, sha256: createHash('sha256').update(data).digest('hex'), size: data.length, env: out.env };
    } catch (e) {
      l.log('warn', `shell snapshot of scope ${scope}: ${(e as Error).message}; running the login shell`);
      return undefined;
    }
  }

  /** The session ended: no more captures, every file and the directory go. */
  dispose(): void {
    this.disposed = true;
    this.entries.clear();
    if (this.dir) {
      fs.rmSync(this.dir, { recursive: true, force: true });
      liveDirs.delete(this.dir);
    }
  }
}

/**
 * zsh options `setopt` may list that are not restored: set by how the shell was started (the
 * restoring shell is not interactive, reads no stdin script), or, like bash's errexit, left out.
 */
const ZSH_NOT_RESTORED = ['interactive', 'shinstdin', 'privileged', 'restricted', 'singlecommand', 'monitor', 'zle', 'errexit'];

/** Variables a shell sets itself, or that must not come back from the capture. */
const NOT_CAPTURED = new Set(['PWD', 'OLDPWD', '_', 'BASH_ENV', 'ENV']);

/**
 * The capture script, run as `shell -lc SCRIPT` after the login profile: the state between two
 * markers (shell code to eval), then the exported variables, NUL-separated. `builtin` keeps a
 * profile's function named like a command out of it; bash only (sh has no `builtin`).
 */
function captureScript(shell: SnapshotShell, nonce: string): string {
  const mark = (what: string) => `printf '\\0%s\\0' 'ES-${what}-${nonce}'`;
  if (shell === 'zsh') {
    // `\builtin`: a profile's alias (zsh expands aliases in a -c script) or function named like
    // a builtin stays out. The state: options, then aliases, then functions (a restored function
    // named like a builtin cannot shadow the lines before it). The environment: the exported
    // parameters, NUL-separated, without running a command the profile could have replaced.
    return [
      `[[ -r \${ZDOTDIR:-$HOME}/.zshrc ]] && \\builtin source \${ZDOTDIR:-$HOME}/.zshrc`,
      `__es_o=$(\\builtin setopt); \\builtin unsetopt errexit`,
      `\\builtin ${mark('STATE')}`,
      `\\builtin printf '%s\\n' "$__es_o" | while \\builtin read -r __es_l; do case $__es_l in (${ZSH_NOT_RESTORED.join('|')}|'') ;; (*) \\builtin printf '\\\\builtin setopt %s\\n' "$__es_l";; esac; done`,
      `\\builtin alias -L | while \\builtin read -r __es_l; do \\builtin printf '\\\\builtin %s\\n' "$__es_l"; done`,
      `\\builtin typeset -f`,
      `\\builtin ${mark('ENV')}`,
      `for __es_n in \${(k)parameters}; do [[ \${parameters[$__es_n]} == *export* ]] && \\builtin printf '%s=%s\\0' "$__es_n" "\${(P)__es_n}"; done`,
      `\\builtin ${mark('END')}`,
    ].join('\n');
  }
  if (shell === 'bash') {
    return [
      `__es_o=$(builtin set +o); builtin set +e`,
      `builtin ${mark('STATE')}`,
      `builtin declare -f`,
      `builtin declare -F | while builtin read -r _ __es_a __es_n; do [[ $__es_a == *x* ]] && builtin printf 'builtin declare -fx %s\\n' "$__es_n"; done`,
      `builtin printf '%s\\n' "$__es_o" | while builtin read -r __es_l; do case $__es_l in *' errexit'|*' privileged') ;; *) builtin printf 'builtin %s\\n' "$__es_l";; esac; done`,
      `builtin shopt -p | while builtin read -r __es_l; do case $__es_l in *' login_shell'|*' restricted_shell') ;; *) builtin printf 'builtin %s\\n' "$__es_l";; esac; done`,
      `builtin alias -p | while builtin read -r __es_l; do builtin printf 'builtin %s\\n' "$__es_l"; done`,
      `builtin ${mark('ENV')}`,
      `for __es_n in $(builtin compgen -e); do builtin printf '%s=%s\\0' "$__es_n" "\${!__es_n}"; done`,
      `builtin ${mark('END')}`,
    ].join('\n');
  }
  // POSIX sh: functions only where the shell can list them (bash as sh; dash cannot) and the
  // options; no aliases (the reference restores none for sh: measured with dash and bash as sh).
  // The environment NUL-separated by env -0 where it has it (a value may hold a newline).
  return [
    `${mark('STATE')}`,
    `if command -v declare >/dev/null 2>&1; then declare -f; elif command -v typeset >/dev/null 2>&1; then typeset -f; fi`,
    `set +o 2>/dev/null | grep -v -e ' errexit$' -e ' privileged$' || true`,
    `${mark('ENV')}`,
    `if env -0 >/dev/null 2>&1; then env -0; else env | tr '\\n' '\\0'; fi`,
    `${mark('END')}`,
  ].join('\n');
}

/** Runs the capture under the start's own sandbox: its state and environment, or why not. */
async function runCapture(l: SnapshotLaunch): Promise<{ state: string; env: Record<string, string> } | string> {
  const nonce = randomBytes(12).toString('hex');
  let req: SpawnRequest = { ...l.spawn, argv: [l.spawn.argv[0], '-lc', captureScript(l.shell, nonce)], arg0: undefined, pipeStdin: false, channel: undefined };
  let stopped: string | undefined;
  let kill = () => {};
  const lease = l.sandbox?.backend.guard(l.sandbox.profile, (planted) => {
    stopped = `the capture created ${planted.map((p) => p.path).join(', ')} in its sandbox`;
    kill();
  });
  try {
    if (l.sandbox) req = l.sandbox.backend.wrap(l.sandbox.profile, req);
    const out = await new Promise<Buffer | string>((resolve) => {
      const child = spawn(req.argv[0], req.argv.slice(1), { cwd: req.cwd, env: req.env, stdio: ['ignore', 'pipe', 'ignore'], detached: true });
      const chunks: Buffer[] = [];
      let size = 0;
      let why: string | undefined;
      kill = () => child.pid !== undefined && killGroup(child.pid, 'SIGKILL', true);
      const timer = setTimeout(() => {
        why = `the capture ran past ${CAPTURE_TIMEOUT_MS} ms`;
        kill();
        // A process that left the group may still hold the pipe: the capture is over anyway.
        child.stdout.destroy();
        resolve(why);
      }, CAPTURE_TIMEOUT_MS);
      child.stdout.on('data', (d: Buffer) => {
        size += d.length;
        if (size > MAX_CAPTURE_BYTES) {
          why ??= `the capture printed more than ${MAX_CAPTURE_BYTES} bytes`;
          kill();
          child.stdout.destroy();
          resolve(why);
          return;
        }
        chunks.push(d);
      });
      child.once('error', (e) => {
        clearTimeout(timer);
        resolve(`the capture could not start: ${e.message}`);
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        // Whatever the profile left running in the group goes with the capture.
        if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
        if (stopped ?? why) resolve((stopped ?? why)!);
        else if (code !== 0) resolve(`the capture exited with ${code ?? signal}`);
        else resolve(Buffer.concat(chunks));
      });
    });
    if (typeof out === 'string') return out;
    return parseCapture(out, nonce, l);
  } finally {
    lease?.release();
  }
}

function parseCapture(out: Buffer, nonce: string, l: SnapshotLaunch): { state: string; env: Record<string, string> } | string {
  const at = (what: string, from: number) => out.indexOf(Buffer.from(`\0ES-${what}-${nonce}\0`), from);
  const s = at('STATE', 0);
  const e = s < 0 ? -1 : at('ENV', s);
  const end = e < 0 ? -1 : at('END', e);
  if (end < 0) return 'the capture did not finish its output (the profile exited or replaced the shell?)';
  const markLen = `\0ES-STATE-${nonce}\0`.length;
  const stateBytes = out.subarray(s + markLen, e);
  const state = stateBytes.toString('utf8');
  const envBytes = out.subarray(e + `\0ES-ENV-${nonce}\0`.length, end);
  if (state.includes('\0')) return 'the snapshot state has a NUL byte';
  if (stateBytes.length > MAX_SNAPSHOT_BYTES || envBytes.length > MAX_SNAPSHOT_BYTES) return `the snapshot is larger than ${MAX_SNAPSHOT_BYTES} bytes`;
  const captured: Record<string, string> = {};
  for (const entry of envBytes.toString('utf8').split('\0')) {
    const eq = entry.indexOf('=');
    if (eq <= 0) continue;
    const name = entry.slice(0, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || NOT_CAPTURED.has(name) || name.startsWith(STATE_VAR)) continue;
    captured[name] = entry.slice(eq + 1);
  }
  // The policy's excludes and includeOnly (and its `set`) apply to what the profile exported, as to what the server had.
  // zsh counts itself in SHLVL: the restoring shell gets the level below the capture's (measured: 0 after a capture at 1).
  if (l.shell === 'zsh' && /^[0-9]+$/.test(captured.SHLVL ?? '')) captured.SHLVL = String(Math.max(0, Number(captured.SHLVL) - 1));
  const env = l.envPolicy ? buildChildEnv({}, { ...l.envPolicy, inherit: 'all' }, captured) : captured;
  return { state, env };
}

/**
 * The start as a non-login shell that restores the state: `-p` keeps bash from reading
 * BASH_ENV and importing functions from the environment before the state is in place
 * (turned off again first thing); the state arrives in environment variables, unset before it runs.
 */
function launchRequest(l: SnapshotLaunch, captured: Record<string, string>, state: string): SpawnRequest {
  const env: Record<string, string> = { ...l.spawn.env, ...captured };
  for (const k of l.requestEnvKeys) if (k in l.spawn.env) env[k] = l.spawn.env[k];
  const names: string[] = [];
  let at = 0;
  do {
    let end = Math.min(state.length, at + STATE_CHUNK);
    // A surrogate pair stays whole (each half alone is not UTF-8).
    if (end < state.length && /[\ud800-\udbff]/.test(state[end - 1])) end--;
    const name = `${STATE_VAR}${names.length}`;
    env[name] = state.slice(at, end);
    names.push(name);
    at = end;
  } while (at < state.length);
  const expand = names.map((n) => `\${${n}}`).join('');
  const failed = `printf '%s\\n' 'exec-server: the shell snapshot could not be restored' >&2`;
  const [shellPath, , script, ...rest] = l.spawn.argv;
  if (l.shell === 'zsh') {
    // `-f`: no ~/.zshenv (nor any other startup file but /etc/zshenv), then RCS on again (the
    // reference's first line). Two lines, as the reference's: S's line numbers are the same.
    const zshPrelude = `\\builtin setopt RCS\nif ! \\builtin eval "\\builtin unset -v ${names.join(' ')}; ${expand}" >/dev/null; then \\builtin ${failed}; fi\n`;
    return { ...l.spawn, argv: [shellPath, '-fc', zshPrelude + script, ...rest], env };
  }
  const prelude =
    l.shell === 'bash'
      ? `builtin set +o privileged\nif ! builtin eval "builtin unset -v ${names.join(' ')}\n${expand}" >/dev/null; then builtin ${failed}; fi\n`
      : `if ! eval "unset ${names.join(' ')}\n${expand}" >/dev/null; then ${failed}; fi\n`;
  return { ...l.spawn, argv: [shellPath, l.shell === 'bash' ? '-pc' : '-c', prelude + script, ...rest], env };
}
