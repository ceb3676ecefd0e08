// Bounds on what one agent endpoint may hold: file watches (each recursive watch costs one
// inotify watch per directory, taken from the user's own limit), large responses toward a
// client that does not read (they pile up in the socket buffer), HTTP bodies.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { ErrorCodes, Messages, RpcError } from '../../protocol/errors';
import type { NotificationSink } from '../../server/api';

export const AGENT_LIMITS = {
  /** fs/watch + fs/watchMissing registrations per endpoint. */
  maxWatches: 64,
  /** Directories under recursive fs/watch (one inotify watch each) per endpoint. */
  maxWatchedDirectories: 2048,
  /** http/request body sent by the agent. */
  maxHttpRequestBytes: 8 * 1024 * 1024,
  /** http/request response body collected or streamed for the agent. */
  maxHttpResponseBytes: 16 * 1024 * 1024,
  /** http/request bodies in flight per connection (collected, or streamed until done). */
  maxHttpInFlight: 4,
  /** fs/readFile of a larger file is refused (fs/open + fs/readBlock read it in blocks). */
  maxReadFileBytes: 32 * 1024 * 1024,
  /** Requests with a large answer running at once per connection (each then waits for the client to read). */
  maxLargeAnswers: 2,
  /** process/read calls running at once per connection (long-polls included). */
  maxProcessReads: 8,
  /** Agent connections open at once per endpoint (each has the per-connection budgets above). */
  maxConnections: 16,
  /** Large answers produced and not yet written out, per endpoint (every connection draws from it). */
  maxEndpointLargeAnswers: 4,
  /** http/request bodies in flight per endpoint. */
  maxEndpointHttpInFlight: 8,
  /** Processes the endpoint's engine holds (live, or exited and still readable: up to 1 MiB of output each). */
  maxHeldProcesses: 64,
  /** The sum of the agents' outputWindow grants (unacknowledged output the engine retains). */
  maxOutputWindowBytes: 32 * 1024 * 1024,
};

/**
 * Budgets one endpoint's connections share: without them each connection's own bounds were
 * multiplied by however many connections an agent opened (8 connections reading large files
 * and never reading the answers: +801 MiB in the extension host).
 */
export class EndpointShares {
  /** Large answers in flight on any connection: a slot is given back once the answer was written out. */
  readonly largeAnswers: Slots;
  http = 0;

  constructor(readonly limits = AGENT_LIMITS) {
    this.largeAnswers = new Slots(limits.maxEndpointLargeAnswers);
  }
}

/** A counting semaphore: `acquire` resolves with the release function once a slot is free. */
export class Slots {
  private used = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly max: number) {}

  acquire(): Promise<() => void> {
    return new Promise((resolve) => {
      const grant = () => {
        this.used++;
        let released = false;
        resolve(() => {
          if (released) return;
          released = true;
          this.used--;
          this.waiting.shift()?.();
        });
      };
      if (this.used < this.max) grant();
      else this.waiting.push(grant);
    });
  }

  get inUse(): number {
    return this.used;
  }
}

const refuse = (m: string) => new RpcError(ErrorCodes.InvalidRequest, m);

/** Counts directories under `root` (not following symlinks), stopping once above `limit`. */
export async function countDirectories(root: string, limit: number): Promise<number> {
  let n = 0;
  const stack = [root];
  while (stack.length > 0 && n <= limit) {
    const dir = stack.pop() as string;
    n++;
    const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory()) stack.push(path.join(dir, e.name));
  }
  return n;
}

/** Watches of one endpoint: every connection draws from the same budget. */
export class WatchBudget {
  private watches = 0;
  private directories = 0;

  constructor(private readonly limits = AGENT_LIMITS) {}

  /** Reserves room for a watch; returns the release function. Throws when over budget. */
  async reserve(p: string, recursive: boolean, paths = 1): Promise<() => void> {
    if (this.watches + 1 > this.limits.maxWatches) throw refuse(`at most ${this.limits.maxWatches} watches per agent endpoint`);
    let dirs = paths;
    if (recursive) {
      const st = await fsp.stat(p).catch(() => undefined);
      if (st?.isDirectory()) dirs = await countDirectories(p, this.limits.maxWatchedDirectories - this.directories);
    }
    if (this.watches + 1 > this.limits.maxWatches) throw refuse(`at most ${this.limits.maxWatches} watches per agent endpoint`);
    if (this.directories + dirs > this.limits.maxWatchedDirectories) {
      throw refuse(`watching ${p} needs more directory watches than this agent endpoint may hold (${this.limits.maxWatchedDirectories})`);
    }
    this.watches++;
    this.directories += dirs;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.watches--;
      this.directories -= dirs;
    };
  }

  get inUse(): { watches: number; directories: number } {
    return { watches: this.watches, directories: this.directories };
  }
}

/**
 * Large answers of one connection: at most `max` run at once, and each starts only while the
 * client keeps up (the sink is not congested). A client that stops reading therefore holds at
 * most `max` answers in memory, however many requests it sends.
 */
export class LargeAnswerQueue {
  private running = 0;
  private readonly queue: (() => void)[] = [];
  private closed = false;

  constructor(
    private readonly sink: Pick<NotificationSink, 'isCongested' | 'onDrain'>,
    private readonly max = AGENT_LIMITS.maxLargeAnswers,
    /** The endpoint's slots: one is held from the start of an answer until it was written out. */
    private readonly shared?: Slots,
  ) {}

  async run<T>(f: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((r) => this.queue.push(r));
    else this.running++;
    try {
      await this.untilDrained();
      if (this.closed) throw new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed);
      if (!this.shared) return await f();
      const release = await this.shared.acquire();
      if (this.closed) {
        release();
        throw new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed);
      }
      let answer: T;
      try {
        answer = await f();
      } catch (e) {
        release();
        throw e;
      }
      // The answer is handed to the transport right after this resolves (a microtask): the slot
      // is given back once the client has read it down to the send buffer's mark.
      setImmediate(() => void this.untilDrained().then(release, release));
      return answer;
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.running--;
    }
  }

  private async untilDrained(): Promise<void> {
    while (!this.closed && this.sink.isCongested?.()) {
      await new Promise<void>((resolve) => {
        let wake: () => void = resolve;
        const d = this.sink.onDrain?.(() => wake());
        wake = () => {
          d?.dispose();
          this.wakers.delete(wake);
          resolve();
        };
        this.wakers.add(wake);
        // Without a drain event to wait for, look again shortly.
        if (!d) setTimeout(wake, 50);
      });
    }
  }

  private readonly wakers = new Set<() => void>();

  close(): void {
    this.closed = true;
    for (const w of [...this.wakers]) w();
    for (const q of this.queue.splice(0)) q();
  }
}
