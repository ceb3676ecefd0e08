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
}

export interface ChildHandle {
  readonly pid: number;
  readonly isPty: boolean;
  /** Can the client still write to stdin? */
  readonly stdinOpen: boolean;
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

export function exitCodeOf(code: number | null, signal: NodeJS.Signals | number | null): number {
  if (typeof code === 'number' && (signal === null || signal === 0 || signal === undefined)) return code;
  if (typeof signal === 'number' && signal > 0) return 128 + signal;
  if (typeof signal === 'string') return 128 + ((os.constants.signals as Record<string, number>)[signal] ?? 0);
  return code ?? 1;
}

/** Signals a process group, falling back to the single process (it may have left its group). */
export function killGroup(pid: number, signal: NodeJS.Signals | number): void {
  try {
    process.kill(-pid, signal);
    return;
  } catch {
    // group gone or not a leader
  }
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** Linux: the terminal's foreground process group of `pid` (field tpgid of /proc/pid/stat). */
export function foregroundGroupOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid pgrp session tty_nr tpgid ..." — comm may contain spaces/parens.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const tpgid = Number(fields[5]);
    return Number.isInteger(tpgid) && tpgid > 0 ? tpgid : undefined;
  } catch {
    return undefined;
  }
}
