// Paces approval questions so each one reaches the screen as a toast. VS Code's toasts drop
// questions two ways: more than 3 notifications within 800 ms (the workbench's toast spam
// guard) go straight to the notification center, and a toast that does not fit the window
// (toasts after the first get 61.8 % of its height) is hidden, then purged to the center.
// Seen in the real workbench (1280×800): of five pipelined questions shown at once only the
// first two were ever on screen, and with two at a time the second was hidden and purged —
// each time the rest timed out as "denied" without the user seeing them. So one question is
// on screen at a time (the status bar counts the others) and at most `limit` are shown per
// `windowMs`; the others wait here, in order, and one that stopped mattering while it waited
// (timed out, agent gone) is never shown. Waiting questions are taken round-robin by
// connection, so an agent that floods questions (up to the gate's pending bound) does not
// hold back another agent's one. Of connections with nothing waiting or on screen (closed, or
// done asking) only the IDLE_REMEMBERED served most recently are remembered: a window lives for
// days and sees any number of agent connections. One forgotten counts as never served when it
// asks again (it was served longest ago anyway). Free of `vscode`.

export interface PacerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
}

/**
 * Idle connections whose last turn is remembered. The recent ones matter: one served a moment
 * ago must not overtake a connection that has been waiting when it asks again.
 */
export const IDLE_REMEMBERED = 32;

const realClock: PacerClock = { now: () => Date.now(), setTimeout: (fn, ms) => setTimeout(fn, ms) };

interface Waiting {
  show: () => Promise<unknown> | void;
  stale: () => boolean;
  key: string;
}

export class QuestionPacer {
  /** When recent shows happened (at most `limit` kept). */
  private readonly shown: number[] = [];
  private readonly queue: Waiting[] = [];
  private timerSet = false;
  /** When each connection last had a question shown (a counter, not a time), oldest first. */
  private readonly served = new Map<string, number>();
  /** Questions on screen, by connection. */
  private readonly openBy = new Map<string, number>();
  private turns = 0;

  /** Questions on screen (a handful at most: maxOpen). */
  private get open(): number {
    let n = 0;
    for (const count of this.openBy.values()) n += count;
    return n;
  }

  /**
   * `limit` shows per `windowMs`: VS Code's guard is 3 per 800 ms; the default window has a
   * margin for timer and IPC jitter between the extension host and the workbench. `maxOpen`:
   * questions on screen at once (see above: a second one can be hidden and lost).
   */
  constructor(
    private readonly limit = 3,
    private readonly windowMs = 1200,
    private readonly clock: PacerClock = realClock,
    private readonly maxOpen = 1,
  ) {}

  /**
   * Calls `show` now if the budget allows, else later (in order); never if `stale()` by then.
   * The question counts as on screen until the promise `show` returns settles (answered,
   * timed out, agent gone).
   */
  schedule(show: () => Promise<unknown> | void, stale: () => boolean, key = ''): void {
    this.queue.push({ show, stale, key });
    this.drain();
  }

  /** Questions waiting for their turn. */
  get waiting(): number {
    return this.queue.length;
  }

  /** The waiting question of the connection served longest ago (first come within it). */
  private nextIndex(): number {
    let best = 0;
    for (let i = 1; i < this.queue.length; i++) {
      if ((this.served.get(this.queue[i].key) ?? 0) < (this.served.get(this.queue[best].key) ?? 0)) best = i;
    }
    return best;
  }

  private drain(): void {
    for (;;) {
      for (let i = this.queue.length - 1; i >= 0; i--) if (this.queue[i].stale()) this.queue.splice(i, 1);
      this.prune();
      if (this.queue.length === 0 || this.open >= this.maxOpen) return;
      const now = this.clock.now();
      while (this.shown.length > 0 && now - this.shown[0] >= this.windowMs) this.shown.shift();
      if (this.shown.length >= this.limit) {
        if (!this.timerSet) {
          this.timerSet = true;
          this.clock.setTimeout(() => {
            this.timerSet = false;
            this.drain();
          }, this.shown[0] + this.windowMs - now);
        }
        return;
      }
      this.shown.push(now);
      const next = this.queue.splice(this.nextIndex(), 1)[0];
      this.served.delete(next.key); // re-inserted last: the map stays ordered oldest turn first
      this.served.set(next.key, ++this.turns);
      let onScreen: Promise<unknown> | void;
      try {
        onScreen = next.show();
      } catch {
        continue; // the host reports its own failures; the queue must keep moving
      }
      if (!onScreen) continue;
      this.openBy.set(next.key, (this.openBy.get(next.key) ?? 0) + 1);
      const release = () => {
        const left = (this.openBy.get(next.key) ?? 1) - 1;
        if (left > 0) this.openBy.set(next.key, left);
        else this.openBy.delete(next.key);
        this.drain();
      };
      onScreen.then(release, release);
    }
  }

  /** Forgets the oldest turns of idle connections (nothing waiting, nothing on screen) beyond IDLE_REMEMBERED. */
  private prune(): void {
    if (this.served.size <= IDLE_REMEMBERED) return;
    const busy = new Set([...this.openBy.keys(), ...this.queue.map((w) => w.key)]);
    let idle = 0;
    for (const k of this.served.keys()) if (!busy.has(k)) idle++;
    for (const k of this.served.keys()) {
      if (idle <= IDLE_REMEMBERED) break;
      if (busy.has(k)) continue;
      this.served.delete(k);
      idle--;
    }
  }
}
