// Turns a fast stream of process output bytes into few, bounded terminal writes.
// Why: every Pseudoterminal write crosses from the extension host to the renderer; one write
// per chunk of a 50 MB `cat` would freeze the window. So: decode with a streaming TextDecoder
// (a multi-byte character split across chunks is kept intact), queue the text, and flush at
// most every `intervalMs`, at most `maxCharsPerFlush` characters per flush. Nothing is dropped:
// the queue holds what the terminal has not taken yet, and `highWaterChars` tells the producer
// (through onPressure) when to slow down if it can. Each queued piece remembers how many input
// bytes it came from, so `onFlushed` can report the bytes whose text the terminal has taken:
// ExecTerminal acknowledges them to the server (flow control), which bounds the queue.
// Pacing to the renderer (option `renderer`): VS Code's own terminal stops its process while more
// than 100 000 characters are not yet parsed by xterm.js, but a Pseudoterminal gets no such
// acknowledgement. So each write ends with a Device Status Report request (CSI 5 n), which
// xterm.js answers ("CSI 0 n", as terminal input) once it has parsed everything before it: that
// reply, taken out of the input by takeRendererReplies() before anything else sees it, is the
// acknowledgement. With it, `onFlushed` reports a write's bytes only once the renderer confirmed
// it, so the process's flow-control window spans everything up to xterm.js's parser, as the
// built-in terminal's does (nothing piles up in the renderer; Ctrl+C shows its prompt soon), and
// writes also stop while more than a watermark is unconfirmed.

import { VtState } from './vt-state';

/**
 * Default time pacing (without `renderer`): at most 64 Ki characters every 10 ms. Exec Server
 * terminals use TERMINAL_PACING instead: no fixed pace fits a renderer whose speed follows the
 * machine's load, and every pace tried handed a loaded renderer more than it could parse (the
 * palette slowed, Ctrl+C took up to 1.5 s to show the prompt; docs/performance.md, "What the
 * numbers depend on", and the CHANGELOG's dated terminal runs).
 */
export const DEFAULT_FLUSH_INTERVAL_MS = 10;
export const DEFAULT_MAX_CHARS_PER_FLUSH = 64 * 1024;
/** Default rate budget (characters per second): none, the interval and slice size alone pace. */
export const DEFAULT_MAX_CHARS_PER_SECOND = Infinity;

/** Appended to each write when pacing to the renderer: DSR "status report" request. */
export const RENDERER_PROBE = '\x1b[5n';
/** xterm.js's answer to RENDERER_PROBE ("terminal OK"), arriving as terminal input. */
export const RENDERER_REPLY = '\x1b[0n';

/** Pacing to the renderer: watermarks on characters written but not yet confirmed parsed (VS Code's own terminal: 100 000 / 5 000). */
export interface RendererPacing {
  /** Stop writing above this many unconfirmed characters (default 100 000). */
  highChars?: number;
  /** Resume at or below this many (default 5 000; TERMINAL_PACING resumes at 50 000). */
  lowChars?: number;
  /**
   * No answer for this long while writes wait for one (default 2 000 ms): count them as
   * confirmed and pace by time alone (a terminal that does not answer, or not yet, must not stop
   * the output), until an answer comes again. Probes are still sent, and answers still taken.
   */
  replyTimeoutMs?: number;
}

/**
 * What Exec Server terminals use: pace to the renderer, in writes of at most 16 Ki characters
 * every 2 ms (xterm.js parses a write as a whole before it looks at its 12 ms time slice, and VS
 * Code joins the writes of 5 ms into one message, so small writes keep its tasks short). Writing
 * stops above 100 000 unconfirmed characters, like VS Code's own terminal, but resumes at 50 000
 * (VS Code: 5 000), so the renderer still has work while the answer to its probe travels back.
 * Numbers: the CHANGELOG, "Flow control and binary output".
 */
export const TERMINAL_PACING: Readonly<CoalescerOptions> = { renderer: { lowChars: 50_000 }, maxCharsPerFlush: 16 * 1024, intervalMs: 2 };

/** Time source and timer of the pacing (tests pass a manual clock; default Date.now / setTimeout). */
export interface CoalescerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realClock: CoalescerClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

export interface CoalescerOptions {
  /** Minimum delay between two writes (default DEFAULT_FLUSH_INTERVAL_MS). */
  intervalMs?: number;
  /** Upper bound of one write (default DEFAULT_MAX_CHARS_PER_FLUSH, below VS Code's own terminal flow-control window). */
  maxCharsPerFlush?: number;
  /**
   * Time budget of the writes: at most this many characters per second on average (a token
   * bucket holding at most one write's worth, refilled by the time that actually passed, so a
   * late timer does not lower the rate and an idle terminal writes its first text at once).
   * The renderer gives an extension terminal no acknowledgement; this is what keeps it from
   * being handed text faster than it can show it. Default DEFAULT_MAX_CHARS_PER_SECOND.
   */
  maxCharsPerSecond?: number;
  /** Queue size above which onPressure(true) fires (default 8 Mi characters); onPressure(false) below half. */
  highWaterChars?: number;
  /** Maps decoded text before queuing (e.g. LF → CRLF for pipe output). */
  transform?: (text: string) => string;
  /** Input bytes whose text is now fully written (with renderer pacing: and confirmed parsed); pushText messages count 0. */
  onFlushed?: (bytes: number) => void;
  /** Pace to the renderer's acknowledgements (see the top of this file); off by default. */
  renderer?: RendererPacing;
  /** Time source for the pacing (tests). */
  clock?: CoalescerClock;
}

export class OutputCoalescer {
  private readonly decoder = new TextDecoder('utf-8');
  private queue: string[] = [];
  /** Input bytes behind each queue entry (parallel to `queue`), credited when the entry is fully written. */
  private queueBytes: number[] = [];
  /** Bytes pushed whose text the decoder still holds (a split character): credited to the next entry. */
  private carryBytes = 0;
  private queuedChars = 0;
  private timer: unknown;
  private pressured = false;
  private ended = false;
  private drainWaiters: (() => void)[] = [];
  private readonly intervalMs: number;
  private readonly maxChars: number;
  private readonly highWater: number;
  /** Characters per ms of the rate budget (Infinity: none). */
  private readonly rate: number;
  private readonly clock: CoalescerClock;
  /** Characters the rate budget allows now (at most one write's worth), as of `budgetAt`. */
  private budget: number;
  private budgetAt: number;
  /** When the last write happened (the next waits at least intervalMs after it). */
  private lastWriteAt = -Infinity;
  /** Renderer pacing: on, and its watermarks (undefined: off). */
  private readonly renderer: Required<RendererPacing> | undefined;
  /** The renderer answers (false after replyTimeoutMs without an answer, until the next one). */
  private rendererAnswers = true;
  /** Characters and input bytes of each write whose probe has not been answered yet, oldest first. */
  private probes: { chars: number; bytes: number }[] = [];
  /** Written since the last probe, without one yet (the text ended inside an escape sequence). */
  private held = { chars: 0, bytes: 0 };
  /** The terminal parser's state after everything written (probes go out only at ground). */
  private readonly vt = new VtState();
  private unconfirmed = 0;
  /** Stopped above the high watermark, until replies bring `unconfirmed` to the low one. */
  private waitingForRenderer = false;
  private replyTimer: unknown;
  /** Number of writes issued (for tests and logs). */
  writes = 0;

  constructor(
    private readonly write: (text: string) => void,
    private readonly options: CoalescerOptions = {},
    private readonly onPressure?: (congested: boolean) => void,
  ) {
    this.intervalMs = options.intervalMs ?? DEFAULT_FLUSH_INTERVAL_MS;
    this.maxChars = Math.max(2, options.maxCharsPerFlush ?? DEFAULT_MAX_CHARS_PER_FLUSH);
    this.highWater = options.highWaterChars ?? 8 * 1024 * 1024;
    const perSecond = options.maxCharsPerSecond ?? DEFAULT_MAX_CHARS_PER_SECOND;
    this.rate = perSecond > 0 ? perSecond / 1000 : Infinity;
    this.clock = options.clock ?? realClock;
    this.budget = this.maxChars;
    this.budgetAt = this.clock.now();
    if (options.renderer) {
      const { highChars = 100_000, lowChars = 5_000, replyTimeoutMs = 2_000 } = options.renderer;
      this.renderer = { highChars, lowChars: Math.min(lowChars, highChars), replyTimeoutMs };
    }
  }

  /** Characters written whose parsing the renderer has not confirmed yet (0 without renderer pacing). */
  get unconfirmedChars(): number {
    return this.unconfirmed;
  }

  /**
   * Takes the renderer's replies to our probes out of terminal input (as many as are
   * outstanding; a child's own DSR request gets its reply) and returns the rest, which may be
   * ''. Each reply confirms a write; writing resumes once at most the low watermark is unconfirmed.
   */
  takeRendererReplies(input: string): string {
    if (this.probes.length === 0 || !input.includes(RENDERER_REPLY)) return input;
    let i: number;
    let bytes = 0;
    while (this.probes.length && (i = input.indexOf(RENDERER_REPLY)) >= 0) {
      input = input.slice(0, i) + input.slice(i + RENDERER_REPLY.length);
      const p = this.probes.shift()!;
      this.unconfirmed = Math.max(0, this.unconfirmed - p.chars);
      bytes += p.bytes;
    }
    this.rendererAnswers = true;
    this.clearReplyTimer();
    if (this.unconfirmed > 0) this.startReplyTimer();
    if (bytes > 0) this.options.onFlushed?.(bytes);
    if (this.waitingForRenderer && this.unconfirmed <= (this.renderer?.lowChars ?? Infinity)) {
      this.waitingForRenderer = false;
      this.schedule(true);
    }
    return input;
  }

  get pendingChars(): number {
    return this.queuedChars;
  }

  push(bytes: Uint8Array): void {
    if (this.ended) return;
    this.carryBytes += bytes.length;
    this.enqueue(this.decoder.decode(bytes, { stream: true }));
  }

  /** Queues already-decoded text (messages such as "[exited with code 1]"). */
  pushText(text: string): void {
    if (this.ended) return;
    // Flush what the decoder holds first so the message does not cut a character in two.
    this.enqueue(this.decoder.decode(new Uint8Array(0), { stream: true }));
    this.enqueueRaw(text);
  }

  /** No more bytes: emits a trailing incomplete character as U+FFFD and resolves once all is written. */
  end(): Promise<void> {
    if (!this.ended) {
      this.enqueue(this.decoder.decode());
      this.ended = true;
    }
    return this.drained();
  }

  /** Resolves when the queue is empty. */
  drained(): Promise<void> {
    if (this.queuedChars === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** Stops writing and forgets the queue (the terminal went away). */
  dispose(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.queue = [];
    this.queueBytes = [];
    this.queuedChars = 0;
    this.ended = true;
    this.clearReplyTimer();
    this.resolveDrain();
  }

  private startReplyTimer(): void {
    if (!this.renderer || this.replyTimer !== undefined) return;
    this.replyTimer = this.clock.setTimeout(() => {
      this.replyTimer = undefined;
      // Late answers are still taken out of the input (the probes stay listed), but their writes count as confirmed now.
      this.rendererAnswers = false;
      this.releaseProbes();
      if (this.waitingForRenderer) {
        this.waitingForRenderer = false;
        this.schedule(true);
      }
    }, this.renderer.replyTimeoutMs);
  }

  /** Counts every write still waiting for its answer as confirmed (reports its bytes). */
  private releaseProbes(): void {
    let bytes = 0;
    for (const p of [...this.probes, this.held]) {
      bytes += p.bytes;
      p.bytes = 0;
      p.chars = 0;
    }
    this.unconfirmed = 0;
    if (bytes > 0) this.options.onFlushed?.(bytes);
  }

  private clearReplyTimer(): void {
    if (this.replyTimer !== undefined) this.clock.clearTimeout(this.replyTimer);
    this.replyTimer = undefined;
  }

  private enqueue(text: string): void {
    if (!text) return;
    this.enqueueRaw(this.options.transform ? this.options.transform(text) : text);
  }

  private enqueueRaw(text: string): void {
    if (!text) return;
    this.queue.push(text);
    this.queueBytes.push(this.carryBytes);
    this.carryBytes = 0;
    this.queuedChars += text.length;
    if (!this.pressured && this.queuedChars > this.highWater) {
      this.pressured = true;
      this.onPressure?.(true);
    }
    this.schedule();
  }

  /** Refills the rate budget for the time passed and returns it (at most one write's worth). */
  private available(now: number): number {
    if (this.rate === Infinity) return this.maxChars;
    this.budget = Math.min(this.maxChars, this.budget + (now - this.budgetAt) * this.rate);
    this.budgetAt = now;
    return Math.floor(this.budget);
  }

  /** `resuming`: the renderer caught up, the queue was not idle, so no coalescing delay. */
  private schedule(resuming = false): void {
    if (this.timer !== undefined || this.queuedChars === 0 || this.waitingForRenderer) return;
    const now = this.clock.now();
    // Wait for the interval since the last write, and for the budget to allow a full write
    // (or all that is queued, if less): a write never waits for more than it needs.
    let delay = Math.max(0, this.lastWriteAt + this.intervalMs - now);
    if (this.rate !== Infinity) {
      const want = Math.min(this.queuedChars, this.maxChars);
      delay = Math.max(delay, Math.ceil((want - this.available(now)) / this.rate));
    }
    // A fresh burst still waits one interval (coalescing), unless paced by the budget above.
    if (!resuming && (this.lastWriteAt === -Infinity || now - this.lastWriteAt > this.intervalMs)) delay = Math.max(delay, this.intervalMs);
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, delay);
  }

  private flush(): void {
    const now = this.clock.now();
    let budget = Math.max(1, this.available(now));
    let bytes = 0;
    const parts: string[] = [];
    while (budget > 0 && this.queue.length) {
      const head = this.queue[0];
      if (head.length <= budget) {
        parts.push(head);
        this.queue.shift();
        bytes += this.queueBytes.shift()!;
        budget -= head.length;
        continue;
      }
      // Cut inside the head, but never between the two halves of a surrogate pair.
      let cut = budget;
      const c = head.charCodeAt(cut - 1);
      if (c >= 0xd800 && c <= 0xdbff) cut -= 1;
      if (cut === 0) {
        if (parts.length) break;
        cut = 2; // a lone pair at the head with a budget of 1: take the pair.
      }
      parts.push(head.slice(0, cut));
      this.queue[0] = head.slice(cut);
      budget = 0;
    }
    const text = parts.join('');
    this.queuedChars -= text.length;
    // A trailing incomplete character flushed by end() left bytes without text: they are done too.
    if (this.ended && this.queue.length === 0) {
      bytes += this.carryBytes;
      this.carryBytes = 0;
    }
    if (text) {
      this.writes++;
      this.lastWriteAt = now;
      if (this.rate !== Infinity) this.budget -= text.length;
      if (this.renderer) {
        // A probe goes out only where the text leaves the parser at ground: dropped inside a
        // child's escape sequence cut by a read or a slice, it would break that sequence. A
        // write ending inside one is confirmed by the next write's probe.
        this.vt.feed(text);
        const probe = this.vt.ground;
        if (this.rendererAnswers) {
          this.held.chars += text.length;
          this.held.bytes += bytes;
          bytes = 0; // reported when the renderer answers
          this.unconfirmed += text.length;
          if (probe) {
            this.probes.push(this.held);
            this.held = { chars: 0, bytes: 0 };
          }
          this.startReplyTimer();
          if (this.unconfirmed > this.renderer.highChars) this.waitingForRenderer = true;
        } else if (probe) {
          // Not answering: a probe still goes out (its answer resumes the pacing), the write counts as confirmed.
          this.probes.push({ chars: 0, bytes: 0 });
          if (this.probes.length > 1000) this.probes.shift();
        }
        this.write(probe ? text + RENDERER_PROBE : text);
      } else this.write(text);
    }
    if (bytes > 0) this.options.onFlushed?.(bytes);
    if (this.pressured && this.queuedChars <= this.highWater / 2) {
      this.pressured = false;
      this.onPressure?.(false);
    }
    if (this.queuedChars > 0) this.schedule();
    else this.resolveDrain();
  }

  private resolveDrain(): void {
    const w = this.drainWaiters;
    this.drainWaiters = [];
    for (const r of w) r();
  }
}

/** LF → CRLF for pipe output shown in a terminal (a PTY does this itself). */
export function lfToCrlf(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}
