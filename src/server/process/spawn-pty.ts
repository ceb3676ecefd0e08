// PTY-backed child via node-pty. node-pty reports exec/chdir failures only as text on the
// terminal, so the executable and cwd are checked first to give the client a real error.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { IPty } from 'node-pty';
import type { ChildEvents, ChildHandle, SpawnRequest } from './child';
import { exitCodeOf, foregroundGroupOf, killGroup, killHolders, killTree, stdioMarkOf } from './child';
import { ptyCloser, trackMaster } from './pty-masters';

type NodePty = typeof import('node-pty');
let ptyModule: NodePty | undefined;
function loadPty(): NodePty {
  // Loaded lazily: a native module, only needed for tty processes.
  ptyModule ??= require('node-pty') as NodePty;
  return ptyModule;
}

function errno(code: string, syscall: string, p: string): NodeJS.ErrnoException {
  const e = new Error(`${code}: ${syscall} '${p}'`) as NodeJS.ErrnoException;
  e.code = code;
  e.syscall = syscall;
  e.path = p;
  return e;
}

function isExecutableFile(p: string): boolean {
  try {
    const st = fs.statSync(p);
    if (!st.isFile()) return false;
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** execvp-like lookup, in the child's PATH (or the libc default when unset). */
export function resolveExecutable(file: string, cwd: string, env: Record<string, string>): string {
  if (file.includes('/')) {
    const p = path.resolve(cwd, file);
    if (!fs.existsSync(p)) throw errno('ENOENT', 'spawn', file);
    if (!isExecutableFile(p)) throw errno('EACCES', 'spawn', file);
    return p;
  }
  const dirs = (env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':');
  for (const d of dirs) {
    const p = path.resolve(cwd, d || '.', file);
    if (isExecutableFile(p)) return p;
  }
  throw errno('ENOENT', 'spawn', file);
}

/** Output counts as "still draining" if some arrived within this window. */
const DRAIN_IDLE_MS = 50;
/** Upper bound on holding the terminal open after the child exited. */
const DRAIN_MAX_MS = 10_000;

/**
 * Keeps the tail of a PTY's output. Two things lose it otherwise:
 * - libuv treats POLLHUP after a partial read as EOF, but on Linux the kernel may still be
 *   moving the last bytes the child wrote into the master's read buffer: they are dropped.
 *   Holding our own descriptor of the slave side open means the master never sees the
 *   hang-up while the child exits; we release it once the output has gone quiet.
 * - node-pty destroys the socket 200 ms after the child exits, buffered data or not: that
 *   destroy (its only caller of `_socket.destroy()` on this path) is deferred while output
 *   is still flowing or reading is paused by backpressure, within DRAIN_MAX_MS of the last
 *   time reading was paused (a flow-control window may hold reading for longer than that:
 *   the client acknowledges eventually, or the session ends and disposal resumes reading).
 * The same drain starts as soon as node-pty learns of the exit (`onExit` of the returned
 * control, called from its native exit callback), not 200 ms later: with the slave held open
 * the socket never ends by itself, so node-pty's timer was what reported every PTY process's
 * exit, and a PTY `true` took over 200 ms from start to exit.
 */
function holdUntilDrained(pty: IPty, busy: () => boolean, paused: () => boolean): { release(): void; onExit(): void; slavePath?: string } {
  const internals = pty as unknown as { _pty?: string; _socket?: { destroy(...a: unknown[]): unknown } };
  let slaveFd: number | undefined;
  try {
    if (internals._pty) slaveFd = fs.openSync(internals._pty, fs.constants.O_RDWR | fs.constants.O_NOCTTY);
  } catch {
    slaveFd = undefined; // best effort: without it only the tail race remains
  }
  const release = () => {
    if (slaveFd !== undefined) fs.closeSync(slaveFd);
    slaveFd = undefined;
  };
  // The drain marker is written only where the slave side is held: without the hold the master
  // hangs up by itself once the child's side closes.
  const slavePath = slaveFd === undefined ? undefined : internals._pty;
  const socket = internals._socket;
  if (!socket || typeof socket.destroy !== 'function') return { release, onExit: () => {}, slavePath };
  const realDestroy = socket.destroy.bind(socket);
  let deadline: number | undefined;
  socket.destroy = (...args: unknown[]) => {
    // Once: the drain started at the exit, and node-pty's own timer calls this again later.
    if (deadline !== undefined) return socket;
    deadline = Date.now() + DRAIN_MAX_MS;
    const attempt = () => {
      if (paused()) deadline = Date.now() + DRAIN_MAX_MS;
      if (busy() && Date.now() < deadline!) {
        setTimeout(attempt, 25);
        return;
      }
      // One more pass through the poll phase so data already in the kernel is read first.
      setImmediate(() => {
        if (busy() && Date.now() < deadline!) return void setTimeout(attempt, 25);
        release();
        realDestroy(...args);
      });
    };
    attempt();
    return socket;
  };
  return { release, onExit: () => void socket.destroy(), slavePath };
}

/**
 * Writes a marker through the terminal's slave side once the child has exited, and returns what
 * was written of it (undefined when nothing could be at once: the terminal is stopped or full).
 * Everything written to the slave side reaches the master side in order, through the same
 * buffer, so when the marker is read, every byte the child wrote before its exit has been read:
 * the hold on the slave side can go without waiting out a quiet period. It is an OSC sequence
 * that terminals ignore, in upper case and without CR or LF, so no output setting of the
 * terminal (ONLCR, OLCUC, ...) changes it; it is taken out of the output before anyone sees it,
 * and its random part cannot be guessed by what runs in the terminal (which never reads the
 * terminal's output side).
 */
function writeDrainMarker(slavePath: string | undefined): Buffer | undefined {
  if (!slavePath) return undefined;
  const marker = Buffer.from(`\x1b]697;EXEC-SERVER-DRAIN-${randomBytes(12).toString('hex').toUpperCase()}\x07`, 'latin1');
  let fd: number | undefined;
  try {
    // A descriptor of its own, not the held one: that one blocks, and a write into a full
    // terminal must fail at once rather than stop the event loop.
    fd = fs.openSync(slavePath, fs.constants.O_WRONLY | fs.constants.O_NOCTTY | fs.constants.O_NONBLOCK);
    // A terminal with less room than the marker takes its first part: that part is what comes
    // through, and what is taken out again (it must never reach a client's terminal half-way).
    const written = fs.writeSync(fd, marker);
    return written > 0 ? marker.subarray(0, written) : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Takes a drain marker out of a terminal's output, across reads: `push` returns the output to
 * deliver (in order; the end of a read that may be the marker's first part is kept for the next
 * one) and whether the marker was read; `flush` gives back what was kept when no more comes.
 */
export class MarkerFilter {
  private carry: Buffer | undefined;
  found = false;

  constructor(private readonly marker: Buffer) {}

  push(data: Buffer): Buffer[] {
    if (this.found) return [data];
    if (this.carry) {
      data = Buffer.concat([this.carry, data]);
      this.carry = undefined;
    }
    const at = data.indexOf(this.marker);
    if (at >= 0) {
      this.found = true;
      return [data.subarray(0, at), data.subarray(at + this.marker.length)];
    }
    const keep = this.prefixAtEnd(data);
    if (keep > 0) this.carry = Buffer.from(data.subarray(data.length - keep));
    return [data.subarray(0, data.length - keep)];
  }

  flush(): Buffer | undefined {
    const c = this.carry;
    this.carry = undefined;
    return c;
  }

  /** How many bytes at the end of `buf` are a proper prefix of the marker. */
  private prefixAtEnd(buf: Buffer): number {
    for (let n = Math.min(this.marker.length - 1, buf.length); n > 0; n--) {
      if (buf.subarray(buf.length - n).equals(this.marker.subarray(0, n))) return n;
    }
    return 0;
  }
}

/**
 * Calls `onExit` when node-pty's native exit callback marks the child reaped (it sets
 * `_boundClose`, which it reads too), before node-pty waits for its socket to end.
 */
function onNativeExit(pty: IPty, onExit: () => void): void {
  const target = pty as unknown as { _boundClose?: boolean };
  if (typeof target._boundClose !== 'boolean') return; // another node-pty: its 200 ms timer stays the only trigger
  let value = target._boundClose;
  Object.defineProperty(target, '_boundClose', {
    configurable: true,
    enumerable: true,
    get: () => value,
    set: (v: boolean) => {
      const first = v && !value;
      value = v;
      if (first) onExit();
    },
  });
}

export async function spawnPty(req: SpawnRequest, events: ChildEvents): Promise<ChildHandle> {
  const st = await fs.promises.stat(req.cwd); // ENOENT/ENOTDIR surface as spawn errors
  if (!st.isDirectory()) throw errno('ENOTDIR', 'chdir', req.cwd);
  const resolved = resolveExecutable(req.argv[0], req.cwd, req.env);
  // Started behind a descriptor closer: it would inherit other terminals' masters (./pty-masters.ts).
  const { file, args } = req.closesDescriptors ? { file: resolved, args: req.argv.slice(1) } : ptyCloser(resolved, req.argv.slice(1));
  const pty: IPty = loadPty().spawn(file, args, {
    name: req.env.TERM || 'xterm-256color',
    cols: req.cols,
    rows: req.rows,
    cwd: req.cwd,
    env: req.env,
    encoding: null,
  } as Parameters<NodePty['spawn']>[2]);
  trackMaster((pty as unknown as { _fd?: number })._fd);
  let exited = false;
  let stdinOpen = true;
  let paused = false;
  let lastDataAt = Date.now();
  const deliver = (data: Buffer) => {
    if (data.length === 0) return;
    lastDataAt = Date.now();
    events.output('pty', data);
  };
  // Output while the drain marker written at the exit (writeDrainMarker) is on its way.
  let filter: MarkerFilter | undefined;
  pty.onData((d: string | Buffer) => {
    const data = typeof d === 'string' ? Buffer.from(d) : d;
    if (!filter || filter.found) return deliver(data);
    const [before, after] = filter.push(data);
    deliver(before);
    if (!filter.found) return;
    // All the child wrote is read: only output after the marker (from others that still hold the
    // terminal) keeps the drain waiting, and without other holders the terminal ends at once.
    lastDataAt = 0;
    if (after) deliver(after);
    drain.release();
  });
  const drain = holdUntilDrained(
    pty,
    () => paused || Date.now() - lastDataAt < DRAIN_IDLE_MS,
    () => paused,
  );
  onNativeExit(pty, () => {
    const marker = writeDrainMarker(drain.slavePath);
    if (marker) return void (filter = new MarkerFilter(marker));
    // No marker: the exit counts as output for the drain, since what the child wrote just before
    // it may still be on its way through the terminal (the kernel moves it to the master side
    // asynchronously), so the terminal is read for at least DRAIN_IDLE_MS after the exit as well.
    lastDataAt = Date.now();
    drain.onExit();
  });
  // node-pty emits exit only after the terminal's read side reached EOF: all output is in.
  pty.onExit(({ exitCode, signal }) => {
    // Bytes held back as a marker's possible first part, and the marker never came: output.
    const kept = filter?.flush();
    if (kept) deliver(kept);
    drain.release();
    exited = true;
    stdinOpen = false;
    events.exit(exitCodeOf(exitCode, signal ?? null));
    events.close();
  });
  const pid = pty.pid;
  // The terminal's slave: whatever holds it later got it from this child (node-pty names it at spawn).
  const ptsName = (pty as unknown as { ptsName?: string }).ptsName;
  const mark = ptsName ? stdioMarkOf(pid, ptsName) : undefined;
  // node-pty reaps the child before it reports the exit (which we hold back while output
  // drains): once reaped, `pid` may be reused, so nothing is signalled any more. node-pty
  // marks that moment with `_boundClose` (set by its native exit callback).
  const stillOurs = () => !exited && !(pty as unknown as { _boundClose?: boolean })._boundClose;
  return {
    pid,
    isPty: true,
    get stdinOpen() {
      return stdinOpen && !exited;
    },
    pendingStdinBytes: 0, // node-pty does not expose its write queue
    write(data) {
      pty.write(data);
    },
    closeStdin() {
      // A terminal has no separate stdin to close: send EOF (^D) like a user would.
      pty.write('\x04');
    },
    resize(rows, cols) {
      if (!exited) pty.resize(cols, rows);
    },
    interrupt() {
      if (!stillOurs()) return;
      // What Ctrl-C does: SIGINT to the terminal's foreground process group.
      killGroup(foregroundGroupOf(pid) ?? pid, 'SIGINT', true);
    },
    kill(signal) {
      if (!stillOurs()) {
        // The leader was reaped, but its exit waits for the terminal's EOF, which whatever still
        // holds the terminal keeps from coming.
        if (signal === 'SIGKILL' && !exited && mark) killHolders(mark);
        return;
      }
      const fg = foregroundGroupOf(pid); // read before the leader dies
      // Bare-pid fallback: right after spawn the child may not have made its own group yet.
      if (signal === 'SIGKILL') killTree(pid, true, mark);
      else killGroup(pid, signal, true);
      if (fg !== undefined && fg !== pid) killGroup(fg, signal);
    },
    pause() {
      paused = true;
      pty.pause();
    },
    resume() {
      paused = false;
      pty.resume();
    },
  };
}
