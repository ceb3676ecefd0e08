// The one bounded wait of the test suite: until a condition holds, or until an event fires.
// A test that waits names what it waits for, so a timeout says what never happened (and, with
// `detail`, the state it saw) instead of a bare "timed out" or a node:test-level timeout.
import type { EventEmitter } from 'node:events';

export interface WaitOptions {
  /** Give up after this many ms (default 20 s: generous, since 2 shared cores run many files). */
  timeout?: number;
  /** What is awaited, for the timeout message: "timed out after N ms waiting for <what>". */
  what?: string;
  /** Appended to the timeout message (e.g. the output seen so far). */
  detail?: () => string;
  /** Re-check a predicate this often (default 10 ms). */
  interval?: number;
  /** Also re-check a predicate whenever this fires (reacts at once, without waiting for the next poll). */
  wake?: (check: () => void) => { dispose(): void } | (() => void);
}

/** A VS Code / src/rpc style event: subscribe returns a disposable. */
export interface EventWait<T> {
  event: (listener: (e: T) => void) => { dispose(): void };
  /** Only an occurrence passing this counts (default: the first). */
  where?: (e: T) => boolean;
}
/** A Node EventEmitter event; resolves with the first argument. */
export interface EmitterWait {
  emitter: EventEmitter;
  name: string;
  where?: (...args: any[]) => boolean;
}

/** A predicate's truthy result is what waitFor resolves with (so `() => map.get(k)` yields the value). */
export type Predicate<T> = () => T | undefined | null | false | 0 | '' | Promise<T | undefined | null | false | 0 | ''>;

export function waitFor<T>(until: Predicate<T>, opts?: WaitOptions): Promise<T>;
export function waitFor<T>(until: EventWait<T>, opts?: WaitOptions): Promise<T>;
export function waitFor(until: EmitterWait, opts?: WaitOptions): Promise<any>;
export function waitFor<T>(until: Predicate<T> | EventWait<T> | EmitterWait, opts: WaitOptions = {}): Promise<T> {
  const timeout = opts.timeout ?? 20_000;
  const what = opts.what ?? (typeof until === 'function' ? 'a condition' : 'event' in until ? 'an event' : `'${until.name}'`);
  return new Promise<T>((resolve, reject) => {
    const cleanups: Array<() => void> = [];
    let done = false;
    const finish = (err: Error | undefined, value?: T) => {
      if (done) return;
      done = true;
      for (const c of cleanups) c();
      if (err) reject(err);
      else resolve(value as T);
    };
    const timer = setTimeout(() => {
      let extra = '';
      try {
        extra = opts.detail ? `; ${opts.detail()}` : '';
      } catch (e) {
        extra = `; (detail failed: ${String(e)})`;
      }
      finish(new Error(`timed out after ${timeout} ms waiting for ${what}${extra}`));
    }, timeout);
    cleanups.push(() => clearTimeout(timer));

    if (typeof until !== 'function') {
      if ('event' in until) {
        const sub = until.event((e) => {
          if (!until.where || until.where(e)) finish(undefined, e);
        });
        cleanups.push(() => sub.dispose());
      } else {
        const listener = (...args: any[]) => {
          if (!until.where || until.where(...args)) finish(undefined, args[0]);
        };
        until.emitter.on(until.name, listener);
        cleanups.push(() => until.emitter.off(until.name, listener));
      }
      return;
    }

    // Predicate: checked now, every `interval` ms, and on each `wake`; one check at a time.
    let checking = false;
    let again = false;
    const check = async (): Promise<void> => {
      if (done) return;
      if (checking) {
        again = true;
        return;
      }
      checking = true;
      try {
        do {
          again = false;
          const v = await until();
          if (v) return finish(undefined, v as T);
        } while (again && !done);
      } catch (e) {
        finish(e instanceof Error ? e : new Error(String(e)));
      } finally {
        checking = false;
      }
    };
    const iv = setInterval(() => void check(), opts.interval ?? 10);
    cleanups.push(() => clearInterval(iv));
    if (opts.wake) {
      const sub = opts.wake(() => void check());
      cleanups.push(typeof sub === 'function' ? sub : () => sub.dispose());
    }
    void check();
  });
}

/**
 * A fixed pause. Only for tests that are about elapsed time itself (a TTL expiring, "nothing
 * arrives during N ms", a deliberately slow peer): every call site says why in a comment.
 * Waiting for something to happen is `waitFor`.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms)); // why: the one definition
}
