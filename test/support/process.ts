// Processes as tests see them (Linux /proc): whether one is alive — with one meaning for the
// whole suite — its state, descendants and bytes written.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

/**
 * One-letter state of `pid` from /proc/<pid>/stat (R, S, D, Z, T, X, …), or undefined when
 * there is no such process. The command name (field 2) may contain spaces and parentheses,
 * so the state is read after the LAST ')'.
 */
export function procState(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  return stat.slice(stat.lastIndexOf(')') + 2).charAt(0) || undefined;
}

/**
 * Is `pid` alive, i.e. still able to run, write or hold resources?
 * A zombie (Z: exited, waiting for its parent to reap it) and a dead task (X) count as DEAD:
 * a test asking "did the server kill its child?" must not fail because the child's parent has
 * not called wait() yet. (`process.kill(pid, 0)` succeeds on zombies, so it is not used.)
 */
export function isAlive(pid: number): boolean {
  const s = procState(pid);
  return s !== undefined && s !== 'Z' && s !== 'X';
}

export interface ProcInfo {
  pid: number;
  ppid: number;
  /** Command name (at most 15 characters), as in /proc/<pid>/comm. */
  comm: string;
  state: string;
  /** Process group, and the foreground process group of its controlling terminal (-1: none). */
  pgrp: number;
  tpgid: number;
}

/** /proc/<pid>/stat parsed, or undefined when the process is gone. */
export function procInfo(pid: number): ProcInfo | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const close = stat.lastIndexOf(')');
  // After the command name: state ppid pgrp session tty_nr tpgid …
  const f = stat.slice(close + 2).split(' ');
  return { pid, ppid: Number(f[1]), comm: stat.slice(stat.indexOf('(') + 1, close), state: f[0], pgrp: Number(f[2]), tpgid: Number(f[5]) };
}

/** The command line of `pid` (arguments joined by spaces), '' when gone. */
export function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}

/** Every pid but this process whose command line (cmdline's form) contains `needle`. */
export function pidsWith(needle: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => pid !== process.pid && cmdline(pid).includes(needle));
}

/** Alive (isAlive's meaning) descendants of `root`: children, grandchildren, … */
export function descendants(root: number): ProcInfo[] {
  const procs: ProcInfo[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = procInfo(Number(name)); // undefined: raced with an exit
    if (p && p.state !== 'Z' && p.state !== 'X') procs.push(p);
  }
  const tree = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of procs) if (!tree.has(p.pid) && tree.has(p.ppid)) (tree.add(p.pid), (grew = true));
  }
  return procs.filter((p) => p.pid !== root && tree.has(p.pid));
}

/** Alive direct children of `pid`. */
export function childPids(pid: number): number[] {
  return descendants(pid).filter((p) => p.ppid === pid).map((p) => p.pid);
}

/** Bytes `pid` has written so far (wchar of /proc/<pid>/io), or undefined if it is gone. */
export function bytesWritten(pid: number): number | undefined {
  try {
    const m = /^wchar:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

/**
 * spawn() for a helper a test starts (a symlink flipper, a load generator) that must not outlive
 * the test file's process: the runner SIGKILLs a file at its timeout, and then no t.after runs.
 * The helper gets SIGKILL when this process dies (PR_SET_PDEATHSIG through util-linux setpriv,
 * which execs it: the pid is the helper's own). libuv spawns from the main thread, whose end is
 * the process's.
 */
export function spawnTied(command: string, args: readonly string[], opts: SpawnOptions = {}): ChildProcess {
  if (!SETPRIV) throw new Error('setpriv (util-linux) is needed to tie a helper to the test process');
  return spawn(SETPRIV, ['--pdeathsig', 'KILL', '--', command, ...args], opts);
}
