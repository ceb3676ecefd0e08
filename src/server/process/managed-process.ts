// One client-visible process: its OS child, one seq counter shared by output/exited/closed
// events, retained output for process/read, long-poll waiters and write-id de-duplication.
import { internalError, invalidParams } from '../../protocol/errors';
import type { NotificationMap, NotificationMethod, OutputStream, ProcessReadResult, WriteStatus } from '../../protocol/types';
import type { ChildHandle, ChildEvents, SpawnRequest } from './child';
import { killGroup, observedChildren } from './child';
import { DENIAL_SCAN_BYTES, sandboxDenied } from '../sandbox/denial';
import { spawnWithSetupRetry } from '../sandbox/setup-retry';
import { OutputBuffer } from './output-buffer';
import { trimFreeBlocks } from './read-blocks';
import { spawnPipe } from './spawn-pipe';
import { spawnPty } from './spawn-pty';

/** Write ids remembered per process (a retried write with a known id is not written again). */
export const WRITE_ID_MEMORY = 4096;
/** Stdin bytes a child may leave unread before further writes are refused (bounds memory). */
export const MAX_PENDING_STDIN_BYTES = 64 * 1024 * 1024;
/**
 * A sandboxed process's exit is reported once its output streams closed too (at most this
 * long after the exit), so `sandboxDenied` is decided on all of the output: a pipe's last
 * bytes ("Read-only file system") may be read after the exit is seen.
 */
export const SANDBOXED_EXIT_HOLD_MS = 250;

/** Largest per-process output window a client may grant (bytes); retention grows with it. */
export const MAX_OUTPUT_WINDOW = 32 * 1024 * 1024;
/**
 * Retention of a flow-controlled process: its unacknowledged output plus this much (eviction
 * drops whole chunks, and the oldest unacknowledged chunk may be partly acknowledged), so every
 * unacknowledged byte stays readable for a resuming client. Acked output shrinks it back.
 */
const WINDOW_RETENTION_SLACK = 1024 * 1024;

export interface ProcessHost {
  /** Delivers an event of this process to the session's current sink (if attached). */
  notify<M extends NotificationMethod>(method: M, params: NotificationMap[M]): void;
  /** Delivers one output chunk (the sink chooses the encoding: base64 JSON, a binary frame, the Buffer itself). */
  output(processId: string, seq: number, stream: OutputStream, data: Buffer): void;
  /** Called once the process is closed (exit + all output delivered). */
  closed(proc: ManagedProcess): void;
}

/** What is left of a closed process's child: its pid and kind; every operation is a no-op. */
class ClosedChild implements ChildHandle {
  readonly stdinOpen = false;
  readonly pendingStdinBytes = 0;
  constructor(
    readonly pid: number,
    readonly isPty: boolean,
  ) {}
  write(): void {}
  closeStdin(): void {}
  resize(): void {}
  interrupt(): void {}
  kill(): void {}
  pause(): void {}
  resume(): void {}
}

export class ManagedProcess {
  private child: ChildHandle | undefined;
  private nextSeq = 1;
  private readonly buffer: OutputBuffer;
  private readonly waiters = new Set<() => void>();
  /** Remembered write ids, oldest first (a Set iterates in insertion order). */
  private readonly writeIds = new Set<string>();
  /** Paused because the session's peer is congested (all processes of the session). */
  private congested = false;
  /** Is the OS child's output currently paused (congestion or a full window)? */
  private childPaused = false;
  /**
   * Flow control (extension): the client grants `window` bytes of unacknowledged output; while
   * `producedBytes - consumedBytes >= window` the child is not read (it blocks, nothing is lost).
   * Enforced only while the session's client opted in (a resumed old client is not throttled).
   */
  private window = 0;
  private flowEnforced = false;
  producedBytes = 0;
  consumedBytes = 0;
  exited = false;
  exitCode: number | null = null;
  /** Is the child confined by a managed sandbox (then `sandboxDenied` can be true)? */
  private sandboxed = false;
  /** The OS child is gone (may precede `exited` for a sandboxed process, see SANDBOXED_EXIT_HOLD_MS). */
  private leaderExited = false;
  /** `sandboxDenied` of process/exited and process/read: ../sandbox/denial.ts over the output retained at exit. */
  private denied = false;
  /** The engine stopped the sandbox for what it did (stopForViolation): the exit is sandboxDenied. */
  private violation: string | undefined;
  /** Adds engine text to the process's output (set once started). */
  private note: ((text: string) => void) | undefined;
  /** seq of the process/exited event (0 until exit): a reader before it has news. */
  private exitSeq = 0;
  closed = false;
  /** Set when the session gives up on this process (session ended / server shutdown). */
  disposed = false;
  private resolveClosed!: () => void;
  /** Settles once the child is gone (closed), or at disposal if it never started. */
  readonly whenClosed = new Promise<void>((r) => (this.resolveClosed = r));

  constructor(
    readonly id: string,
    private readonly host: ProcessHost,
    private readonly retainBytes: number,
  ) {
    this.buffer = new OutputBuffer(retainBytes);
  }

  /**
   * Grants the output window (before start). While it is set, retention follows the
   * unacknowledged output (see WINDOW_RETENTION_SLACK).
   */
  setWindow(bytes: number): void {
    this.window = bytes;
    this.applyPause();
  }

  /**
   * Retention cap for the current unacknowledged output (flow-controlled processes), never more
   * than the window: a window that is not enforced (the client did not opt in to flow control,
   * so it never acknowledges) would otherwise keep every byte the child wrote.
   */
  private fitRetention(): void {
    if (this.window <= 0) return;
    const unacked = Math.min(this.producedBytes - this.consumedBytes, this.window);
    this.buffer.capBytes = Math.max(this.retainBytes, unacked + WINDOW_RETENTION_SLACK);
  }
  get outputWindow(): number {
    return this.window;
  }

  /** Whether the window is enforced (the attached client opted in to flow control). */
  setFlowEnforced(on: boolean): void {
    this.flowEnforced = on;
    this.applyPause();
  }

  /** process/ack: the client consumed `consumedBytes` bytes of output in total (monotonic). */
  ack(consumedBytes: number): void {
    if (consumedBytes > this.producedBytes) {
      throw invalidParams(`consumedBytes ${consumedBytes} exceeds the ${this.producedBytes} bytes process ${this.id} has produced`);
    }
    if (consumedBytes <= this.consumedBytes) return; // a retried or reordered ack
    this.consumedBytes = consumedBytes;
    this.fitRetention();
    this.buffer.evictToCap();
    this.applyPause();
  }

  private get windowFull(): boolean {
    return this.flowEnforced && this.window > 0 && !this.disposed && this.producedBytes - this.consumedBytes >= this.window;
  }

  /** Pauses or resumes reading the child to match congestion and the window. */
  private applyPause(): void {
    const want = (this.congested || this.windowFull) && !this.disposed;
    if (want === this.childPaused) return;
    this.childPaused = want;
    if (!this.child) return; // start() applies it
    if (want) this.child.pause();
    else this.child.resume();
  }

  get starting(): boolean {
    return this.child === undefined && !this.disposed;
  }
  get running(): boolean {
    return this.child !== undefined && !this.exited && !this.leaderExited;
  }
  get isPty(): boolean {
    return this.child?.isPty ?? false;
  }

  /**
   * Spawns the child; rejects with the OS error on failure (the caller frees the id).
   * `sandboxed`: `req` already runs the command under a managed sandbox; `'denied'`: the sandbox
   * refused to run it at all (`req` only reports why), so a non-zero exit is always sandboxDenied.
   */
  async start(req: SpawnRequest, tty: boolean, sandboxed: boolean | 'denied' = false): Promise<void> {
    this.sandboxed = sandboxed !== false;
    const alwaysDenied = sandboxed === 'denied';
    let heldExit: { code: number; timer: ReturnType<typeof setTimeout> } | undefined;
    const reportExit = (exitCode: number) => {
      if (this.exited) return;
      this.exited = true;
      this.exitCode = exitCode;
      const seq = this.nextSeq++;
      this.exitSeq = seq;
      this.denied = this.violation !== undefined || (alwaysDenied ? exitCode !== 0 : sandboxDenied(this.sandboxed, exitCode, () => this.buffer.tail(DENIAL_SCAN_BYTES)));
      this.host.notify('process/exited', { processId: this.id, seq, exitCode, sandboxDenied: this.denied });
      this.wake();
    };
    const events: ChildEvents = {
      output: (stream, data) => {
        if (this.closed || this.disposed || data.length === 0) return;
        const seq = this.nextSeq++;
        this.producedBytes += data.length;
        this.fitRetention();
        this.buffer.push({ seq, stream, data });
        this.host.output(this.id, seq, stream, data);
        this.applyPause();
        this.wake();
      },
      exit: (exitCode) => {
        this.leaderExited = true;
        if (!this.sandboxed) return reportExit(exitCode);
        if (heldExit || this.exited) return;
        const timer = setTimeout(() => reportExit(exitCode), SANDBOXED_EXIT_HOLD_MS);
        timer.unref?.();
        heldExit = { code: exitCode, timer };
      },
      close: () => {
        if (this.closed) return;
        if (heldExit) {
          clearTimeout(heldExit.timer);
          reportExit(heldExit.code);
        }
        this.closed = true;
        if (this.child) {
          observedChildren()?.ended(this.child.pid);
          // Its OS handles (the ChildProcess, its pipes' sockets, a PTY) and their closures are not
          // needed once closed; held for the 30 s the process stays readable they cost ~9 KiB of
          // heap per process (a burst of short processes left tens of MiB).
          this.child = new ClosedChild(this.child.pid, this.child.isPty);
        }
        this.note = undefined;
        this.buffer.settle();
        // A stream that ends leaves the blocks its peer had in flight free: beyond a few, their pages go.
        trimFreeBlocks();
        const seq = this.nextSeq++;
        this.host.notify('process/closed', { processId: this.id, seq });
        this.wake();
        this.resolveClosed();
        this.host.closed(this);
      },
    };
    this.note = (text) => events.output(tty ? 'pty' : 'stderr', Buffer.from(text));
    const spawn = tty ? spawnPty : spawnPipe;
    const child = req.sandboxSetup ? await spawnWithSetupRetry(spawn, req, events, tty) : await spawn(req, events);
    this.child = this.closed ? new ClosedChild(child.pid, child.isPty) : child;
    if (!this.closed) observedChildren()?.started(child.pid);
    if (this.disposed || this.violation !== undefined) child.kill('SIGKILL'); // the session ended (or the sandbox was stopped) while we were spawning
    else if (this.childPaused) child.pause();
  }

  read(afterSeq: number | undefined, maxBytes: number | undefined): ProcessReadResult & { evictedThroughSeq: number; retainedFromByte: number } {
    const { chunks, complete } = this.buffer.read(afterSeq ?? 0, maxBytes);
    return {
      chunks: chunks.map((c) => ({ seq: c.seq, stream: c.stream, chunk: c.data.toString('base64') })),
      // As the reference: the next unread seq when the budget cut the answer short, else the
      // process's next seq (which also covers exited/closed events).
      nextSeq: complete ? this.nextSeq : chunks[chunks.length - 1].seq + 1,
      exited: this.exited,
      exitCode: this.exitCode,
      closed: this.closed,
      failure: null,
      sandboxDenied: this.denied,
      evictedThroughSeq: this.buffer.evictedThroughSeq,
      retainedFromByte: this.producedBytes - this.buffer.retainedBytes,
    };
  }

  /** Is there something a reader after `afterSeq` has not seen (output, or a final state)? */
  hasNews(afterSeq: number | undefined): boolean {
    // The exit itself is news to a reader that has not seen its seq (the reference answers at
    // once then), even while a leftover grandchild keeps the streams open (found by test/cli/main.faults).
    return this.closed || this.disposed || this.buffer.hasAfter(afterSeq ?? 0) || (this.exited && (afterSeq ?? 0) < this.exitSeq);
  }

  /** Resolves on the next event (output/exit/close/disposal), after `ms`, or when `cancel` aborts. */
  waitForEvent(ms: number, cancel?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (cancel?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        cancel?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
      cancel?.addEventListener('abort', done, { once: true });
    });
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  write(data: Buffer, writeId: string): WriteStatus {
    if (this.starting) return 'starting';
    if (this.writeIds.has(writeId)) return 'accepted'; // retried after a reconnect: already written
    const child = this.child;
    if (!child || this.exited || !child.stdinOpen) return 'stdinClosed';
    if (child.pendingStdinBytes + data.length > MAX_PENDING_STDIN_BYTES) {
      // Not remembered: the same writeId can be retried once the child reads.
      throw internalError(
        `stdin of process ${this.id} is not being read: ${child.pendingStdinBytes} bytes already pending (limit ${MAX_PENDING_STDIN_BYTES})`,
      );
    }
    this.writeIds.add(writeId);
    if (this.writeIds.size > WRITE_ID_MEMORY) this.writeIds.delete(this.writeIds.values().next().value!);
    if (data.length > 0) child.write(data);
    return 'accepted';
  }

  interrupt(): void {
    if (this.running) this.child!.interrupt();
  }

  /**
   * Kills the process group; true if it was running. The window is lifted: what the killed
   * child left in its pipe is delivered and the process closes even if its consumer stopped
   * acknowledging (a terminal the user closed).
   */
  terminate(): boolean {
    if (!this.running) {
      // The leader is gone but its output is not closed: what still holds it open (a background
      // job of its group, a double fork's orphan) is killed, so the process can close.
      if (this.child && !this.closed) {
        this.child.kill('SIGKILL');
        this.window = 0;
        this.applyPause();
      }
      return false;
    }
    this.child!.kill('SIGKILL');
    this.window = 0;
    this.applyPause();
    return true;
  }

  /**
   * The sandbox did what the engine does not let a sandbox do (../sandbox/plant-guard.ts): the
   * process is told why on its error output (so is the agent reading it), killed, and its exit
   * reported with sandboxDenied.
   */
  stopForViolation(why: string): void {
    if (this.violation !== undefined || this.closed) return;
    this.violation = why;
    this.note?.(`\nexec-server: ${why}\n`);
    if (this.running) this.terminate();
    else if (this.child && !this.closed) killGroup(this.child.pid, 'SIGKILL');
  }

  resize(rows: number, cols: number): void {
    this.child?.resize(rows, cols);
  }

  closeStdin(): void {
    this.child?.closeStdin();
  }

  /** The session's peer is congested / drained (independent of the window). */
  pauseOutput(): void {
    this.congested = true;
    this.applyPause();
  }
  resumeOutput(): void {
    this.congested = false;
    this.applyPause();
  }
  /** Is the child's output paused right now (tests, diagnostics)? */
  get outputPaused(): boolean {
    return this.childPaused;
  }

  /** The session is going away: kill the child and release every waiter. */
  dispose(): void {
    this.disposed = true;
    if (this.running) this.child!.kill('SIGKILL');
    else if (this.child && !this.closed) {
      // The leader exited but its group still holds the output streams (e.g. `sleep &` left
      // behind): kill the group only — never the bare pid, which may have been reused.
      killGroup(this.child.pid, 'SIGKILL');
    }
    if (!this.child || this.closed) this.resolveClosed();
    this.congested = false;
    this.applyPause(); // disposed: never paused again, so the killed child's streams drain and close
    // Nobody can read it any more; the killed child's last output is not retained either.
    this.buffer.clear();
    this.wake();
  }
}
