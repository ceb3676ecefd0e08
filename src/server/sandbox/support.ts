// Can this host enforce a managed sandbox? Decided once per bubblewrap path (the answer is
// cached) by running a tiny sandbox with the same namespaces a real one uses (~10 ms, run
// synchronously so environment/info and initialize always give the settled answer). The
// server probes at startup and logs the outcome; a managed sandbox requested while the
// answer is "no" is refused with -32600 naming the cause, never run unconfined.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TTY_SIGNALS, type BwrapTools } from './bwrap';

export type SandboxSupport = { ok: true; tools: BwrapTools } | { ok: false; reason: string };

/** Where bubblewrap is looked for when EXEC_SERVER_BWRAP is not set. */
export const DEFAULT_BWRAP_PATHS = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];

/** The bwrap to use: $EXEC_SERVER_BWRAP (tests point it at a missing file), else the first default that exists. */
export function bwrapPath(): string {
  const fromEnv = process.env.EXEC_SERVER_BWRAP;
  if (fromEnv) return fromEnv;
  return DEFAULT_BWRAP_PATHS.find((p) => fs.existsSync(p)) ?? DEFAULT_BWRAP_PATHS[0];
}

const cache = new Map<string, SandboxSupport>();

/** Cached probe result for `bwrap` (default: bwrapPath()). Never throws. */
export function sandboxSupport(bwrap: string = bwrapPath()): SandboxSupport {
  let s = cache.get(bwrap);
  if (!s) {
    try {
      s = probe(bwrap);
    } catch (e) {
      s = { ok: false, reason: `sandbox probe failed: ${String(e)}` };
    }
    cache.set(bwrap, s);
  }
  return s;
}

function run(argv: string[]): { code: number | null; output: string; error?: Error } {
  const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin' }, timeout: 10_000 });
  return { code: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}`, error: r.error };
}

function probe(bwrap: string): SandboxSupport {
  if (process.platform !== 'linux') {
    return { ok: false, reason: `managed sandboxes are enforced with bubblewrap on Linux only; this server runs on ${process.platform}` };
  }
  if (!fs.existsSync(bwrap)) {
    return { ok: false, reason: `bubblewrap not found at ${bwrap} (install the Debian package \`bubblewrap\`, or set EXEC_SERVER_BWRAP)` };
  }
  const env = ['/usr/bin/env', '/bin/env'].find((p) => fs.existsSync(p));
  if (!env) return { ok: false, reason: 'coreutils `env` not found at /usr/bin/env' };
  const bash = ['/bin/bash', '/usr/bin/bash'].find((p) => fs.existsSync(p)) ?? '/bin/bash';
  // The same namespaces, capability drop and signal wrappers a real sandbox uses.
  const r = run([
    env, `--ignore-signal=${TTY_SIGNALS}`, bwrap,
    '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc',
    '--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-net',
    '--cap-drop', 'ALL', '--die-with-parent', '--',
    env, `--default-signal=${TTY_SIGNALS}`, 'true',
  ]);
  if (r.code !== 0) {
    const why = (r.error?.message ?? r.output.trim()) || `exit code ${r.code}`;
    return { ok: false, reason: `bubblewrap at ${bwrap} cannot create a sandbox here (user namespaces disabled?): ${why}` };
  }
  return { ok: true, tools: { bwrap, env, bash, denyFile: makeDenyFile() } };
}

/** An empty mode-000 file in a private directory, bound over files whose access is `none`. */
function makeDenyFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exec-server-sandbox-'));
  const file = path.join(dir, 'denied');
  fs.writeFileSync(file, '', { mode: 0o000 });
  fs.chmodSync(file, 0o000);
  return file;
}

/** Recreates the deny file if a temp cleaner removed it. */
export function ensureDenyFile(tools: BwrapTools): void {
  if (fs.existsSync(tools.denyFile)) return;
  fs.mkdirSync(path.dirname(tools.denyFile), { recursive: true, mode: 0o700 });
  fs.writeFileSync(tools.denyFile, '', { mode: 0o000 });
  fs.chmodSync(tools.denyFile, 0o000);
}
