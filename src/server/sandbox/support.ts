// Can this host enforce a managed sandbox? Decided once per bubblewrap path (the answer is
// a cached promise) by running a tiny sandbox with the same namespaces a real one uses
// (~10 ms, up to 10 s on a slow or hung bwrap). The probe runs asynchronously: the server
// starts it at construction and logs the outcome once settled, so neither the VS Code
// extension host's activation nor the CLI's startup waits for it. environment/info,
// initialize's environmentInfo and a managed process/start await the settled answer (a
// managed sandbox is never run unconfined while the answer is unknown); one requested while
// the answer is "no" is refused with -32600 naming the cause.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SECCOMP_FD, TTY_SIGNALS, type BwrapTools } from './bwrap';
import { seccompProgram } from './seccomp';

export type SandboxSupport = { ok: true; tools: BwrapTools } | { ok: false; reason: string };

/** Where bubblewrap is looked for when EXEC_SERVER_BWRAP is not set. */
export const DEFAULT_BWRAP_PATHS = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];

/** The bwrap to use: $EXEC_SERVER_BWRAP (tests point it at a missing file), else the first default that exists. */
export function bwrapPath(): string {
  const fromEnv = process.env.EXEC_SERVER_BWRAP;
  if (fromEnv) return fromEnv;
  return DEFAULT_BWRAP_PATHS.find((p) => fs.existsSync(p)) ?? DEFAULT_BWRAP_PATHS[0];
}

const cache = new Map<string, Promise<SandboxSupport>>();

/** The probe's answer for `bwrap` (default: bwrapPath()), started on first use and cached. Never rejects. */
export function sandboxSupport(bwrap: string = bwrapPath()): Promise<SandboxSupport> {
  let s = cache.get(bwrap);
  if (!s) {
    s = probe(bwrap).catch((e): SandboxSupport => ({ ok: false, reason: `sandbox probe failed: ${String(e)}` }));
    cache.set(bwrap, s);
  }
  return s;
}

/** How long one probe run may take before it counts as a failure (a hung bwrap). */
const PROBE_TIMEOUT_MS = 10_000;

function run(argv: string[]): Promise<{ code: number | null; output: string; error?: Error }> {
  return new Promise((resolve) => {
    let output = '';
    let error: Error | undefined;
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin' } });
    const timer = setTimeout(() => {
      error = new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`);
      child.kill('SIGKILL');
    }, PROBE_TIMEOUT_MS);
    const collect = (d: Buffer) => {
      if (output.length < 64 * 1024) output += d.toString();
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    // A pipe that fails is reported by the exit; unhandled, its error would end the server.
    child.stdout.on('error', () => {});
    child.stderr.on('error', () => {});
    child.once('error', (e) => {
      error ??= e;
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code: error ? null : code, output, error });
    });
  });
}

/**
 * The program's file, named after its content: servers of different versions share the
 * per-user directory, and with one name each would rewrite the other's program between that
 * one's check and its sandbox opening the file (a sandbox could load another version's filter).
 */
function programFile(privateDir: string, kind: string, program: Buffer): string {
  const digest = crypto.createHash('sha256').update(program).digest('hex').slice(0, 16);
  return path.join(privateDir, `seccomp-${kind}-${digest}.bpf`);
}

async function probe(bwrap: string): Promise<SandboxSupport> {
  if (process.platform !== 'linux') {
    return { ok: false, reason: `managed sandboxes are enforced with bubblewrap on Linux only; this server runs on ${process.platform}` };
  }
  if (!fs.existsSync(bwrap)) {
    return { ok: false, reason: `bubblewrap not found at ${bwrap} (install the Debian package \`bubblewrap\`, or set EXEC_SERVER_BWRAP)` };
  }
  const env = ['/usr/bin/env', '/bin/env'].find((p) => fs.existsSync(p));
  if (!env) return { ok: false, reason: 'coreutils `env` not found at /usr/bin/env' };
  const bash = ['/bin/bash', '/usr/bin/bash'].find((p) => fs.existsSync(p)) ?? '/bin/bash';
  const sh = ['/bin/sh', '/usr/bin/sh'].find((p) => fs.existsSync(p)) ?? '/bin/sh';
  const privateDir = privateDirectory();
  const nsenter = ['/usr/bin/nsenter', '/bin/nsenter'].find((p) => fs.existsSync(p));
  const tools: BwrapTools = { bwrap, env, bash, sh, privateDir, denyFile: path.join(privateDir, 'denied'), ...(nsenter ? { nsenter } : {}) };
  const restricted = seccompProgram(process.arch, true);
  const enabled = seccompProgram(process.arch, false);
  const proxied = seccompProgram(process.arch, 'proxied');
  if (restricted && enabled && proxied) {
    tools.seccomp = {
      restricted: programFile(privateDir, 'restricted', restricted),
      enabled: programFile(privateDir, 'enabled', enabled),
      proxied: programFile(privateDir, 'proxied', proxied),
    };
  }
  ensureToolFiles(tools);
  // The same namespaces, capability drop, signal wrappers and seccomp program a real sandbox uses.
  const attempt = (withSeccomp: boolean): ReturnType<typeof run> => {
    const inner = [env, `--ignore-signal=${TTY_SIGNALS}`, bwrap,
      '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc',
      '--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-net',
      '--cap-drop', 'ALL', '--die-with-parent', ...(withSeccomp ? ['--seccomp', SECCOMP_FD] : []), '--',
      env, `--default-signal=${TTY_SIGNALS}`, 'true'];
    return run(withSeccomp ? [sh, '-c', `exec ${SECCOMP_FD}<"$0" && exec "$@"`, tools.seccomp!.restricted, ...inner] : inner);
  };
  if (tools.seccomp && (await attempt(true)).code !== 0) delete tools.seccomp; // kernel refused the filter: namespaces only (reported)
  if (!tools.seccomp) {
    const r = await attempt(false);
    if (r.code !== 0) {
      const why = (r.error?.message ?? r.output.trim()) || `exit code ${r.code}`;
      return { ok: false, reason: `bubblewrap at ${bwrap} cannot create a sandbox here (user namespaces disabled?): ${why}` };
    }
  }
  return { ok: true, tools };
}

/**
 * One directory per user, reused by every server of that user (a fresh one per process
 * would pile up in /tmp): `<tmpdir>/exec-server-sandbox-<uid>`, accepted only if it is a real
 * directory owned by us and closed to others (someone else may have planted the name in a
 * shared /tmp); otherwise a private mkdtemp directory, removed at exit.
 */
/** Where the engine keeps its sandbox files (seccomp programs, the deny file): in the temp dir, so the agent gate protects it. */
export function sandboxPrivateDirPath(): string {
  return path.join(os.tmpdir(), `exec-server-sandbox-${process.getuid?.() ?? 0}`);
}

function privateDirectory(): string {
  const uid = process.getuid?.() ?? 0;
  const dir = sandboxPrivateDirPath();
  const ours = () => {
    const st = fs.lstatSync(dir);
    return st.isDirectory() && st.uid === uid && (st.mode & 0o077) === 0;
  };
  try {
    fs.mkdirSync(dir, { mode: 0o700 });
  } catch {
    // exists (or cannot be made): checked below
  }
  try {
    if (ours()) return dir;
  } catch {
    // fall through
  }
  const own = fs.mkdtempSync(path.join(os.tmpdir(), 'exec-server-sandbox-'));
  process.once('exit', () => fs.rmSync(own, { recursive: true, force: true }));
  return own;
}

function writeExact(file: string, data: Buffer, mode: number): void {
  let same = false;
  try {
    const st = fs.lstatSync(file);
    same = st.isFile() && (st.mode & 0o777) === mode && (mode === 0 || fs.readFileSync(file).equals(data)) && st.size === data.length;
  } catch {
    same = false;
  }
  if (same) return;
  // Written aside, then renamed over: a concurrent server (same directory) or spawn never
  // sees the file missing or half-written; wx never writes through a planted link.
  const tmp = `${file}.${process.pid}.${Date.now()}`;
  fs.writeFileSync(tmp, data, { mode, flag: 'wx' });
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, file);
}

/**
 * (Re)creates the private files exactly (before every sandboxed spawn): a temp cleaner may
 * have removed them, and they must hold what this server wrote.
 */
export function ensureToolFiles(tools: BwrapTools): void {
  fs.mkdirSync(tools.privateDir, { recursive: true, mode: 0o700 });
  writeExact(tools.denyFile, Buffer.alloc(0), 0o000);
  if (tools.seccomp) {
    writeExact(tools.seccomp.restricted, seccompProgram(process.arch, true)!, 0o400);
    writeExact(tools.seccomp.enabled, seccompProgram(process.arch, false)!, 0o400);
    writeExact(tools.seccomp.proxied, seccompProgram(process.arch, 'proxied')!, 0o400);
  }
}
