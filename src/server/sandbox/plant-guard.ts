// What a running sandbox creates that ./carve-outs.ts could not protect, because it did not exist
// when the sandbox started: a new nested repository (`git init sub`, then `core.fsmonitor` in
// its config), a gitfile naming a gitdir the command prepared, a `.git` renamed into place, a
// new `.vscode/`, a new `*.code-workspace`. Code planted there runs OUTSIDE the sandbox as soon
// as git or the editor looks, and VS Code's Git extension opens a repository that appears in
// the workspace by itself (its file watcher, then a 500 ms debounce, then `git status`).
//
// Nothing can stop a name from being created inside a writable bind mount (bubblewrap mounts
// only what exists; seccomp cannot read path arguments; Landlock has no per-name rules). So
// while a sandbox runs, every directory of its writable roots is watched (inotify, one watch
// per directory), and a protected name that appears is, within one event-loop turn:
//   1. moved aside to `<name>.exec-server-quarantine` (a name neither git nor VS Code reads,
//      and carved out read-only for every later sandbox, so none can move it back);
//   2. reported to every sandbox that could write there, which the engine then kills: a
//      command left running could re-create it faster than any watcher moves it (measured:
//      a loop of `git init` keeps a live `.git` most of the time), so it gets one try;
//   3. looked for again when the last such sandbox closed (a full scan, in case the kernel's
//      event queue overflowed), and every few seconds while one runs.
// The watcher cannot tell who created a name: one the user makes while an agent's sandbox is
// running is moved aside too (and says so). Temp directories themselves are not watched
// (nothing opens a repository there by itself, and test suites make them there all the time);
// a project inside one is, and so is an editor's open folder inside one (the Git extension
// opens repositories there by itself). A tree with more directories than the guard may watch is reported
// incomplete (the VS Code gate then asks before such a run).
import fs from 'node:fs';
import path from 'node:path';
import { exposedThroughTemp, forgetTurnScans, identityOf, isPlantableName, QUARANTINE_SUFFIX, scanCarveOuts, tempRoots } from './carve-outs';
import { isInside } from '../paths';

/** Directories the guard watches at most, over all roots (inotify watches are a per-user budget). */
export const GUARD_MAX_DIRS = 50_000;
/**
 * How often a full rescan runs while a sandbox lives (backstop for a lost inotify event). A
 * property, not a constant: a test turns the backstop off to see what the events alone catch.
 */
export const guardTiming = { rescanMs: 2_000 };
/** Watches are kept this long after the last sandbox of a root closed (back-to-back commands). */
const LINGER_MS = 10_000;
/** How far a file's ctime (the kernel's coarse clock) may lag Date.now(). */
const CTIME_SLACK_MS = 50;
/** Scans of one changed directory at most in one look while each adds watches (then next turn). */
const MAX_WATCH_ROUNDS = 8;

export interface Planted {
  /** The protected path that appeared. */
  path: string;
  /** Where it was moved to; undefined when it could not be moved (it is reported anyway). */
  movedTo?: string;
}

export interface GuardLease {
  /** Whether every directory of every guarded root is watched. */
  readonly complete: boolean;
  readonly reason?: string;
  /** The sandbox closed: one last look, then the watches may go. Returns what that look moved. */
  release(): Planted[];
}

/** Listeners told about every quarantine (the VS Code extension shows it to the user). */
const reporters = new Set<(p: Planted[]) => void>();
export function onPlanted(listener: (p: Planted[]) => void): () => void {
  reporters.add(listener);
  return () => reporters.delete(listener);
}

/** Moves `p` aside under a name nobody reads; undefined when it could not. */
export function quarantine(p: string): string | undefined {
  for (let i = 0; i < 100; i++) {
    const to = `${p}${QUARANTINE_SUFFIX}${i === 0 ? '' : `-${i}`}`;
    if (fs.existsSync(to) || isSymlink(to)) continue;
    try {
      fs.renameSync(p, to);
      return to;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return undefined;
      if (code === 'EACCES' || code === 'EPERM') {
        // The command made the directory read-only for its owner (us too): allowed back.
        const parent = path.dirname(p);
        try {
          const mode = fs.statSync(parent).mode & 0o7777;
          fs.chmodSync(parent, mode | 0o700);
          try {
            fs.renameSync(p, to);
            return to;
          } finally {
            fs.chmodSync(parent, mode);
          }
        } catch {
          return undefined;
        }
      }
      return undefined;
    }
  }
  return undefined;
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

interface Lease {
  onPlant(p: Planted[]): void;
  /** Every entry an inotify event named while the lease was held (not the periodic rescans). */
  onChange?(p: string): void;
}

let watchedDirs = 0;

class RootGuard {
  private readonly watchers = new Map<string, { w: fs.FSWatcher; ino: number }>();
  readonly leases = new Set<Lease>();
  /**
   * Protected entries present when the first live sandbox started (device, inode and birth time,
   * not path: a sandbox may move an existing repository away and plant a new `.git` where it
   * was): never moved.
   */
  private known = new Set<string>();
  /**
   * The directories that first scan read, when it stopped at one of its bounds (time under load,
   * entries, carve-outs); undefined when it read them all. Below the others `known` says nothing.
   */
  private baselineDirs: Set<string> | undefined;
  /** When the first live sandbox started (Date.now()). */
  private since = 0;
  private readonly dirty = new Set<string>();
  private flushTimer: ReturnType<typeof setImmediate> | undefined;
  private rescanTimer: ReturnType<typeof setInterval> | undefined;
  private lingerTimer: ReturnType<typeof setTimeout> | undefined;
  complete = true;
  reason: string | undefined;

  constructor(readonly root: string) {}

  acquire(lease: Lease): void {
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    this.lingerTimer = undefined;
    if (this.leases.size === 0) {
      // Nothing of a sandbox is running here: what exists now is the user's (or was moved aside).
      const scan = scanCarveOuts(this.root);
      this.since = Date.now();
      this.known = new Set(scan.entryIds.filter((x): x is string => x !== undefined));
      this.baselineDirs = scan.complete ? undefined : new Set(scan.dirs);
      this.complete = scan.complete;
      this.reason = scan.reason;
      this.watch(scan);
      this.rescanTimer = setInterval(() => this.markDirty(this.root), guardTiming.rescanMs);
      this.rescanTimer.unref?.();
    } else {
      // Another sandbox is live: whatever appeared since is looked at first (never blessed).
      this.markDirty(this.root);
      this.flush();
    }
    this.leases.add(lease);
  }

  release(lease: Lease): Planted[] {
    this.markDirty(this.root);
    const moved = this.flush();
    this.leases.delete(lease);
    if (this.leases.size === 0) {
      if (this.rescanTimer) clearInterval(this.rescanTimer);
      this.rescanTimer = undefined;
      this.lingerTimer = setTimeout(() => this.stop(), LINGER_MS);
      this.lingerTimer.unref?.();
    }
    return moved;
  }

  private stop(): void {
    for (const { w } of this.watchers.values()) w.close();
    watchedDirs -= this.watchers.size;
    this.watchers.clear();
    guards.delete(this.root);
  }

  /**
   * Watches every directory of a scan (by the inode the scan just saw: no second lstat per
   * directory). Returns how many watches it added.
   */
  private watch(scan: { dirs: readonly string[]; inos: readonly number[] }): number {
    let added = 0;
    for (let i = 0; i < scan.dirs.length; i++) {
      const d = scan.dirs[i];
      const ino = scan.inos[i];
      const had = this.watchers.get(d);
      if (had && had.ino === ino) continue;
      if (had) {
        had.w.close();
        this.watchers.delete(d);
        watchedDirs--;
      }
      if (watchedDirs >= GUARD_MAX_DIRS) {
        this.complete = false;
        this.reason ??= `more than ${GUARD_MAX_DIRS} directories to watch`;
        continue;
      }
      try {
        const w = fs.watch(d, { persistent: false }, (_ev, name) => {
          const p = name ? path.join(d, name.toString()) : d;
          for (const l of this.leases) l.onChange?.(p);
          this.markDirty(p);
        });
        w.on('error', () => {
          w.close();
          if (this.watchers.get(d)?.w === w) {
            this.watchers.delete(d);
            watchedDirs--;
          }
        });
        this.watchers.set(d, { w, ino });
        watchedDirs++;
        added++;
      } catch (e) {
        // ENOSPC: the user's inotify watch budget is spent (fs.inotify.max_user_watches).
        this.complete = false;
        this.reason ??= `cannot watch ${d}: ${(e as Error).message}`;
      }
    }
    return added;
  }

  /** `p` (a changed entry, or a directory to look at again) needs a look. */
  private markDirty(p: string): void {
    if (this.leases.size === 0) return;
    this.dirty.add(p);
    this.flushTimer ??= setImmediate(() => {
      this.flushTimer = undefined;
      this.flush();
    });
  }

  /** Exists, and is not one of the entries known at the start. */
  private isNew(p: string): boolean {
    const id = identityOf(p);
    return id !== undefined && this.unknown(p, id);
  }

  /**
   * `p` (identity `id`) was not there when the first live sandbox started. Where the first scan
   * read `p`'s directory, by identity. Below where it stopped (a bound: under load, its 2 s), it
   * never saw what was there: a later, warmer scan that got further found the user's own `.git`
   * "new", moved it aside and stopped the sandbox (a false kill, test/server/sandbox/
   * plant-guard.attacks.test.ts "incomplete"). There, an entry is new when its status changed
   * since the start: creating it, renaming it into place or replacing it sets its ctime, which a
   * process cannot set back.
   */
  private unknown(p: string, id: string): boolean {
    if (this.known.has(id)) return false;
    if (!this.baselineDirs || this.baselineDirs.has(path.dirname(p))) return true;
    try {
      // ctime comes from the kernel's coarse clock (a tick behind Date.now() at most).
      return fs.lstatSync(p).ctimeMs >= this.since - CTIME_SLACK_MS;
    } catch {
      return false; // gone
    }
  }

  private flush(): Planted[] {
    if (this.flushTimer) clearImmediate(this.flushTimer);
    this.flushTimer = undefined;
    const todo = [...this.dirty];
    this.dirty.clear();
    forgetTurnScans(); // what is on disk now, not what this turn saw earlier
    const moved: Planted[] = [];
    const movedPaths = new Set<string>();
    /** Moves `e` aside once, however many scans of this flush see it. */
    const moveAside = (e: string) => {
      if (movedPaths.has(e)) return;
      movedPaths.add(e);
      moved.push({ path: e, movedTo: quarantine(e) });
    };
    const look = (p: string) => {
      if (isPlantableName(path.basename(p)) && p !== this.root) {
        if (this.isNew(p)) moveAside(p);
        return;
      }
      let st: fs.Stats;
      try {
        st = fs.lstatSync(p);
      } catch {
        return;
      }
      if (!st.isDirectory()) return;
      // A new or changed directory: everything below it (its contents may predate our watch).
      // A name created in a directory after the scan read it but before its watch was added
      // raises no event (measured: ~1 in 80 of `mkdir d && echo … > d/.git` loops), so a scan
      // that added watches is done again until one adds none; unchanged directories are then
      // only lstat'ed (the scan cache).
      for (let round = 0; ; round++) {
        const scan = scanCarveOuts(p);
        const added = this.watch(scan);
        // By the identity the scan saw (its directory's cache entry is as fresh as the scan).
        scan.entries.forEach((e, i) => {
          const id = scan.entryIds[i];
          if (isPlantableName(path.basename(e)) && id !== undefined && this.unknown(e, id)) moveAside(e);
        });
        if (added === 0) break;
        forgetTurnScans();
        if (round === MAX_WATCH_ROUNDS) {
          // Still growing as fast as it is read: looked at again next turn.
          this.markDirty(p);
          break;
        }
      }
    };
    // A directory whose ancestor is also dirty is looked at through that ancestor.
    const dirtySet = new Set(todo);
    for (const p of todo) {
      let up = path.dirname(p);
      let covered = false;
      while (isInside(up, this.root) && up !== p) {
        if (dirtySet.has(up)) {
          covered = true;
          break;
        }
        if (up === this.root) break;
        up = path.dirname(up);
      }
      if (!covered) look(p);
    }
    if (moved.length > 0) {
      forgetTurnScans();
      for (const l of [...this.leases]) l.onPlant(moved);
      for (const r of [...reporters]) r(moved);
    }
    return moved;
  }
}

const guards = new Map<string, RootGuard>();

/**
 * The writable roots the guard watches: not `/`, not a temp dir itself (but what of an open
 * folder a writable temp dir reaches: ./carve-outs.ts setOpenFolders), not inside another.
 */
export function guardedRoots(writableRoots: readonly string[]): string[] {
  const temp = tempRoots();
  const roots = [...new Set([...writableRoots.filter((r) => r !== '/' && !temp.includes(r)), ...exposedThroughTemp(writableRoots)])];
  return roots.filter((r) => !roots.some((o) => o !== r && isInside(r, o)));
}

/**
 * Whether a sandbox writing `writableRoots` (resolved) would be fully protected: every guarded
 * root scanned within the carve-out bounds, and its directories within what the guard may watch.
 * The VS Code gate asks before a run that would not be (temp dirs are not part of the promise).
 */
export function protectionOf(writableRoots: readonly string[]): { complete: boolean; reason?: string } {
  let dirs = 0;
  for (const r of guardedRoots(writableRoots)) {
    const scan = scanCarveOuts(r);
    if (!scan.complete) return { complete: false, reason: scan.reason };
    dirs += scan.dirs.length;
  }
  if (dirs > GUARD_MAX_DIRS) return { complete: false, reason: `${dirs} directories to watch (at most ${GUARD_MAX_DIRS})` };
  return { complete: true };
}

/**
 * Watches the writable roots of one sandbox from now (before it is spawned) until its lease is
 * released; `onPlant` is called with what was moved aside (the caller stops the sandbox).
 */
export function guardSandbox(writableRoots: readonly string[], onPlant: (p: Planted[]) => void, onChange?: (p: string) => void): GuardLease {
  const lease: Lease = { onPlant, onChange };
  const held: RootGuard[] = [];
  for (const r of guardedRoots(writableRoots)) {
    let g = guards.get(r);
    if (!g) guards.set(r, (g = new RootGuard(r)));
    g.acquire(lease);
    held.push(g);
  }
  let released = false;
  return {
    complete: held.every((g) => g.complete),
    reason: held.find((g) => !g.complete)?.reason,
    release: () => {
      if (released) return [];
      released = true;
      return held.flatMap((g) => g.release(lease));
    },
  };
}

/**
 * Reports every entry changed below `writableRoots` (the guarded ones: not temp dirs
 * themselves) from now until the returned function is called: the VS Code gate's record of what
 * an unasked sandboxed command changed (a granted `make test` then asks again). Whoever changed
 * it: the watcher cannot tell a command from the user.
 */
export function watchChanges(writableRoots: readonly string[], onChange: (p: string) => void): () => void {
  const lease = guardSandbox(writableRoots, () => {}, onChange);
  return () => void lease.release();
}
