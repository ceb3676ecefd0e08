// A Pseudoterminal over an exec-server process, without importing `vscode`: the shape
// (onDidWrite / onDidClose / open / close / handleInput / setDimensions) matches
// vscode.Pseudoterminal structurally, so the extension passes it to createTerminal as is.
//  - 'pty' mode: a PTY process (shell). Input is written raw, resize follows the terminal,
//    the terminal closes with the exit code.
//  - 'pipe' mode: a non-PTY process (Run Command). LF is shown as CRLF, input is echoed,
//    Ctrl+C sends process/signal interrupt, and the terminal stays open after exit showing
//    the exit code until a key is pressed.
// Flow control as VS Code's own terminal does it (its FlowControlConstants: 100 000 characters
// unacknowledged at most, acknowledged once below 5 000): the process gets a window of
// TERMINAL_HIGH_WATERMARK bytes, and output counts as consumed only once the coalescer handed
// its text to the terminal and at most TERMINAL_LOW_WATERMARK characters are still queued. The
// server stops reading the child while the window is full, so the extension host holds at most
// about a window of text per terminal whatever the child writes, and a flooding terminal only
// throttles its own process.
import type { ProcessHandle, StartProcessOptions } from '../../client/api';
import { Emitter, type Disposable } from '../../rpc/event';
import { lfToCrlf, OutputCoalescer, type CoalescerOptions } from './output-coalescer';

export interface TerminalDimensions {
  rows: number;
  columns: number;
}

export interface ExecTerminalResult {
  /** Undefined if the process never started or was lost. */
  exitCode: number | undefined;
  error?: string;
}

/** Window granted to a terminal's process (bytes; VS Code's HighWatermarkChars). */
export const TERMINAL_HIGH_WATERMARK = 100_000;
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
  log?(message: string): void;
}

const RED = '\x1b[31m';
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
  private terminalClosed = false;
  /** Bytes written to the terminal and not yet acknowledged (held while the queue is above the low watermark). */
  private unacked = 0;
  private readonly subs: Disposable[] = [];
  private resolveResult!: (r: ExecTerminalResult) => void;
  /** Settles when the process is over and all its output was written to the terminal. */
  readonly result: Promise<ExecTerminalResult>;

  constructor(private readonly options: ExecTerminalOptions) {
    this.result = new Promise((r) => (this.resolveResult = r));
    const transform = options.mode === 'pipe' ? lfToCrlf : undefined;
    const onFlushed = (bytes: number) => this.flushed(bytes);
    this.coalescer = new OutputCoalescer((t) => this.writeEmitter.fire(t), { transform, ...options.coalescer, onFlushed }, (congested) =>
      options.log?.(congested ? 'terminal output is arriving faster than the terminal draws it; buffering' : 'terminal output caught up'),
    );
  }

  get processHandle(): ProcessHandle | undefined {
    return this.handle;
  }
  get isRunning(): boolean {
    return !!this.handle && !this.finished;
  }

  open(initialDimensions: TerminalDimensions | undefined): void {
    this.dims = initialDimensions;
    const flow: TerminalFlow = { outputWindow: this.options.highWatermark ?? TERMINAL_HIGH_WATERMARK, manualAck: true };
    this.options.start(initialDimensions, flow).then(
      (h) => this.attach(h),
      (e) => {
        const msg = e instanceof Error ? e.message : String(e);
        this.startFailed = true;
        this.coalescer.pushText(`${RED}Exec Server: could not start the process: ${msg}${RESET}\r\n`);
        void this.finish({ exitCode: undefined, error: msg }, true);
      },
    );
  }

  /** The user closed the terminal: stop the process it shows. */
  close(): void {
    this.terminalClosed = true;
    this.closedByUser = true;
    if (this.handle && !this.finished && this.options.terminateOnClose !== false) void this.handle.terminate().catch(() => undefined);
    this.coalescer.dispose();
  }

  handleInput(data: string): void {
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
    this.coalescer.dispose();
    for (const s of this.subs) s.dispose();
    this.writeEmitter.dispose();
    this.closeEmitter.dispose();
  }

  private get keepOpen(): boolean {
    return this.options.keepOpen ?? this.options.mode === 'pipe';
  }

  private attach(h: ProcessHandle): void {
    this.handle = h;
    this.options.onStarted?.(h);
    if (this.closedByUser && this.options.terminateOnClose !== false) void h.terminate().catch(() => undefined);
    this.subs.push(h.onOutput((e) => this.coalescer.push(e.data)));
    // A size change between open() and the start answer.
    if (this.options.mode === 'pty' && this.dims) void h.resize(this.dims.rows, this.dims.columns).catch(() => undefined);
    let closeError: string | undefined;
    this.subs.push(h.onClose((e) => (closeError = e.error)));
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
    if (r.error && !startFailed) this.coalescer.pushText(`\r\n${RED}Exec Server: ${r.error}${RESET}\r\n`);
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
