// What the host hides from agent commands that run in a managed sandbox, on top of the
// sandbox the agent asked for:
// - unix sockets: "network restricted" only unshares the network namespace; a socket FILE stays
//   connectable through a read-only mount (ssh-agent, tmux, docker, D-Bus, VS Code's own IPC),
//   and each of those runs commands or signs as the user. Found where they live (temp dirs,
//   /run, the runtime dir, the paths named by well-known variables); sockets created after the
//   command started are not covered. Since the engine's seccomp filter refuses connect() in
//   every network-restricted sandbox (src/server/sandbox/seccomp.ts), this hiding is a second
//   layer (it also holds where the filter cannot load).
// - credential stores in the home directory (ssh/gpg keys, cloud and registry tokens, browser
//   profiles, VS Code's user data): a sandbox reads everything by default and the command's
//   output goes to the agent (and its model). Without network the command itself has no use
//   for them.
// Each gets an `access: none` entry, which the engine's bubblewrap backend covers with an empty
// file or an empty unreadable directory.
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const MAX_ENTRIES = 50_000;
const MAX_PER_DIR = 5000;

/**
 * Sockets under `root` down to `depth` levels, breadth first (a huge tree deep down cannot hide
 * a socket near the top), reading at most MAX_PER_DIR entries of any one directory.
 */
async function socketsUnder(root: string, depth: number, found: Set<string>): Promise<void> {
  let level = [root];
  let read = 0;
  for (let d = 0; d <= depth && level.length > 0 && read < MAX_ENTRIES; d++) {
    const next: string[] = [];
    for (const dir of level) {
      const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries.slice(0, MAX_PER_DIR)) {
        read++;
        const p = path.join(dir, e.name);
        if (e.isSocket()) found.add(p);
        else if (e.isDirectory()) next.push(p);
      }
    }
    level = next;
  }
}

/** Socket paths named by the environment (ssh-agent, VS Code IPC, docker, D-Bus). */
function socketsFromEnv(env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(env)) {
    if (!v) continue;
    if (k === 'SSH_AUTH_SOCK' || k.startsWith('VSCODE_IPC_HOOK') || k === 'VSCODE_GIT_IPC_HANDLE' || k === 'GPG_AGENT_INFO') out.push(v.split(':')[0]);
    else if (k === 'DOCKER_HOST' && v.startsWith('unix://')) out.push(v.slice('unix://'.length));
    else if (k === 'DBUS_SESSION_BUS_ADDRESS') for (const m of v.matchAll(/unix:path=([^,;]+)/g)) out.push(m[1]);
  }
  return out.filter((p) => path.isAbsolute(p));
}

/**
 * Host socket paths (and the per-user runtime dir) to hide from a sandboxed agent command.
 * Scanned at every start (bounded), so a socket created a moment ago is covered too.
 */
export async function hostSockets(env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const found = new Set<string>(socketsFromEnv(env));
  for (const dir of new Set(['/tmp', os.tmpdir()])) await socketsUnder(dir, 1, found);
  await socketsUnder('/run', 2, found);
  await socketsUnder('/var/run', 2, found);
  // The runtime dir is sockets and keys only: hidden whole.
  const runtime = env.XDG_RUNTIME_DIR || (typeof process.getuid === 'function' ? `/run/user/${process.getuid()}` : undefined);
  if (runtime) {
    const st = await fsp.stat(runtime).catch(() => undefined);
    if (st?.isDirectory()) {
      for (const p of [...found]) if (p.startsWith(runtime + path.sep)) found.delete(p);
      found.add(runtime);
    }
  }
  return [...found].sort();
}

/** Credential stores under the home directory (those that exist are hidden). */
export const CREDENTIAL_PATHS = [
  '.ssh',
  '.gnupg',
  '.aws',
  '.azure',
  '.config/gcloud',
  '.kube',
  '.docker',
  '.netrc',
  '.git-credentials',
  '.npmrc',
  '.pypirc',
  '.cargo/credentials',
  '.cargo/credentials.toml',
  '.config/gh',
  '.config/hub',
  '.password-store',
  '.local/share/keyrings',
  '.mozilla',
  '.config/google-chrome',
  '.config/chromium',
  '.codex/auth.json',
];

/** Which of CREDENTIAL_PATHS exist under `home` (plus extra directories, e.g. VS Code's user data). */
export async function credentialPaths(home: string, extra: readonly string[] = []): Promise<string[]> {
  const candidates = [...CREDENTIAL_PATHS.map((c) => path.join(home, c)), ...extra];
  const present = await Promise.all(candidates.map((p) => fsp.lstat(p).then(() => p, () => undefined)));
  return present.filter((p): p is string => p !== undefined);
}

/** A managed, restricted sandbox object with `none` entries for `paths` added (others unchanged). */
export function withHiddenPaths(sandbox: unknown, paths: readonly string[]): unknown {
  if (paths.length === 0 || !sandbox || typeof sandbox !== 'object') return sandbox;
  const s = sandbox as { permissions?: { type?: unknown; file_system?: { type?: unknown; entries?: unknown } } };
  const fsPolicy = s.permissions?.file_system;
  if (s.permissions?.type !== 'managed' || fsPolicy?.type !== 'restricted' || !Array.isArray(fsPolicy.entries)) return sandbox;
  const hidden = paths.map((p) => ({ path: { type: 'path', path: pathToFileURL(p).href }, access: 'none' }));
  return { ...s, permissions: { ...s.permissions, file_system: { ...fsPolicy, entries: [...fsPolicy.entries, ...hidden] } } };
}
