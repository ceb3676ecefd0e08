// Read-only carve-outs the engine adds itself below every writable root of a managed sandbox,
// whatever the client sent (Codex's own cover only `<root>/.git`):
// - every existing `.git` (directory, or gitfile and the directory it names), `.vscode` and
//   `*.code-workspace`: a command that may write them plants `core.fsmonitor`, hooks or tasks,
//   and that code runs OUTSIDE the sandbox as soon as git (VS Code's Git extension opens nested
//   repositories by itself) or the editor looks there;
// - every regular file with other hard links (nlink > 1, e.g. a pnpm store's): the bind mount
//   of its directory writes through to the other name, outside the sandbox. A directory with
//   many of them (a package in node_modules/.pnpm) is carved out whole instead of one mount each.
// The scan is bounded (entries visited, carve-outs) and cached per directory by its mtime and
// inode: a start after the first re-reads only directories whose entries changed (a file's
// nlink only grows through a new name in some directory; a new name made inside a writable
// root is a changed directory, and one made outside cannot be: link(2) across mounts is EXDEV).
// A scan over its bounds is reported `complete: false`: the carve-outs found so far still
// apply, and whoever decides that a run needs no question (the VS Code gate) asks instead.
import fs from 'node:fs';
import path from 'node:path';
import { isInside, profileFromRules, type ManagedSandboxProfile, type SandboxRule } from './profile';

/** Entries (files and directories) one scan of one root may visit. */
export const SCAN_MAX_ENTRIES = 500_000;
/** Carve-outs (mounts) one sandbox may get from the scan. */
export const SCAN_MAX_CARVE_OUTS = 4_096;
/** More multiply-linked files than this in one directory: the directory is carved out whole. */
const LINKED_FILES_PER_DIR = 8;

interface DirEntry {
  mtimeMs: number;
  ino: number;
  subdirs: string[];
  /** Protected names (`.git`, `.vscode`, `*.code-workspace`; gitdirs they name) found in it. */
  protectedPaths: string[];
  /** Multiply-linked regular files in it. */
  linked: string[];
  /** Entries it holds (for the budget). */
  size: number;
}

const cache = new Map<string, DirEntry>();
/** Directories kept in the cache at most (the oldest are dropped first). */
const CACHE_MAX_DIRS = 200_000;

function isProtectedName(name: string): boolean {
  return name === '.git' || name === '.vscode' || name.endsWith('.code-workspace');
}

/** The directory a gitfile (`gitdir: <path>`) names, resolved against its own directory. */
function gitfileTarget(file: string): string | undefined {
  try {
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(fs.readFileSync(file, 'utf8').slice(0, 4096));
    return m ? path.resolve(path.dirname(file), m[1]) : undefined;
  } catch {
    return undefined;
  }
}

function readDir(dir: string, st: fs.Stats): DirEntry {
  const entry: DirEntry = { mtimeMs: st.mtimeMs, ino: st.ino, subdirs: [], protectedPaths: [], linked: [], size: 0 };
  let names: fs.Dirent[];
  try {
    names = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return entry; // unreadable: nothing below it can be written by the user's sandbox either
  }
  entry.size = names.length;
  for (const d of names) {
    const p = path.join(dir, d.name);
    if (isProtectedName(d.name)) {
      entry.protectedPaths.push(p);
      if (d.name === '.git' && d.isFile()) {
        const target = gitfileTarget(p);
        if (target) entry.protectedPaths.push(target);
      } else if (d.isSymbolicLink()) {
        try {
          entry.protectedPaths.push(fs.realpathSync(p));
        } catch {
          // dangling: nothing to protect behind it
        }
      }
      continue; // not entered: carved out whole
    }
    if (d.isDirectory()) entry.subdirs.push(p);
    else if (d.isFile()) {
      try {
        if (fs.lstatSync(p).nlink > 1) entry.linked.push(p);
      } catch {
        // gone meanwhile
      }
    }
  }
  return entry;
}

export interface CarveOutScan {
  /** Paths to make read-only (existing when scanned; mounted with --ro-bind-try). */
  paths: string[];
  /** False when a bound stopped the scan: paths below unvisited directories are missing. */
  complete: boolean;
}

/** Scans `root` (absolute, symlink-resolved) for the carve-outs above; see the top of the file. */
export function scanCarveOuts(root: string, maxEntries = SCAN_MAX_ENTRIES): CarveOutScan {
  const paths: string[] = [];
  const stack = [root];
  let visited = 0;
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(dir);
    } catch {
      cache.delete(dir);
      continue;
    }
    if (!st.isDirectory()) continue;
    let entry = cache.get(dir);
    if (!entry || entry.mtimeMs !== st.mtimeMs || entry.ino !== st.ino) {
      entry = readDir(dir, st);
      cache.delete(dir);
      if (cache.size >= CACHE_MAX_DIRS) cache.delete(cache.keys().next().value!);
      cache.set(dir, entry);
    }
    visited += entry.size;
    if (visited > maxEntries) return { paths, complete: false };
    paths.push(...entry.protectedPaths);
    if (entry.linked.length > LINKED_FILES_PER_DIR) paths.push(dir);
    else paths.push(...entry.linked);
    if (paths.length > SCAN_MAX_CARVE_OUTS) return { paths: paths.slice(0, SCAN_MAX_CARVE_OUTS), complete: false };
    stack.push(...entry.subdirs);
  }
  return { paths, complete: true };
}

/** Writable roots too wide to scan or carve (the client asked for everything writable there). */
function scannable(root: string): boolean {
  return root !== '/';
}

export interface ProtectedProfile {
  profile: ManagedSandboxProfile;
  /** Every writable root was scanned within the bounds. */
  complete: boolean;
}

/**
 * `prof` (resolved: ./resolve.ts) with a read rule (missing: skip) for every carve-out found
 * below its writable roots that the profile would otherwise let a command write.
 */
export function withCarveOuts(prof: ManagedSandboxProfile): ProtectedProfile {
  const extra: SandboxRule[] = [];
  let complete = true;
  const seen = new Set(prof.rules.map((r) => r.path));
  for (const root of prof.writableRoots) {
    if (!scannable(root)) continue;
    const scan = scanCarveOuts(root);
    complete &&= scan.complete;
    for (const p of scan.paths) {
      if (seen.has(p) || !prof.writableRoots.some((w) => isInside(p, w))) continue;
      seen.add(p);
      extra.push({ path: p, access: 'read', missing: 'skip', scanned: true });
    }
  }
  if (extra.length === 0) return { profile: prof, complete };
  // A carve-out never loosens: where a more specific rule already says `none`, that one wins
  // (rules decide by specificity; ours sit at the protected path itself).
  const rules = [...prof.rules, ...extra.filter((r) => !prof.rules.some((q) => q.access === 'none' && isInside(r.path, q.path)))];
  return { profile: profileFromRules(rules, prof.network, prof.cwd), complete };
}
