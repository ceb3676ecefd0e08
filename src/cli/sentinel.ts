// The sentinel of a detached server (--run-record, started by --detach): a second small process
// (this same script, --sentinel-of) holding the read end of a pipe from the server. The server
// tells it each child a managed process starts ("+PID STARTTIME", the starttime from
// /proc/PID/stat so a pid reused by someone else later is never taken for the child) and each one
// that is gone ("-PID"), and "bye" when it exits cleanly (its shutdown killed them all). When the
// pipe ends without "bye" the server died without its shutdown (SIGKILL, the OOM killer, a crash
// of node): nobody else would ever kill what it started, nor remove its run record. The sentinel
// kills every recorded child's tree as the server's shutdown does (src/server/process/child.ts
// killTree), removes the record if it still names the dead server, logs to the server's log and
// exits. Only a pipe: nothing another user (or another process of this user) can connect to.
// Its own session: a signal to the server's process group does not reach it.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { killGroup, killTree, procStatFields, type ChildObserver } from '../server/process/child';
import { readRunRecord } from './detach';

export const SENTINEL_FLAG = '--sentinel-of';

/** Linux: the start time of `pid` (clock ticks after boot, /proc/<pid>/stat field 22), undefined when there is no such process. */
export function procStartTime(pid: number): string | undefined {
  return procStatFields(pid)?.[19];
}

type Log = (level: 'info' | 'warn', message: string) => void;

/**
 * In the detached server: starts its sentinel. Returns what to tell it of children, and `bye`
 * for the server's 'exit' (after its shutdown killed every child).
 */
export function startSentinel(runRecord: string, log: Log): { observer: ChildObserver; bye(): void } | undefined {
  if (process.platform !== 'linux') return undefined; // starttime (pid reuse) needs /proc
  let gone = false;
  let saidBye = false;
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1], SENTINEL_FLAG, String(process.pid), runRecord], {
    detached: true,
    // stderr: the server's own (its log); nothing else of the server's reaches it.
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  const stdin = child.stdin!;
  const lost = (why: string) => {
    if (gone || saidBye) return;
    gone = true;
    log('warn', `sentinel ${why}: should this server die without exiting, what it started is left running`);
  };
  child.on('error', (e) => lost(`could not start (${e.message})`));
  child.on('exit', (code, signal) => lost(`exited (${code ?? signal})`));
  stdin.on('error', () => lost('closed its pipe'));
  // Neither keeps the server running.
  child.unref();
  (stdin as unknown as { unref?(): void }).unref?.();
  if (child.pid) log('info', `sentinel pid ${child.pid}`);
  // A write to a pipe the sentinel keeps reading completes in the call (libuv tries it at once).
  const tell = (line: string) => {
    if (!gone && !stdin.destroyed) stdin.write(line);
  };
  return {
    observer: {
      started(pid) {
        const start = procStartTime(pid);
        if (start !== undefined) tell(`+${pid} ${start}\n`);
      },
      ended(pid) {
        tell(`-${pid}\n`);
      },
    },
    bye() {
      tell('bye\n');
      saidBye = true;
    },
  };
}

/**
 * The sentinel itself: reads the server's lines from stdin until it ends. Returns the exit code
 * once done.
 */
export function runSentinel(args: string[]): Promise<number> {
  const serverPid = Number(args[0]);
  const record = args[1];
  if (!Number.isInteger(serverPid) || serverPid <= 0 || !record) {
    process.stderr.write(`exec-server: ${SENTINEL_FLAG} PID RUN-RECORD (started by a detached server)\n`);
    return Promise.resolve(2);
  }
  const log = (message: string) => process.stderr.write(`${new Date().toISOString()} WARN exec-server sentinel: ${message}\n`);
  /** pid → starttime of each child the server started and has not closed. */
  const children = new Map<number, string>();
  let bye = false;
  let rest = '';
  return new Promise((resolve) => {
    const line = (l: string) => {
      let m: RegExpExecArray | null;
      if ((m = /^\+(\d+) (\d+)$/.exec(l))) children.set(Number(m[1]), m[2]);
      else if ((m = /^-(\d+)$/.exec(l))) children.delete(Number(m[1]));
      else if (l === 'bye') bye = true;
    };
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      if (bye) return resolve(0);
      resolve(reap(serverPid, record, children, log));
    };
    process.stdin.on('data', (d: Buffer) => {
      rest += d.toString('latin1');
      const lines = rest.split('\n');
      rest = lines.pop()!;
      for (const l of lines) line(l);
      // A clean exit: nothing is left to watch.
      if (bye) end();
    });
    process.stdin.on('end', end);
    process.stdin.on('close', end);
    process.stdin.on('error', end);
  });
}

/** The server died: kill what it left, as its shutdown would have; remove its record. */
function reap(serverPid: number, record: string, children: Map<number, string>, log: (m: string) => void): number {
  let killed = 0;
  let reused = 0;
  for (const [pid, start] of children) {
    const now = procStartTime(pid);
    if (now === start) {
      // Still that child (alive or a zombie init has not reaped yet): the tree as shutdown kills it.
      killTree(pid, true);
      killed++;
    } else if (now === undefined) {
      // The leader is gone, its group may not be (a `sleep &` holding the output): the group only,
      // as shutdown does — a group id is not given to another process while the group exists.
      killGroup(pid, 'SIGKILL');
    } else {
      reused++; // another process has that pid now: not ours
    }
  }
  let removed = '';
  try {
    if (readRunRecord(record)?.pid === serverPid) {
      fs.rmSync(record, { force: true });
      removed = `; removed its run record ${record}`;
    }
  } catch {
    /* a record left behind is not trusted by the next --detach anyway */
  }
  log(`server pid ${serverPid} ended without a clean exit: killed ${killed} of ${children.size} process trees${reused ? ` (${reused} pids now another process's: left alone)` : ''}${removed}`);
  return 0;
}
