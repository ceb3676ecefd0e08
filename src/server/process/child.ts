// The OS-level child behind a managed process: either pipes (child_process) or a PTY
// (node-pty). The managed process only talks to this interface.
import fs from 'node:fs';
import os from 'node:os';
import type { OutputStream } from '../../protocol/types';

export interface ChildEvents {
  output(stream: OutputStream, data: Buffer): void;
  /** The process exited; `exitCode` is 128+signal for signal deaths. */
  exit(exitCode: number): void;
  /** Every output stream is closed: no more output will come. */
  close(): void;
}

export interface SpawnRequest {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  arg0?: string;
  pipeStdin: boolean;
  rows: number;
  cols: number;
  /** argv already closes every inherited descriptor before the command runs (a sandbox wrapper). */
  closesDescriptors?: boolean;
  /**
   * Pipes only: a Node IPC channel at number `fd` in the child (the managed network relay's,
   * ../network), which can carry descriptors; `onChannel` gets the child's handle to it at once.
   */
  channel?: { fd: number; onChannel(c: IpcChannel): void };
}

/** What a Node IPC channel to a child offers (a ChildProcess spawned with 'ipc'). */
export interface IpcChannel {
  on(event: 'message', f: (message: unknown, handle: unknown) => void): unknown;
  on(event: 'disconnect', f: () => void): unknown;
  readonly connected: boolean;
  disconnect(): void;
}

export interface ChildHandle {
  readonly pid: number;
  readonly isPty: boolean;
  /** Can the client still write to stdin? */
  readonly stdinOpen: boolean;
  /** Bytes written to stdin that the child has not consumed yet (0 when unknown). */
  readonly pendingStdinBytes: number;
  write(data: Buffer): void;
  closeStdin(): void;
  resize(rows: number, cols: number): void;
  /** Interrupt (SIGINT) the process group, like Ctrl-C in a terminal. */
  interrupt(): void;
  /** Kill the whole process group. */
  kill(signal: NodeJS.Signals): void;
  pause(): void;
  resume(): void;
}

/**
 * Told of each OS child a managed process starts (right after spawn, before it can be reaped, so
 * `pid` is still that child) and of its end (the managed process closed: what shutdown would kill
 * is gone). Set by the detached CLI server only, for its sentinel (src/cli/sentinel.ts), which
 * kills what is left should the server die without shutting down; unset, nothing is told.
 */
export interface ChildObserver {
  started(pid: number): void;
  ended(pid: number): void;
}
let childObserver: ChildObserver | undefined;
export function observeChildren(o: ChildObserver | undefined): void {
  childObserver = o;
}
export function observedChildren(): ChildObserver | undefined {
  return childObserver;
}

export function exitCodeOf(code: number | null, signal: NodeJS.Signals | number | null): number {
  if (typeof code === 'number' && (signal === null || signal === 0 || signal === undefined)) return code;
  if (typeof signal === 'number' && signal > 0) return 128 + signal;
  if (typeof signal === 'string') return 128 + ((os.constants.signals as Record<string, number>)[signal] ?? 0);
  return code ?? 1;
}

/**
 * Signals a process group; with `fallbackToPid` the bare process too when there is no such
 * group (it left it, or has not made it yet right after spawn). Callers only pass it while
 * the child is known not to be reaped, so the pid cannot have been reused.
 */
export function killGroup(pid: number, signal: NodeJS.Signals | number, fallbackToPid = false): void {
  try {
    process.kill(-pid, signal);
    return;
  } catch {
    // group gone or not a leader
  }
  if (!fallbackToPid) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Linux: the fields of /proc/<pid>/stat after "pid (comm) ", so [0] is the state (field 3), [1]
 * the ppid, [4] tty_nr, [5] tpgid, [19] starttime (field 22); comm may hold spaces and parens,
 * hence the last ')'. Undefined when there is no such process (or no /proc).
 */
export function procStatFields(pid: number | string): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * Linux: every live descendant of `pid` by parent links (/proc/<n>/stat), whatever group or
 * session it is in. Empty elsewhere, or when /proc cannot be listed.
 */
export function descendantsOf(pid: number): number[] {
  if (process.platform !== 'linux') return [];
  const children = new Map<number, number[]>();
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    const f = procStatFields(n);
    if (!f) continue; // gone meanwhile
    if (f[0] === 'Z' || f[0] === 'X') continue;
    const ppid = Number(f[1]);
    const list = children.get(ppid);
    if (list) list.push(Number(n));
    else children.set(ppid, [Number(n)]);
  }
  const out: number[] = [];
  const stack = [pid];
  while (stack.length > 0) for (const c of children.get(stack.pop()!) ?? []) out.push(c), stack.push(c);
  return out;
}

/**
 * SIGKILL for a whole tree: the process group (what a shell pipeline is in) and every
 * descendant found by parent links, which also reaches one that left the group (`setsid`,
 * a PTY child's own session) while an ancestor of it still lives. The descendants are stopped
 * first and looked for again until no new one appears, so none forks away between the look and
 * the kill. Not reached: a descendant whose parent already exited (re-parented to init) and that
 * left the group; a managed sandbox's pid namespace ends with its first process instead.
 */
export function killTree(pid: number, fallbackToPid = false): void {
  const found = new Set<number>();
  for (let pass = 0; pass < 8; pass++) {
    const fresh = descendantsOf(pid).filter((p) => !found.has(p));
    if (fresh.length === 0) break;
    for (const p of fresh) {
      found.add(p);
      try {
        process.kill(p, 'SIGSTOP');
      } catch {
        // already gone
      }
    }
  }
  killGroup(pid, 'SIGKILL', fallbackToPid);
  for (const p of found) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Linux: controlling tty (tty_nr) and its foreground group (tpgid) of `pid`, from /proc. */
export function procTty(pid: number): { ttyNr: number; tpgid: number } | undefined {
  const fields = procStatFields(pid);
  if (!fields) return undefined;
  const ttyNr = Number(fields[4]);
  const tpgid = Number(fields[5]);
  return Number.isInteger(ttyNr) && Number.isInteger(tpgid) ? { ttyNr, tpgid } : undefined;
}

/** The terminal's foreground process group of `pid` (Linux; undefined elsewhere). */
export function foregroundGroupOf(pid: number): number | undefined {
  const t = procTty(pid);
  return t && t.tpgid > 0 ? t.tpgid : undefined;
}
