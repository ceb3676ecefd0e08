// A Pseudoterminal over an exec-server process, without importing `vscode`: the shape
// (onDidWrite / onDidClose / open / close / handleInput / setDimensions) matches
// vscode.Pseudoterminal structurally, so the extension passes it to createTerminal as is.
//  - 'pty' mode: a PTY process (shell). Input is written raw, resize follows the terminal,
//    the terminal closes with the exit code.
//  - 'pipe' mode: a non-PTY process (Run Command). LF is shown as CRLF, input is echoed,
//    Ctrl+C sends process/signal interrupt, and the terminal stays open after exit showing
//    the exit code until a key is pressed.
// Surviving the connection (docs/reliability.md): connectionLost()/connectionRestored() print what
// happened in the terminal itself while the client resumes its session; a process that is gone
// (session lost, reconnect given up, ended while the window reloaded) is offered again with
// `restart` (Enter starts the same command, any other key closes). close() can wait before it
// terminates (`terminateDelayMs`): a window reload closes every terminal, and detach() — called
// when the extension host is going away — keeps the process running for the reloaded window.
// Flow control as VS Code's own terminal does it (its FlowControlConstants: 100 000 characters
// unacknowledged at most, acknowledged once below 5 000): the process gets a window of
// TERMINAL_HIGH_WATERMARK bytes, and output counts as consumed only once the coalescer handed
// its text to the terminal and at most TERMINAL_LOW_WATERMARK characters are still queued. The
// server stops reading the child while the window is full, so the extension host holds at most
// about a window of text per terminal whatever the child writes, and a flooding terminal only
// throttles its own process. The window is twice VS Code's 100 000 (whose pty host is next to
// the renderer): the renderer pacing (output-coalescer.ts) already holds up to 100 000
// unconfirmed characters, and with only that much granted, every ack's round trip to a remote
// server left the terminal without text to write.
import type { ProcessHandle, StartProcessOptions } from '../../client/api';
import { DisposableStore, Emitter, type Disposable } from '../../rpc/event';
import { lfToCrlf, OutputCoalescer, type CoalescerOptions } from './output-coalescer';
import { lossMessage } from './survival';

export interface TerminalDimensions {
  rows: number;
  columns: number;
}

export interface ExecTerminalResult {
  /** Undefined if the process never started or was lost. */
  exitCode: number | undefined;
  error?: string;
}

/**
 * Window granted to a terminal's process (bytes): twice what the renderer pacing holds unconfirmed
 * (VS Code's HighWatermarkChars), so the server is still sending while the terminal works through
 * its queue and an ack's round trip to a remote server never leaves the terminal idle
 * (docs/performance.md, "What the numbers depend on", terminals).
 */
export const TERMINAL_HIGH_WATERMARK = 200_000;
/** Consumed output is acknowledged once at most this many characters wait to be written (LowWatermarkChars). */
export const TERMINAL_LOW_WATERMARK = 5_000;

/** What a terminal asks of the process it starts: a window and acks when the terminal took the text. */
export type TerminalFlow = Pick<StartProcessOptions, 'outputWindow' | 'manualAck'>;

export interface ExecTerminalOptions {
  /** Starts the process with `flow` in its options; `dims` is the size known when the terminal opened. */
  start(dims: TerminalDimensions | undefined, flow: TerminalFlow): Promise<ProcessHandle>;
  mode: 'pty' | 'pipe';
  /** Closing the terminal terminates the process (default true; false for processes owned by an agent). */
  terminateOnClose?: boolean;
  /** Keep the terminal open after exit (default: true for pipe, false for pty). */
  keepOpen?: boolean;
  coalescer?: CoalescerOptions;
  /** Window in bytes (default TERMINAL_HIGH_WATERMARK) and ack threshold in queued characters (default TERMINAL_LOW_WATERMARK). */
  highWatermark?: number;
  lowWatermark?: number;
  onStarted?(handle: ProcessHandle): void;
  /**
   * Starts the same command again; when set, a process that was lost (error), that could not
   * be started or re-attached, or that had already ended when it was attached, is offered again.
   */
  restart?(dims: TerminalDimensions | undefined, flow: TerminalFlow): Promise<ProcessHandle>;
  /** The user closed the terminal (not a detach): the process is about to be terminated. */
  onUserClose?(): void;
  /** close() terminates after this many ms unless detach() comes first (default 0: at once). */
  terminateDelayMs?: number;
  log?(message: string): void;
}

const RED = '\x1b[31m';
const YELLOW = '\x1b[33m';
const GREEN = '\x1b[32m';
const DIM = '\x1b[2m';
const RESET = '\x1b[0m';

export class ExecTerminal implements Disposable {
  private readonly writeEmitter = new Emitter<string>();
  private readonly closeEmitter = new Emitter<number | void>();
  readonly onDidWrite = this.writeEmitter.event;
  readonly onDidClose = this.closeEmitter.event;

  private readonly coalescer: OutputCoalescer;
  private handle: ProcessHandle | undefined;
  private dims: TerminalDimensions | undefined;
  private pendingInput = '';
  private writing = false;
  private finished = false;
  private startFailed = false;
  /** After the end: the terminal waits for a key to close. */
  private keptOpen = false;
  private closedByUser = false;
  private endedBeforeAttach = false;
  private terminalClosed = false;
  /** Bytes written to the terminal and not yet acknowledged (held while the queue is above the low watermark). */
  private unacked = 0;
  private readonly subs = new DisposableStore();
  /** "connection lost" was shown and "reconnected" not yet. */
  private lostShown = false;
  /** Waiting for Enter (restart) or another key (close) after the process was lost. */
  private offeringRestart = false;
  private restarting = false;
  private detached = false;
  private closeTimer: ReturnType<typeof setTimeout> | undefined;
  private resolveResult!: (r: ExecTerminalResult) => void;
  /** The connection's inbound data is held for this terminal (see holdIncoming). */
  private holding = false;
  /** Settles when the process is over and all its output was written to the terminal. */
  readonly result: Promise<ExecTerminalResult>;

  constructor(private readonly options: ExecTerminalOptions) {
    this.result = new Promise((r) => (this.resolveResult = r));
    const transform = options.mode === 'pipe' ? lfToCrlf : undefined;
    const onFlushed = (bytes: number) => this.flushed(bytes);
    this.coalescer = new OutputCoalescer((t) => this.writeEmitter.fire(t), { transform, ...options.coalescer, onFlushed }, (congested) => {
      options.log?.(congested ? 'terminal output is arriving faster than the terminal draws it; buffering' : 'terminal output caught up');
      this.holdIncoming(congested);
    });
  }

  get processHandle(): ProcessHandle | undefined {
    return this.handle;
  }
  get isRunning(): boolean {
    return !!this.handle && !this.finished;
  }

  open(initialDimensions: TerminalDimensions | undefined): void {
    this.dims = initialDimensions;
    this.launch(this.options.start);
  }

  private launch(start: ExecTerminalOptions['start']): void {
    const flow: TerminalFlow = { outputWindow: this.options.highWatermark ?? TERMINAL_HIGH_WATERMARK, manualAck: true };
    start(this.dims, flow).then(
      (h) => this.attach(h),
      (e) => {
        const msg = e instanceof Error ? e.message : String(e);
        this.startFailed = true;
        this.coalescer.pushText(`${RED}Exec Server: could not start the process: ${msg}${RESET}\r\n`);
        void this.finish({ exitCode: undefined, error: msg }, true);
      },
    );
  }

  /**
   * A process the server cannot pause for us (no flow control: the reference server, old
   * servers) floods faster than the terminal draws: hold the connection's inbound data until the
   * queue is back below half its high water, so the extension host's memory stays bounded and
   * the server's socket pushes back instead. Flow-controlled processes never need it.
   */
  private holdIncoming(held: boolean): void {
    const h = this.handle;
    if (held === this.holding || !h?.holdIncoming) return;
    if (held && (h.outputWindow ?? 0) > 0) return;
    this.holding = held;
    h.holdIncoming(held);
  }

  /** Enter after a lost process: the same command again, in this terminal. */
  private restart(): void {
    const again = this.options.restart;
    if (!again || this.restarting || this.terminalClosed) return;
    this.restarting = true;
    this.offeringRestart = false;
    this.holdIncoming(false);
    this.subs.dispose();
    this.handle = undefined;
    this.finished = false;
    this.startFailed = false;
    this.keptOpen = false;
    this.lostShown = false;
    this.unacked = 0;
    this.pendingInput = '';
    this.coalescer.pushText(`${DIM}[Exec Server: starting it again…]${RESET}\r\n`);
    this.restarting = false;
    this.launch(again);
  }

  /** The terminal was closed (by the user, or by a window reload): stop the process it shows, unless detach() comes first. */
  close(): void {
    this.terminalClosed = true;
    this.closedByUser = true;
    this.holdIncoming(false);
    this.coalescer.dispose();
    const delay = this.options.terminateDelayMs ?? 0;
    if (delay > 0 && !this.detached) this.closeTimer = setTimeout(() => this.closeNow(), delay);
    else this.closeNow();
  }

  private closeNow(): void {
    this.closeTimer = undefined;
    if (this.detached) return;
    this.options.onUserClose?.();
    if (this.handle && !this.finished && this.options.terminateOnClose !== false) void this.handle.terminate().catch(() => undefined);
  }

  /** The extension host is going away (window reload): leave the process running, whatever close() asked. */
  detach(): void {
    this.detached = true;
    if (this.closeTimer) clearTimeout(this.closeTimer);
    this.closeTimer = undefined;
  }

  /** The client lost its connection and is resuming the session: say so (once) while the process runs. */
  connectionLost(): void {
    if (this.lostShown || !this.handle || this.finished || this.terminalClosed) return;
    this.lostShown = true;
    this.coalescer.pushText(`\r\n${YELLOW}[Exec Server: connection lost — reconnecting…]${RESET}\r\n`);
  }

  /** The session was resumed: the process kept running and its missed output was caught up. */
  connectionRestored(): void {
    if (!this.lostShown) return;
    this.lostShown = false;
    if (!this.handle || this.finished || this.terminalClosed) return;
    this.coalescer.pushText(`${GREEN}[Exec Server: reconnected]${RESET}\r\n`);
  }

  handleInput(data: string): void {
    // The renderer's answers to the coalescer's pacing probes are not input (output-coalescer.ts).
    data = this.coalescer.takeRendererReplies(data);
    if (!data) return;
    if (this.offeringRestart) {
      if (data.includes('\r')) this.restart();
      else if (!this.terminalClosed) this.fireClose(undefined);
      return;
    }
    if (this.finished) {
      // Kept open after exit: any key closes it.
      if (this.keptOpen && !this.terminalClosed) this.fireClose(undefined);
      return;
    }
    if (this.options.mode === 'pipe') {
      if (data.includes('\x03')) {
        void this.handle?.interrupt().catch((e) => this.options.log?.(`interrupt failed: ${e}`));
        data = data.replace(/\x03/g, '');
        if (!data) return;
      }
      this.writeEmitter.fire(data.replace(/\r/g, '\r\n')); // echo: a pipe has no line discipline
      data = data.replace(/\r/g, '\n');
    }
    this.pendingInput += data;
    void this.pumpInput();
  }

  setDimensions(dims: TerminalDimensions): void {
    this.dims = dims;
    if (this.handle && !this.finished && this.options.mode === 'pty') {
      // Servers without process/resize answer false: nothing to do.
      void this.handle.resize(dims.rows, dims.columns).catch((e) => this.options.log?.(`resize failed: ${e}`));
    }
  }

  dispose(): void {
    this.holdIncoming(false);
    this.coalescer.dispose();
    this.subs.dispose();
    this.writeEmitter.dispose();
    this.closeEmitter.dispose();
  }

  private get keepOpen(): boolean {
    return this.options.keepOpen ?? this.options.mode === 'pipe';
  }

  private attach(h: ProcessHandle): void {
    this.handle = h;
    // Already over when attached (it ended while the window reloaded): offer it again.
    this.endedBeforeAttach = h.exitCode !== undefined;
    this.options.onStarted?.(h);
    if (this.closedByUser && this.options.terminateOnClose !== false) void h.terminate().catch(() => undefined);
    this.subs.add(h.onOutput((e) => this.coalescer.push(e.data)));
    // A size change between open() and the start answer.
    if (this.options.mode === 'pty' && this.dims) void h.resize(this.dims.rows, this.dims.columns).catch(() => undefined);
    let closeError: string | undefined;
    this.subs.add(h.onClose((e) => (closeError = e.error)));
    h.closed.then(
      () => this.finish({ exitCode: h.exitCode, error: closeError }, false),
      (e) => this.finish({ exitCode: h.exitCode, error: String(e) }, false),
    );
    void this.pumpInput();
  }

  /** The coalescer wrote the text of `bytes` output bytes: acknowledge once the queue is low. */
  private flushed(bytes: number): void {
    this.unacked += bytes;
    if (this.coalescer.pendingChars > (this.options.lowWatermark ?? TERMINAL_LOW_WATERMARK)) return;
    const n = this.unacked;
    this.unacked = 0;
    this.handle?.acknowledge?.(n);
  }

  /** Output bytes the terminal holds but has not written yet (tests, diagnostics). */
  get pendingChars(): number {
    return this.coalescer.pendingChars;
  }

  private async pumpInput(): Promise<void> {
    if (this.writing || !this.handle) return;
    this.writing = true;
    try {
      // One write in flight at a time keeps keystrokes in order; what arrives meanwhile is batched.
      while (this.pendingInput && !this.finished) {
        const chunk = this.pendingInput;
        this.pendingInput = '';
        const status = await this.handle.write(chunk);
        if (status !== 'accepted') this.options.log?.(`process/write: ${status}`);
      }
    } catch (e) {
      this.options.log?.(`process/write failed: ${e}`);
    } finally {
      this.writing = false;
    }
  }

  private async finish(r: ExecTerminalResult, startFailed: boolean): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    this.lostShown = false;
    if (r.error && !startFailed) this.coalescer.pushText(`\r\n${RED}Exec Server: ${lossMessage(r.error)}${RESET}\r\n`);
    if (this.options.restart && !this.closedByUser && (r.error !== undefined || startFailed || this.endedBeforeAttach)) {
      const what = r.error !== undefined || startFailed ? 'the process is gone' : r.exitCode === undefined ? 'the process ended' : `the process exited with code ${r.exitCode}`;
      this.coalescer.pushText(`\r\n${DIM}[Exec Server: ${what} — press Enter to start it again, any other key to close]${RESET}\r\n`);
      // drained(), not end(): the terminal goes on writing if the process is started again.
      await this.coalescer.drained();
      this.offeringRestart = true;
      this.resolveResult(r);
      return;
    }
    if (this.keepOpen && !this.closedByUser) {
      const what = r.exitCode === undefined ? 'process ended' : `process exited with code ${r.exitCode}`;
      this.coalescer.pushText(`\r\n${DIM}[${what} — press any key to close]${RESET}\r\n`);
    }
    await this.coalescer.end();
    this.keptOpen = this.keepOpen || startFailed || !!r.error;
    this.resolveResult(r);
    // A process lost with an error keeps its terminal so the message stays readable.
    if (!this.keepOpen && !startFailed && !r.error) this.fireClose(r.exitCode);
  }

  private fireClose(code: number | undefined): void {
    if (this.terminalClosed) return;
    this.terminalClosed = true;
    this.closeEmitter.fire(code);
  }
}
