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
   * argv is a managed sandbox whose first program says when it is set up, on the descriptor named
   * by argv[readyFdArg]: spawned through ../sandbox/setup-retry.ts, which starts it again when
   * its setup fails.
   */
  sandboxSetup?: { readyFdArg: number };
  /** Pipes only: a pipe at number `fd` in the child, its output to `onData` (../sandbox/setup-retry.ts). */
  readyPipe?: { fd: number; onData(d: Buffer): void };
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
  /** The child's pid (the process spawned; for a sandbox, bubblewrap). */
  readonly pid?: number;
  send?(message: object, callback: (error: Error | null) => void): boolean;
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

interface ProcEntry {
  pid: number;
  ppid: number;
  /** Clock ticks after boot (field 22). */
  start: number;
}

/** Linux: every live process of /proc (zombies and dead ones left out); empty elsewhere. */
function procTable(): ProcEntry[] {
  if (process.platform !== 'linux') return [];
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const out: ProcEntry[] = [];
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    const f = procStatFields(n);
    if (!f) continue; // gone meanwhile
    if (f[0] === 'Z' || f[0] === 'X') continue;
    out.push({ pid: Number(n), ppid: Number(f[1]), start: Number(f[19]) });
  }
  return out;
}

function childrenMap(table: readonly ProcEntry[]): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const e of table) {
    const list = children.get(e.ppid);
    if (list) list.push(e.pid);
    else children.set(e.ppid, [e.pid]);
  }
  return children;
}

function descendantsIn(children: ReadonlyMap<number, number[]>, roots: readonly number[]): number[] {
  const out: number[] = [];
  const stack = [...roots];
  while (stack.length > 0) for (const c of children.get(stack.pop()!) ?? []) out.push(c), stack.push(c);
  return out;
}

/**
 * What a child's standard descriptors are, read right after its spawn: its own ends of the stdio
 * socket pairs (`socket:[inode]`, `pipe:[inode]`) or its terminal (`/dev/pts/N`), and when it
 * started. A process that holds one of them later got it from this child, however it left the
 * child's tree: a double fork (`setsid -f`) re-parents a descendant to init, out of reach of
 * parent links, while it still writes to our pipe or terminal (and keeps it open).
 */
export interface StdioMark {
  readonly links: ReadonlySet<string>;
  readonly start: number;
}

/** The mark of `pid` (Linux; undefined elsewhere or when nothing of it can be read). */
export function stdioMarkOf(pid: number, ptsName?: string): StdioMark | undefined {
  const start = Number(procStatFields(pid)?.[19]);
  if (!Number.isFinite(start)) return undefined;
  const links = new Set<string>();
  if (ptsName) links.add(ptsName);
  else {
    for (const fd of [0, 1, 2]) {
      try {
        const l = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
        // Only what is this child's alone (not /dev/null, not a file others may open too).
        if (/^(socket|pipe):\[\d+\]$/.test(l)) links.add(l);
      } catch {
        // not open, or gone
      }
    }
  }
  return links.size > 0 ? { links, start } : undefined;
}

/**
 * Processes started no earlier than the mark's child (not this one) holding one of its links as
 * their standard input, output or error (as inherited): three readlinks each, not every
 * descriptor of every process (an editor's processes hold hundreds).
 */
function holdersIn(table: readonly ProcEntry[], mark: StdioMark): number[] {
  const out: number[] = [];
  for (const e of table) {
    if (e.start < mark.start || e.pid === process.pid) continue;
    for (const fd of [0, 1, 2]) {
      let l: string;
      try {
        l = fs.readlinkSync(`/proc/${e.pid}/fd/${fd}`);
      } catch {
        continue; // not open, gone, or another user's
      }
      if (mark.links.has(l)) {
        out.push(e.pid);
        break;
      }
    }
  }
  return out;
}

/**
 * SIGKILL for a whole tree: the process group (what a shell pipeline is in) and every
 * descendant found by parent links, which also reaches one that left the group (`setsid`,
 * a PTY child's own session) while an ancestor of it still lives; with `mark`, also every
 * process still holding the child's stdio or terminal (and its descendants), which reaches one
 * a double fork re-parented to init. The descendants are stopped first and looked for again
 * until no new one appears, so none forks away between the look and the kill. Not reached: a
 * descendant that left the group, whose parent already exited and that holds none of the stdio
 * as its own standard descriptors (a daemon that closed or moved them); a managed sandbox's pid
 * namespace ends with its first process instead.
 */
export function killTree(pid: number, fallbackToPid = false, mark?: StdioMark): void {
  const found = stopTree(pid, mark);
  killGroup(pid, 'SIGKILL', fallbackToPid);
  killAll(found);
}

/**
 * After the leader was reaped (its pid may be someone else's now): SIGKILL for every process still
 * holding its stdio or terminal, and their descendants, stopped first as killTree does.
 */
export function killHolders(mark: StdioMark): void {
  killAll(stopTree(undefined, mark));
}

function stopTree(pid: number | undefined, mark: StdioMark | undefined): Set<number> {
  const found = new Set<number>();
  for (let pass = 0; pass < 8; pass++) {
    const table = procTable();
    const holders = mark ? holdersIn(table, mark).filter((h) => h !== pid) : [];
    const roots = pid === undefined ? holders : [pid, ...holders];
    const fresh = [...holders, ...descendantsIn(childrenMap(table), roots)].filter((p) => p !== pid && !found.has(p));
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
  return found;
}

function killAll(pids: Iterable<number>): void {
  for (const p of pids) {
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
