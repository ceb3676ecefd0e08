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
   * Pipes only: one more descriptor, a socketpair at number `fd` in the child (the managed
   * network relay's, ../network); `onStream` gets the server's end once the child is spawned.
   */
  extraSocket?: { fd: number; onStream(s: import('node:stream').Duplex): void };
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

/** Linux: controlling tty (tty_nr) and its foreground group (tpgid) of `pid`, from /proc. */
export function procTty(pid: number): { ttyNr: number; tpgid: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid pgrp session tty_nr tpgid ..." — comm may contain spaces/parens.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ttyNr = Number(fields[4]);
    const tpgid = Number(fields[5]);
    return Number.isInteger(ttyNr) && Number.isInteger(tpgid) ? { ttyNr, tpgid } : undefined;
  } catch {
    return undefined;
  }
}

/** The terminal's foreground process group of `pid` (Linux; undefined elsewhere). */
export function foregroundGroupOf(pid: number): number | undefined {
  const t = procTty(pid);
  return t && t.tpgid > 0 ? t.tpgid : undefined;
}
