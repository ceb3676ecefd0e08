// Read-only carve-outs the engine adds itself below every writable root of a managed sandbox,
// whatever the client sent (Codex's own cover only `<root>/.git`):
// - every existing `.git` (directory, or gitfile and the directory it names), `.vscode` and
//   `*.code-workspace`: a command that may write them plants `core.fsmonitor`, hooks or tasks,
//   and that code runs OUTSIDE the sandbox as soon as git (VS Code's Git extension opens nested
//   repositories by itself) or the editor looks there;
// - every regular file with other hard links (nlink > 1, e.g. a pnpm store's): the bind mount
//   of its directory writes through to the other name, outside the sandbox. A directory with
//   many of them (a package in node_modules/.pnpm) is carved out whole instead of one mount each.
// The scan is bounded (entries visited, carve-outs) and cached per directory by its mtime, ctime
// and inode, only once both are older than the timestamp granularity allows to trust (a second
// write in the same clock tick leaves the mtime as it was, and utimes(2) can put an mtime back,
// but not the ctime): a start after the first re-reads only directories whose entries changed (a file's
// nlink only grows through a new name in some directory; a new name made inside a writable
// root is a changed directory, and one made outside cannot be: link(2) across mounts is EXDEV).
// A directory the scan cannot read is carved out whole (the same user may still write below
// it: a mode-0300 directory is writable and enterable, and its contents are unseen). A scan
// over its bounds (entries, carve-outs, time) is reported `complete: false` with the reason:
// the carve-outs found so far still apply, and whoever decides that a run needs no question
// (the VS Code gate) asks instead. Names that did not exist when a sandbox started are the
// business of ./plant-guard.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decidingRule, profileFromRules, type ManagedSandboxProfile, type SandboxRule } from './profile';
import { isInside } from '../paths';

/** Entries (files and directories) one scan of one root may visit. */
export const SCAN_MAX_ENTRIES = 500_000;
/** Carve-outs (mounts) one sandbox may get from the scan. */
export const SCAN_MAX_CARVE_OUTS = 4_096;
/** Time one scan may take (a cold cache on a slow disk): past it, the scan is incomplete. */
export const SCAN_MAX_MS = 2_000;
/**
 * ...of a temp directory itself (`/tmp`: everybody's leftovers, 100 000 entries on a busy
 * machine). Best effort: what it finds is carved out, the rest is cached for the next start,
 * and it never makes a profile incomplete (temp dirs are not part of the promise, see
 * ./plant-guard.ts).
 */
const SCAN_TEMP_MAX_MS = 250;
/** More multiply-linked files than this in one directory: the directory is carved out whole. */
const LINKED_FILES_PER_DIR = 8;

/**
 * A directory changed this recently is re-read at every scan: filesystems stamp times from a
 * coarse clock (a jiffy; FAT keeps 2 s), so a second change within the same tick can leave both
 * times as the cache saw them.
 */
const UNSETTLED_MS = 2_000;

interface DirEntry {
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  /** Both times were older than UNSETTLED_MS when it was read: its times can be trusted. */
  settled: boolean;
  subdirs: string[];
  /** Protected names (`.git`, `.vscode`, `*.code-workspace`, quarantined ones) found in it. */
  protectedPaths: string[];
  /**
   * Their identityOf when the directory was read (undefined: gone meanwhile). Valid as long as the
   * entry is: a name only gets another inode through a change to this directory.
   */
  ids: (string | undefined)[];
  /** What those name elsewhere (a gitfile's gitdir, a symlink's target): carved out too. */
  targets: string[];
  /**
   * Those of protectedPaths that are symlinks: not bound themselves (bwrap cannot mount onto a
   * link; it resolves the destination), their targets are; replacing the link is a new entry the
   * plant guard moves aside.
   */
  links: string[];
  /** The directory itself could not be listed: carved out whole. */
  unreadable: boolean;
  /** Multiply-linked regular files in it. */
  linked: string[];
  /** Entries it holds (for the budget). */
  size: number;
}

const cache = new Map<string, DirEntry>();
/** Directories kept in the cache at most (the oldest are dropped first). */
const CACHE_MAX_DIRS = 200_000;

/** Suffix ./plant-guard.ts gives a protected entry a sandbox created (no longer a name git or VS Code reads). */
export const QUARANTINE_SUFFIX = '.exec-server-quarantine';

/**
 * Names whose content makes code run outside a sandbox (git's repository discovery, VS Code's
 * workspace settings and tasks). Compared case-insensitively: a case-folding directory
 * (ext4 `chattr +F`, a mounted FAT/NTFS/APFS disk) resolves `.GIT` as `.git`.
 */
export function isPlantableName(name: string): boolean {
  const n = name.toLowerCase();
  return n === '.git' || n === '.vscode' || n.endsWith('.code-workspace');
}

/** Plantable names and the quarantined ones (a later sandbox must not rename them back). */
function isProtectedName(name: string): boolean {
  return isPlantableName(name) || name.includes(QUARANTINE_SUFFIX);
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

/**
 * `dev:ino:birth time` of `p` itself (not followed); undefined when it is gone. The birth time
 * because a filesystem gives a freed inode number to the next file at once (ext4, measured): a
 * `.git` made right after a known entry was removed had that entry's `dev:ino`, and the plant
 * guard took it for the known one (test/server/sandbox/plant-guard.attacks.test.ts "inode").
 * Where the filesystem keeps no birth time (0), `dev:ino` as before.
 */
export function identityOf(p: string): string | undefined {
  try {
    const st = fs.lstatSync(p, { bigint: true });
    return `${st.dev}:${st.ino}:${st.birthtimeNs}`;
  } catch {
    return undefined;
  }
}

function readDir(dir: string, st: fs.Stats): DirEntry {
  const settled = Date.now() - Math.max(st.mtimeMs, st.ctimeMs) > UNSETTLED_MS;
  const entry: DirEntry = { mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino, settled, subdirs: [], protectedPaths: [], ids: [], targets: [], links: [], unreadable: false, linked: [], size: 0 };
  let names: fs.Dirent[];
  try {
    names = fs.readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    // Gone meanwhile: nothing to protect. Unreadable (EACCES): unseen, so carved out whole.
    entry.unreadable = (e as NodeJS.ErrnoException).code !== 'ENOENT' && (e as NodeJS.ErrnoException).code !== 'ENOTDIR';
    return entry;
  }
  entry.size = names.length;
  for (const d of names) {
    const p = path.join(dir, d.name);
    if (isProtectedName(d.name)) {
      entry.protectedPaths.push(p);
      entry.ids.push(identityOf(p));
      if (d.name === '.git' && d.isFile()) {
        const target = gitfileTarget(p);
        if (target) entry.targets.push(target);
      } else if (d.isSymbolicLink()) {
        entry.links.push(p);
        try {
          entry.targets.push(fs.realpathSync(p));
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
  /** The protected entries themselves (a subset of `paths`: names, not what they point to). */
  entries: string[];
  /** Their identityOf as the scan saw them (./plant-guard.ts tells the user's from new ones by it). */
  entryIds: (string | undefined)[];
  /** Every directory visited (listed or carved out whole). */
  dirs: string[];
  /** Their inode numbers as the scan saw them (./plant-guard.ts watches by them without another lstat). */
  inos: number[];
  /** False when a bound stopped the scan: paths below unvisited directories are missing. */
  complete: boolean;
  /** Why it is incomplete, in words. */
  reason?: string;
}

/**
 * The last scans, kept until the end of the current turn: one sandboxed start asks twice in a
 * row, synchronously (./plant-guard.ts before its spawn, then the carve-outs for its mounts),
 * and the second answer would be the same but for what another process changed meanwhile.
 */
const turnScans = new Map<string, CarveOutScan>();

/** Scans `root` (absolute, symlink-resolved) for the carve-outs above; see the top of the file. */
export function scanCarveOuts(root: string, maxEntries = SCAN_MAX_ENTRIES, maxMs = SCAN_MAX_MS, skip: readonly string[] = []): CarveOutScan {
  const key = `${maxEntries}:${maxMs}:${root}:${skip.join('\0')}`;
  const memo = turnScans.get(key);
  if (memo) return memo;
  const scan = scanNow(key, root, maxEntries, maxMs, new Set(skip));
  if (turnScans.size === 0) setImmediate(() => turnScans.clear());
  turnScans.set(key, scan);
  return scan;
}

/** Forgets the scans of this turn (after a change the caller made itself, e.g. a quarantine). */
export function forgetTurnScans(): void {
  turnScans.clear();
}

/**
 * The last walk of each scan key: the cache entries it went through (undefined: a directory gone
 * or no longer one), and what it returned. A later walk through exactly the same entries, in the
 * same order, would build the same result: it returns that same object instead, so what is built
 * from a scan (withCarveOuts's profile) is kept for as long as nothing below the root changed.
 * Every directory is still lstat'ed at every walk: that is the validation.
 */
const lastWalks = new Map<string, { seen: (DirEntry | undefined)[]; scan: CarveOutScan }>();
const LAST_WALKS_MAX = 64;

function sameWalk(a: readonly (DirEntry | undefined)[], b: readonly (DirEntry | undefined)[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** `skip`: directories below `root` not entered (writable roots of their own, scanned apart). */
function scanNow(key: string, root: string, maxEntries: number, maxMs: number, skip: ReadonlySet<string>): CarveOutScan {
  const seen: (DirEntry | undefined)[] = [];
  const scan = walk(root, maxEntries, maxMs, skip, seen);
  const last = lastWalks.get(key);
  if (last && sameWalk(last.seen, seen)) return last.scan;
  lastWalks.delete(key);
  if (lastWalks.size >= LAST_WALKS_MAX) lastWalks.delete(lastWalks.keys().next().value!);
  lastWalks.set(key, { seen, scan });
  return scan;
}

function walk(root: string, maxEntries: number, maxMs: number, skip: ReadonlySet<string>, seen: (DirEntry | undefined)[]): CarveOutScan {
  const paths: string[] = [];
  const entries: string[] = [];
  const entryIds: (string | undefined)[] = [];
  const dirs: string[] = [];
  const inos: number[] = [];
  const stack = [root];
  let visited = 0;
  const deadline = Date.now() + maxMs;
  const stop = (reason: string): CarveOutScan => ({ paths: paths.slice(0, SCAN_MAX_CARVE_OUTS), entries, entryIds, dirs, inos, complete: false, reason });
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(dir);
    } catch {
      cache.delete(dir);
      seen.push(undefined);
      continue;
    }
    if (!st.isDirectory()) {
      seen.push(undefined);
      continue;
    }
    let entry = cache.get(dir);
    if (!entry || !entry.settled || entry.mtimeMs !== st.mtimeMs || entry.ctimeMs !== st.ctimeMs || entry.ino !== st.ino) {
      entry = readDir(dir, st);
      cache.delete(dir);
      if (cache.size >= CACHE_MAX_DIRS) cache.delete(cache.keys().next().value!);
      cache.set(dir, entry);
    }
    seen.push(entry);
    dirs.push(dir);
    inos.push(st.ino);
    visited += entry.size;
    if (visited > maxEntries) return stop(`more than ${maxEntries} entries below ${root}`);
    if ((dirs.length & 255) === 0 && Date.now() > deadline) return stop(`scanning ${root} took more than ${maxMs} ms`);
    if (entry.unreadable) {
      paths.push(dir);
      continue;
    }
    const e = entry;
    paths.push(...(e.links.length ? e.protectedPaths.filter((q) => !e.links.includes(q)) : e.protectedPaths), ...e.targets);
    entries.push(...e.protectedPaths);
    entryIds.push(...e.ids);
    if (e.linked.length > LINKED_FILES_PER_DIR) paths.push(dir);
    else paths.push(...e.linked);
    if (paths.length > SCAN_MAX_CARVE_OUTS) return stop(`more than ${SCAN_MAX_CARVE_OUTS} protected paths below ${root}`);
    for (const sub of e.subdirs) if (!skip.has(sub)) stack.push(sub);
  }
  return { paths, entries, entryIds, dirs, inos, complete: true };
}

/** Temp directories themselves (their real paths too). */
export function tempRoots(): string[] {
  const out = new Set(['/tmp', '/var/tmp', '/dev/shm']);
  const t = os.tmpdir();
  out.add(t);
  try {
    out.add(fs.realpathSync(t));
  } catch {
    // missing
  }
  return [...out];
}

/** The folders an editor has open (real paths); see setOpenFolders. */
let openFolders: string[] = [];

/**
 * The folders an editor has open (VS Code's workspace folders). A repository that appears there
 * is opened by itself (VS Code's Git extension watches them and runs `git status`), so where a
 * sandbox writes one through a temp dir, that part of the temp dir is protected as a project
 * root is: scanned within the full bounds and watched (./plant-guard.ts). Before, a workspace
 * under /tmp written through the sandbox's /tmp rather than its project roots got a new
 * repository whose fsmonitor hook the Git extension ran on the host (e2e agent-attack-tests.ts).
 */
export function setOpenFolders(folders: readonly string[]): void {
  openFolders = folders.map((f) => {
    try {
      return fs.realpathSync(f);
    } catch {
      return path.resolve(f);
    }
  });
}

/**
 * What of the open folders `writableRoots` (resolved) reach through a temp dir itself: an open
 * folder inside a writable temp dir, or a writable temp dir inside an open folder.
 */
export function exposedThroughTemp(writableRoots: readonly string[]): string[] {
  const temp = tempRoots();
  const out = new Set<string>();
  for (const t of writableRoots.filter((w) => temp.includes(w))) {
    for (const f of openFolders) {
      if (isInside(f, t)) out.add(f);
      else if (isInside(t, f)) out.add(t);
    }
  }
  return [...out];
}

/** Writable roots too wide to scan or carve (the client asked for everything writable there). */
function scannable(root: string): boolean {
  return root !== '/';
}

export interface ProtectedProfile {
  profile: ManagedSandboxProfile;
  /** Every writable root was scanned within the bounds. */
  complete: boolean;
  /** Why not (the first bound hit). */
  reason?: string;
}

/**
 * `prof` (resolved: ./resolve.ts) with a read rule (missing: skip) for every carve-out found
 * below its writable roots that the profile would otherwise let a command write.
 */
export function withCarveOuts(prof: ManagedSandboxProfile): ProtectedProfile {
  const exposed = exposedThroughTemp(prof.writableRoots);
  const temp = tempRoots().filter((t) => !exposed.includes(t));
  const roots = [...new Set([...prof.writableRoots, ...exposed])];
  const scans: { scan: CarveOutScan; isTemp: boolean }[] = [];
  for (const root of roots) {
    if (!scannable(root)) continue;
    const isTemp = temp.includes(root);
    // A temp dir is walked around the workspaces inside it (each is a root scanned on its own):
    // a project under /tmp was otherwise walked twice per start.
    const nested = isTemp ? roots.filter((w) => w !== root && isInside(w, root)) : [];
    scans.push({ scan: scanCarveOuts(root, SCAN_MAX_ENTRIES, isTemp ? SCAN_TEMP_MAX_MS : SCAN_MAX_MS, nested), isTemp });
  }
  // The same profile over the same scans (nothing below its roots changed): the same answer.
  // Building it again was ~4 ms per start for 200 carve-outs (bench/carve-outs.ts).
  const key = JSON.stringify([prof.rules, prof.network, prof.cwd, temp, roots]);
  const last = lastProtected;
  if (last && last.key === key && last.scans.length === scans.length && last.scans.every((s, i) => s === scans[i].scan)) return last.result;
  const result = protect(prof, scans);
  lastProtected = { key, scans: scans.map((s) => s.scan), result };
  return result;
}

/** The last answer of withCarveOuts, and what it was built from. */
let lastProtected: { key: string; scans: CarveOutScan[]; result: ProtectedProfile } | undefined;

function protect(prof: ManagedSandboxProfile, scans: readonly { scan: CarveOutScan; isTemp: boolean }[]): ProtectedProfile {
  const extra: SandboxRule[] = [];
  let complete = true;
  let reason: string | undefined;
  const seen = new Set(prof.rules.map((r) => r.path));
  for (const { scan, isTemp } of scans) {
    if (!isTemp) {
      if (!scan.complete && complete) reason = scan.reason;
      complete &&= scan.complete;
    }
    for (const p of scan.paths) {
      if (seen.has(p) || !prof.writableRoots.some((w) => isInside(p, w))) continue;
      seen.add(p);
      extra.push({ path: p, access: 'read', missing: 'skip', scanned: true });
    }
  }
  if (extra.length === 0) return { profile: prof, complete, reason };
  // A carve-out never loosens: where the rule that decides at its path says `none`, that one
  // wins. Only the deciding rule counts: a `none` on an ancestor that a more specific write rule
  // re-opens (the workspace writable below a denied parent) must not switch carve-outs off.
  const rules = [...prof.rules, ...extra.filter((r) => decidingRule(prof, r.path)?.access !== 'none')];
  return { profile: profileFromRules(rules, prof.network, prof.cwd), complete, reason };
}
