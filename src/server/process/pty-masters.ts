// PTY master descriptors must not reach other children. node-pty opens a terminal's master
// without close-on-exec (forkpty/openpty; Node has no fcntl to set the flag afterwards), and
// neither libuv's spawn nor node-pty's fork closes anything, so every child started while a
// PTY process runs inherited every live master and could write into it, i.e. type into that
// terminal (an approved agent command into the user's own Local shell, same engine process).
// - Pipe children: each live master's descriptor number is given /dev/null in the child
//   (libuv dup2s a stdio entry onto its slot, which replaces the inherited master there).
// - PTY children (forked by node-pty, no stdio control): the command starts behind the same
//   descriptor closer the sandbox uses (bash closes every descriptor above 2), which then execs
//   it through `env -i` with the environment it was started with, read back from
//   /proc/self/environ, since bash adds and rewrites variables of its own (PWD, SHLVL, IFS...).
// Sandboxed commands close theirs inside the sandbox (../sandbox/bwrap.ts) and skip this.
import fs from 'node:fs';
import type { StdioOptions } from 'node:child_process';

/** Descriptor numbers of masters this process opened; pruned when a number is no longer a PTY master. */
const masters = new Set<number>();
let devNull: number | undefined;

function isPtyMaster(fd: number): boolean {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`).endsWith('ptmx');
  } catch {
    return false;
  }
}

export function trackMaster(fd: number | undefined): void {
  if (typeof fd === 'number' && fd > 2) masters.add(fd);
}

/** The live masters (numbers closed or reused by something else meanwhile are dropped). */
export function liveMasters(): number[] {
  for (const fd of masters) if (!isPtyMaster(fd)) masters.delete(fd);
  return [...masters].sort((a, b) => a - b);
}

/** `base` (stdio 0..2) extended so that every live master's slot holds /dev/null in the child. */
export function pipeStdio(base: StdioOptions & unknown[]): StdioOptions {
  const live = liveMasters();
  if (live.length === 0) return base;
  devNull ??= fs.openSync('/dev/null', 'r+'); // close-on-exec, kept for the process's life
  const stdio: unknown[] = [...base];
  for (let fd = base.length; fd <= live[live.length - 1]; fd++) stdio.push(live.includes(fd) ? devNull : 'ignore');
  return stdio as StdioOptions;
}

/** See the top of this file; `$0` is coreutils env. */
const CLOSE_THEN_EXEC_SCRIPT =
  'for f in /proc/self/fd/*; do f=${f##*/}; if [[ $f -gt 2 ]]; then exec {f}>&-; fi; done; ' +
  'mapfile -d "" -t E </proc/self/environ; exec -c "$0" -i -- "${E[@]}" "$@"';

let tools: { bash: string; env: string } | null | undefined;
function closerTools(): { bash: string; env: string } | null {
  if (tools !== undefined) return tools;
  const find = (names: string[]) => names.find((p) => fs.existsSync(p));
  const bash = process.platform === 'linux' ? find(['/bin/bash', '/usr/bin/bash']) : undefined;
  const env = find(['/usr/bin/env', '/bin/env']);
  tools = bash && env ? { bash, env } : null;
  return tools;
}

/**
 * The file and arguments node-pty should start for `file args…` so the command gets no
 * descriptor above 2: the closer above, or the command itself where it cannot run (no bash
 * or /proc: not Linux), or `file` holds '=' (env would read it as an assignment).
 */
export function ptyCloser(file: string, args: string[]): { file: string; args: string[] } {
  const t = closerTools();
  if (!t || file.includes('=')) return { file, args };
  return { file: t.bash, args: ['--norc', '-p', '-c', CLOSE_THEN_EXEC_SCRIPT, t.env, file, ...args] };
}
