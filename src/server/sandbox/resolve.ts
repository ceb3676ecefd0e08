// Symlink resolution for sandbox decisions. A rule or a target path is judged where it
// really lands: every existing component is resolved (links followed, also dangling ones,
// whose target a write would create), missing components are kept as written. Both the
// bubblewrap backend and the in-process fs guard use it, so they agree on what a path is.
import fs from 'node:fs';
import path from 'node:path';
import { accessFor, PROTECTED_SUBPATHS, profileFromRules, type ManagedSandboxProfile, type SandboxRule } from './profile';

/** Filesystem queries the resolver needs (injectable for unit tests). */
export interface FsProbe {
  /** lstat-like: what the path itself is, without following a final symlink. */
  kind(p: string): 'directory' | 'file' | 'symlink' | 'other' | 'missing';
  readlink(p: string): string;
  /** The names in directory `p` ([] when it cannot be listed). */
  list?(p: string): string[];
}

export const realFs: FsProbe = {
  kind(p) {
    try {
      const st = fs.lstatSync(p);
      if (st.isSymbolicLink()) return 'symlink';
      if (st.isDirectory()) return 'directory';
      return st.isFile() ? 'file' : 'other';
    } catch {
      return 'missing';
    }
  },
  readlink: (p) => fs.readlinkSync(p),
  list(p) {
    try {
      return fs.readdirSync(p);
    } catch {
      return [];
    }
  },
};

/** Same limit as Linux (MAXSYMLINKS). */
const MAX_LINKS = 40;

export interface Resolved {
  /** The absolute path the kernel would reach (missing tail kept lexically). */
  path: string;
  /** Does the final path exist (after following links)? */
  exists: boolean;
}

/**
 * Resolves `p` (absolute) like the kernel would for an open(O_CREAT): symlinks anywhere,
 * including a final dangling one, are followed; `..` after a link applies to the link's target.
 * A loop throws ELOOP.
 */
export function resolvePath(p: string, probe: FsProbe = realFs): Resolved {
  // Not normalized first: `link/..` is the link target's parent for the kernel, not `.`.
  const pending = (path.isAbsolute(p) ? p : path.resolve(p)).split('/').filter(Boolean);
  let cur = '/';
  let links = 0;
  let exists = true;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === '.') continue;
    if (name === '..') {
      cur = path.dirname(cur);
      continue;
    }
    const next = path.join(cur, name);
    if (!exists) {
      cur = next; // below a missing directory nothing can be a link
      continue;
    }
    const kind = probe.kind(next);
    if (kind === 'symlink') {
      if (++links > MAX_LINKS) throw Object.assign(new Error(`ELOOP: ${p}`), { code: 'ELOOP' });
      const target = probe.readlink(next);
      pending.unshift(...target.split('/').filter(Boolean));
      if (target.startsWith('/')) cur = '/';
      continue;
    }
    if (kind === 'missing') exists = false;
    cur = next;
  }
  return { path: cur, exists };
}

/**
 * The profile with every rule moved to the path it really names; rules whose path does not
 * exist are dropped (the reference skips them, whatever `missing_path_behavior` says: measured).
 */
export function resolveProfile(profile: ManagedSandboxProfile, probe: FsProbe = realFs): ManagedSandboxProfile {
  const rules: SandboxRule[] = [];
  for (const r of profile.rules) {
    let res: Resolved;
    try {
      res = resolvePath(r.path, probe);
    } catch {
      continue; // a symlink loop names nothing
    }
    if (res.exists) rules.push({ ...r, path: res.path });
  }
  return profileFromRules(rules, profile.network, profile.cwd);
}

/**
 * Why `original`'s read-only or denied rules cannot be enforced, as the reference words it, or
 * undefined. A rule whose path goes through a symlink the sandbox can write (the link lies in
 * a writable place) is enforced on the link's target only: the command could replace the link
 * with a directory of its own (a planted `.git`, a denied path made readable) and the rule
 * would protect nothing. The reference refuses such a profile ("cannot enforce sandbox
 * read-only path … because it crosses writable symlink …", measured on 0.169 and 0.171); so
 * do we.
 */
export function writableSymlinkCrossing(original: ManagedSandboxProfile, resolved: ManagedSandboxProfile, probe: FsProbe = realFs): string | undefined {
  // The reference also protects these below every writable root, whatever the client sent, and
  // judges them first (measured: a symlinked `.git`, `.agents`, `.codex` or `.aws` in the project
  // root is refused with no rule for it; a symlinked `.vscode` runs).
  const metadata: SandboxRule[] = resolved.writableRoots.flatMap((root) =>
    PROTECTED_SUBPATHS.map((name) => path.join(root, name))
      .filter((p) => probe.kind(p) !== 'missing')
      .map((p) => ({ path: p, access: 'read' as const, missing: 'skip' as const })),
  );
  for (const r of [...metadata, ...original.rules]) {
    if (r.access === 'write') continue;
    const parts = r.path.split('/').filter(Boolean);
    for (let i = 1; i <= parts.length; i++) {
      const lexical = '/' + parts.slice(0, i).join('/');
      let parent: string;
      try {
        parent = resolvePath(path.dirname(lexical), probe).path;
      } catch {
        break; // a loop: the rule names nothing (resolveProfile dropped it)
      }
      const at = path.join(parent, parts[i - 1]);
      if (probe.kind(at) !== 'symlink') continue;
      if (accessFor(resolved, at) !== 'write') continue;
      const what = r.access === 'none' ? 'deny-read' : 'read-only';
      return `cannot enforce sandbox ${what} path ${r.path} because it crosses writable symlink ${lexical}`;
    }
  }
  return undefined;
}
