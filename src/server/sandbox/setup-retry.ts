// A managed sandbox whose setup fails before its command runs is started again, by the engine.
//
// bubblewrap gives up its whole setup when one mount fails, and a read-only carve-out
// (./carve-outs.ts) is a path someone else may remove while bwrap mounts it: a `.git` of another
// program's temp dir (the sandbox writes /tmp; test suites make and remove repositories there all
// the time) vanishing between bwrap's look and its mount ends bwrap with "Can't bind mount …:
// Unable to mount source on destination" or "Unable to remount destination …", exit 1, before
// the command ran (measured: 1 start in 40 while another process re-creates 30 repositories in
// /tmp in a loop; in three CI-like runs an agent got that one line and the exit).
//
// The sandbox's first program says it is set up before anything of the command runs
// (./bwrap.ts READY_PREFIX): on a pipe of its own (READY_FD) for a pipe child, on the terminal for
// a PTY, where the line is taken out of the one stream. Until then stderr (the terminal) is held
// back: only bubblewrap writes there before it, and what it said (a warning) is passed on then. A
// bubblewrap that ended with exit 1 before that ran nothing, and is started again (up to
// SETUP_TRIES times; a carve-out that is gone by then is skipped: --ro-bind-try), its message kept
// back; the last failure is said in one line. Anything else before it (a kill, another exit code)
// is reported as it is, never retried.
//
// This was a host-side wrapper (setpriv --pdeathsig + bash around bwrap, 2026-12-06); here no
// process is added: bubblewrap is the server's own child again (its --die-with-parent ties the
// sandbox to the server), and a sandboxed start costs what it did before the retry (CHANGELOG).
// What the wrapper kept by being the only parent, this keeps by being the only handle:
// - The command runs at most once: a try is given up only when its bubblewrap ended before the
//   line came and wrote nothing on stdout (only the command writes there).
// - Stdin: the client's writes (and its end of input) are held until the sandbox is set up, then
//   written to the child that runs the command, so none goes to a try that is given up.
// - Output is never lost or duplicated: a try given up wrote only bubblewrap's lines; the
//   command's output streams straight through once the line came. The exit is reported when the
//   line came (or at the close, for a try that ended before the line was read).
// - A try is given up only after its close (its output read, nothing of it left holding it), and
//   the next starts with the terminal size the client last asked for, paused if reading is.
// - Kill: SIGKILL ends the retries too (one asked for between two tries kills the next at once).
import type { OutputStream } from '../../protocol/types';
import type { ChildEvents, ChildHandle, SpawnRequest } from '../process/child';
import { observedChildren } from '../process/child';
import { READY_FD, SANDBOX_READY, SETUP_TRIES } from './bwrap';

type Spawn = (req: SpawnRequest, events: ChildEvents) => Promise<ChildHandle>;

const READY = Buffer.from(SANDBOX_READY, 'latin1');
const LF = 0x0a;
const CR = 0x0d;

/** Tries started again in this process, over all sandboxes (diagnostics; tests see the race happen). */
export const setupRetries = { count: 0 };

/**
 * Where the ready line is in a terminal's output: [start, end) of the line with its end of line
 * (`\r\n`, or `\n` without onlcr), at the start of a line; undefined while it is not (yet) all there.
 */
function findReady(buf: Buffer): [number, number] | undefined {
  for (let at = buf.indexOf(READY); at >= 0; at = buf.indexOf(READY, at + 1)) {
    if (at > 0 && buf[at - 1] !== LF) continue;
    let end = at + READY.length;
    if (buf[end] === CR) end++;
    if (buf[end] === LF) return [at, end + 1];
  }
  return undefined;
}

/**
 * Spawns `req` (a managed sandbox, SpawnRequest.sandboxSetup) with `spawn` (pipes or PTY) and
 * starts it again while its setup fails before the command runs; the handle stands for whichever
 * try runs. Rejects as `spawn` does when the first try cannot be spawned.
 */
export async function spawnWithSetupRetry(spawn: Spawn, req: SpawnRequest, events: ChildEvents, tty: boolean): Promise<ChildHandle> {
  const r = new SetupRetry(spawn, req, events, tty);
  r.cur = await spawn(r.tryRequest(), r.tryEvents());
  return r;
}

class SetupRetry implements ChildHandle {
  cur!: ChildHandle;
  private tries = 1;
  /** The sandbox is set up: the command runs (or ran) in this try, which is never started again. */
  private ready = false;
  /** SIGKILL was asked for: no further try. */
  private killed = false;
  /** Between a try's close and the next try's spawn: nothing to signal. */
  private between = false;
  /** stderr (a PTY's one stream) before the sandbox is set up: bubblewrap's own lines. */
  private held: Buffer[] = [];
  /** This try's exit, while the sandbox is not known to be set up. */
  private exitCode: number | undefined;
  private stdin: Buffer[] = [];
  private stdinBytes = 0;
  private stdinEnd = false;
  private paused = false;
  private rows: number;
  private cols: number;
  private readonly heldStream: OutputStream;

  constructor(
    private readonly spawn: Spawn,
    private readonly req: SpawnRequest,
    private readonly events: ChildEvents,
    readonly isPty: boolean,
  ) {
    this.rows = req.rows;
    this.cols = req.cols;
    this.heldStream = isPty ? 'pty' : 'stderr';
  }

  /** The next try: a pipe child's first program says it is set up on a pipe of its own. */
  tryRequest(): SpawnRequest {
    const at = this.req.sandboxSetup!.readyFdArg;
    if (this.isPty) return { ...this.req, rows: this.rows, cols: this.cols };
    const argv = [...this.req.argv];
    argv[at] = String(READY_FD);
    return { ...this.req, argv, readyPipe: { fd: READY_FD, onData: () => this.setUp() } };
  }

  /** One try's events (every try's come in order: the next is spawned after this one's close). */
  tryEvents(): ChildEvents {
    return {
      output: (stream, data) => this.output(stream, data),
      exit: (code) => {
        if (this.ready) this.events.exit(code);
        else this.exitCode = code;
      },
      close: () => this.closed(),
    };
  }

  private output(stream: OutputStream, data: Buffer): void {
    if (this.ready) return this.events.output(stream, data);
    if (stream !== this.heldStream) {
      // stdout, read before the ready pipe: only the command writes there, so it runs.
      this.setUp();
      return this.events.output(stream, data);
    }
    this.held.push(data);
    if (!this.isPty) return;
    const buf = Buffer.concat(this.held);
    const at = findReady(buf);
    this.held = [buf];
    if (!at) return;
    // What bubblewrap said before the line, then the command's output after it.
    this.held = at[0] > 0 ? [buf.subarray(0, at[0])] : [];
    this.setUp();
    if (at[1] < buf.length) this.events.output(stream, buf.subarray(at[1]));
  }

  /** The sandbox is set up: what bubblewrap said is passed on, the command's stdin and exit too. */
  private setUp(): void {
    if (this.ready) return;
    this.ready = true;
    if (this.held.length > 0) this.events.output(this.heldStream, Buffer.concat(this.held));
    this.held = [];
    for (const d of this.stdin) this.cur.write(d);
    this.stdin = [];
    this.stdinBytes = 0;
    if (this.stdinEnd) this.cur.closeStdin();
    if (this.exitCode !== undefined) this.events.exit(this.exitCode);
  }

  private closed(): void {
    if (this.ready) return this.events.close();
    const code = this.exitCode ?? 1;
    const said = Buffer.concat(this.held).toString('utf8');
    if (code === 1 && !this.killed && this.tries < SETUP_TRIES) {
      // bubblewrap's own setup failed (it exits 1 then): nothing ran; start it again.
      this.held = [];
      this.exitCode = undefined;
      this.between = true;
      observedChildren()?.ended(this.cur.pid);
      this.tries++;
      setupRetries.count++;
      this.spawn(this.tryRequest(), this.tryEvents()).then(
        (c) => {
          this.cur = c;
          this.between = false;
          observedChildren()?.started(c.pid);
          if (this.killed) c.kill('SIGKILL');
          else if (this.paused) c.pause();
        },
        (e: Error) => {
          this.between = false;
          this.tries--;
          this.fail(1, `${said.trim() ? `${said.trim()}; ` : ''}then bubblewrap could not be started again: ${e.message}`);
        },
      );
      return;
    }
    if (this.killed) {
      // Stopped before its command ran: what bubblewrap said, and the kill's exit.
      if (said) this.events.output(this.heldStream, Buffer.from(said));
      this.events.exit(code);
      this.events.close();
      return;
    }
    this.fail(code, said || `exit status ${code}`);
  }

  /** The last try ended before its command ran: one line says so, and bubblewrap's exit. */
  private fail(code: number, said: string): void {
    const eol = this.isPty ? '\r\n' : '\n';
    const last = said.replace(/\r?\n$/, '').replace(/\r?\n/g, '; ');
    const line = `exec-server: the sandbox could not be set up, so the command did not run (bubblewrap failed ${this.tries} times; the last time: ${last})${eol}`;
    this.events.output(this.heldStream, Buffer.from(line));
    this.events.exit(code);
    this.events.close();
  }

  get pid(): number {
    return this.cur.pid;
  }
  get stdinOpen(): boolean {
    if (this.ready) return this.cur.stdinOpen;
    return (this.isPty || this.req.pipeStdin) && !this.stdinEnd;
  }
  get pendingStdinBytes(): number {
    return this.ready ? this.cur.pendingStdinBytes : this.stdinBytes;
  }
  write(data: Buffer): void {
    if (this.ready) return this.cur.write(data);
    this.stdin.push(data);
    this.stdinBytes += data.length;
  }
  closeStdin(): void {
    if (this.ready) return this.cur.closeStdin();
    this.stdinEnd = true;
  }
  resize(rows: number, cols: number): void {
    if (!this.isPty) return this.cur.resize(rows, cols); // throws, as for any pipe child
    this.rows = rows;
    this.cols = cols;
    if (!this.between) this.cur.resize(rows, cols);
  }
  interrupt(): void {
    // Before the command runs bubblewrap ignores it (env --ignore-signal): as for the wrapper.
    if (!this.between) this.cur.interrupt();
  }
  kill(signal: NodeJS.Signals): void {
    if (signal === 'SIGKILL') this.killed = true;
    if (!this.between) this.cur.kill(signal);
  }
  pause(): void {
    this.paused = true;
    if (!this.between) this.cur.pause();
  }
  resume(): void {
    this.paused = false;
    if (!this.between) this.cur.resume();
  }
}
