// The relay behind a remote environment's agent endpoint: each agent connection (already
// gated: endpoint.ts wraps this in the same GatedServerConnection as Local) gets its OWN
// connection and server session on the environment's host, opened through the extension's
// connector for that environment (e.g. ssh). Requests are forwarded in arrival order — also
// those pipelined before the host link is up, which wait for it (they passed the gate first).
// What the host sends back is forwarded only for what this connection started: a process
// notification for a process id it did not start, a watch it did not open or an http body it
// did not ask for is dropped (a host cannot inject events into the agent's view). The agent
// never resumes a host session (resumeSessionId is dropped: a fresh session per connection).
// Below the agent, a dropped host link of a target whose sessions outlive their link (Connect to
// Host's detached server, a websocket server: RelayTarget.resumable) is resumed: a new link
// initializes with the host session's id, every process of this connection is caught up with
// process/read from the last seq forwarded (missed output, its exit and close sent on as the
// notifications the agent would have had), and only then does anything else flow — the agent
// sees the same processes, nothing lost, nothing twice. Requests sent meanwhile wait; those in
// flight at the drop are sent again when they are safe to repeat (reads, process/write by its
// writeId), else fail as not replayed. A host that cannot resume ends the agent's connection.
import type { NotificationMap, NotificationMethod, ProcessReadResult } from '../../protocol/types';
import { ErrorCodes, Messages, RpcError } from '../../protocol/errors';
import type { ClientChannel } from '../../rpc/channel';
import type { NotificationSink, ServerConnection } from '../../server/api';
import type { ConnectableServer } from '../../transports/in-process';
import { RETRYABLE } from '../../client/client';
import { denyAnswer } from '../approval';

/** Where an environment's agent connections are relayed to. */
export interface RelayTarget {
  /** The environment's name, shown in questions and logs ("→ devbox"). */
  readonly name: string;
  /** Opens a new connection to the host's server (not yet initialized). */
  open(): Promise<ClientChannel>;
  /** The host keeps `ch`'s session when `ch` drops: the relay resumes it over a new open(). Absent: never. */
  resumable?(ch: ClientChannel): boolean;
}

export interface RelayOptions {
  /** How long a dropped host link is tried again before the agent's connection is ended (default 60 s). */
  recoveryTimeoutMs?: number;
  /** Between two attempts (default 1 s: each is an ssh login). */
  retryDelayMs?: number;
}

type Log = (level: 'debug' | 'info' | 'warn', message: string) => void;

const PROCESS_NOTIFICATIONS = new Set(['process/output', 'process/exited', 'process/closed']);
const closedError = () => new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed);
const isClosedError = (e: unknown) => e instanceof RpcError && e.code === ErrorCodes.ConnectionClosed;

/**
 * Relays each agent connection to its own connection to `target`. `onHostLost`: the host link of
 * a connection is gone for good (not resumable, or resuming failed): the caller ends the agent's
 * connection (its requests fail, nothing hangs).
 */
export function relayServer(target: RelayTarget, log?: Log, onHostLost?: (reason: string) => void, opts: RelayOptions = {}): ConnectableServer {
  return { connect: (sink) => new RelayConnection(target, sink, log, onHostLost, opts) };
}

/** What this connection forwarded of one of its processes: seqs (contiguous prefix + the few ahead of it), exit, close. */
interface Followed {
  contig: number;
  ahead: Set<number>;
  exited: boolean;
  closed: boolean;
}

class RelayConnection implements ServerConnection {
  /** The host link in use, or the recovery that will give the next one: every request chains on it, so order holds. */
  private channel: Promise<ClientChannel> | undefined;
  private live: ClientChannel | undefined;
  /** Links that dropped while a recovery took over: a request that failed on one is sent again. */
  private readonly dropped = new WeakSet<ClientChannel>();
  private closed = false;
  /** The host session (from the answer to the agent's initialize) and what that initialize asked. */
  private session: string | undefined;
  private initParams: Record<string, unknown> = {};
  /** Processes whose start this connection forwarded (notifications for others are forged). */
  private readonly processes = new Map<string, Followed>();
  private readonly watches = new Set<string>();
  private readonly httpRequests = new Set<string>();

  constructor(
    private readonly target: RelayTarget,
    private readonly sink: NotificationSink,
    private readonly log: Log | undefined,
    private readonly onHostLost: ((reason: string) => void) | undefined,
    private readonly opts: RelayOptions,
  ) {}

  /** The host link, opened on first use. */
  private link(): Promise<ClientChannel> {
    this.channel ??= this.target.open().then((ch) => {
      if (this.closed) {
        ch.close('agent connection closed');
        throw closedError();
      }
      ch.onNotification((n) => this.fromHost(n.method, n.params));
      ch.setRequestHandler((method, params, signal) => this.hostRequest(method, params, signal));
      ch.onClose((info) => this.hostClosed(ch, info.reason));
      this.live = ch;
      return ch;
    });
    return this.channel;
  }

  private hostClosed(ch: ClientChannel, reason: string): void {
    if (this.closed || ch !== this.live) return;
    this.live = undefined;
    if (this.session === undefined || !this.target.resumable?.(ch)) {
      // A stdio link (the reference `codex exec-server`, a fallback without forwarding, a
      // container exec): the host's server ends with its stdin, and its processes with it
      // (measured on the reference 0.171: a child still sleeping never ran on). Said first: a
      // websocket close reason keeps 123 bytes.
      const why = this.session === undefined ? `the connection to ${this.target.name} was lost (${reason})` : `${this.target.name}: link lost, not resumable (stdio); its processes ended (${reason})`;
      this.log?.('warn', `relay to ${this.target.name}: the host connection closed (${reason}); ${this.session === undefined ? 'before its session began' : "a stdio host cannot resume it: its server and the agent's processes there ended with the link"}`);
      this.onHostLost?.(why);
      return;
    }
    this.log?.('warn', `relay to ${this.target.name}: the host connection dropped (${reason}); resuming its session`);
    this.dropped.add(ch);
    const recovery = this.recover(reason);
    this.channel = recovery;
    recovery.catch((e: unknown) => {
      if (this.closed) return;
      const why = e instanceof Error ? e.message : String(e);
      this.log?.('warn', `relay to ${this.target.name}: could not resume the host session (${why})`);
      this.onHostLost?.(`the connection to ${this.target.name} was lost and its session could not be resumed (${why})`);
    });
  }

  /** A new link resuming the host session; every process caught up before it is handed out. */
  private async recover(reason: string): Promise<ClientChannel> {
    const timeout = this.opts.recoveryTimeoutMs ?? 60_000;
    const delay = this.opts.retryDelayMs ?? 1000;
    const deadline = Date.now() + timeout;
    let last = reason;
    for (;;) {
      if (this.closed) throw closedError();
      let ch: ClientChannel | undefined;
      try {
        ch = await this.target.open();
        // Held until the catch-up is forwarded: a live chunk must not overtake an older one.
        const held: { method: string; params?: unknown }[] = [];
        let holding = true;
        ch.onNotification((n) => (holding ? held.push(n) : this.fromHost(n.method, n.params)));
        ch.setRequestHandler((method, params, signal) => this.hostRequest(method, params, signal));
        await ch.request('initialize', { ...this.initParams, resumeSessionId: this.session });
        ch.notify('initialized', {});
        await this.catchUp(ch);
        holding = false;
        for (const n of held) this.fromHost(n.method, n.params);
        if (this.closed) {
          ch.close('agent connection closed');
          throw closedError();
        }
        if (ch.closed) throw closedError();
        const link = ch;
        ch.onClose((info) => this.hostClosed(link, info.reason));
        this.live = ch;
        this.log?.('info', `relay to ${this.target.name}: host session resumed`);
        return ch;
      } catch (e) {
        ch?.close('resume failed');
        if (this.closed) throw closedError();
        last = e instanceof Error ? e.message : String(e);
        // The session ended (its TTL, a server restart): nothing to resume.
        if (e instanceof RpcError && e.code === ErrorCodes.InvalidRequest) throw new Error(`the host no longer knows the session: ${last}`);
        if (Date.now() + delay > deadline) throw new Error(`gave up after ${Math.round(timeout / 1000)} s: ${last}`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /** process/read from the last seq forwarded, for every process still open; what was missed goes to the agent in seq order. */
  private async catchUp(ch: ClientChannel): Promise<void> {
    for (const [processId, f] of this.processes) {
      if (f.closed) continue;
      const reads: ProcessReadResult[] = [];
      try {
        let after = f.contig;
        for (let i = 0; i < 100_000; i++) {
          const r = (await ch.request('process/read', { processId, afterSeq: after, waitMs: 0 })) as ProcessReadResult;
          reads.push(r);
          const next = r.nextSeq - 1;
          if (r.chunks.length === 0 || next <= after) break;
          after = next;
        }
      } catch (e) {
        if (isClosedError(e)) throw e;
        this.log?.('warn', `relay to ${this.target.name}: process ${processId} could not be caught up (${e instanceof Error ? e.message : String(e)})`);
        continue;
      }
      this.deliverCatchUp(processId, f, reads);
    }
  }

  private deliverCatchUp(processId: string, f: Followed, reads: ProcessReadResult[]): void {
    const last = reads[reads.length - 1];
    const chunks = reads.flatMap((r) => r.chunks).filter((c) => !seen(f, c.seq));
    chunks.sort((a, b) => a.seq - b.seq);
    const upTo = Math.max(f.contig, last.nextSeq - 1, chunks.length ? chunks[chunks.length - 1].seq : 0);
    const covered = new Set(chunks.map((c) => c.seq));
    // Seqs up to upTo that no chunk covers are the exit and the close (in that order).
    const free: number[] = [];
    for (let s = f.contig + 1; s <= upTo; s++) if (!covered.has(s) && !f.ahead.has(s)) free.push(s);
    const events: { seq: number; method: NotificationMethod; params: Record<string, unknown> }[] = chunks.map((c) => ({
      seq: c.seq,
      method: 'process/output',
      params: { processId, seq: c.seq, stream: c.stream, chunk: c.chunk },
    }));
    if (last.exited && !f.exited && free.length) {
      const seq = free.shift()!;
      events.push({ seq, method: 'process/exited', params: { processId, seq, exitCode: last.exitCode ?? -1, sandboxDenied: last.sandboxDenied === true } });
    }
    if (last.closed && !f.closed && free.length) {
      const seq = free.pop()!;
      events.push({ seq, method: 'process/closed', params: { processId, seq } });
    }
    if (free.length) this.log?.('warn', `relay to ${this.target.name}: ${free.length} output chunk(s) of process ${processId} were lost while the host link was down (evicted by the host)`);
    events.sort((a, b) => a.seq - b.seq);
    for (const e of events) this.forwardProcess(f, e.method, e.params);
  }

  request<M extends keyof import('../../protocol/types').RequestMap>(method: M, params: import('../../protocol/types').ParamsOf<M>): Promise<import('../../protocol/types').ResultOf<M>> {
    return this.requestUntyped(method, params) as Promise<import('../../protocol/types').ResultOf<M>>;
  }

  requestUntyped(method: string, params: unknown): Promise<unknown> {
    if (this.closed) return Promise.reject(closedError());
    let sent = params;
    const p = params && typeof params === 'object' ? (params as Record<string, unknown>) : undefined;
    if (method === 'initialize' && p) {
      // A fresh host session per agent connection: never one of the extension's own. Output stays
      // JSON: the relay forwards notifications as they are (a binary frame is not one).
      const { resumeSessionId: _dropped, binaryOutput: _json, ...rest } = p;
      sent = rest;
    }
    // Registered before forwarding: the host may notify output before it answers the start.
    let added: string | undefined;
    if (method === 'process/start' && p && typeof p.processId === 'string' && !this.processes.has(p.processId)) {
      added = p.processId;
      this.processes.set(added, { contig: 0, ahead: new Set(), exited: false, closed: false });
    }
    if (method === 'fs/watch' && p && typeof p.watchId === 'string') this.watches.add(p.watchId);
    if (method === 'http/request' && p && typeof p.requestId === 'string') this.httpRequests.add(p.requestId);
    const r = this.send(method, sent, 0);
    if (method === 'initialize') {
      void r.then(
        (result) => {
          const id = (result as { sessionId?: unknown } | undefined)?.sessionId;
          if (typeof id === 'string') {
            this.session = id;
            this.initParams = { ...(sent as Record<string, unknown>) };
          }
        },
        () => undefined,
      );
    }
    // A start the host refused started nothing this connection follows.
    if (added) void r.catch(() => this.processes.delete(added!));
    return r;
  }

  /** On the current link; one that failed because its link dropped under a recovery is sent again when that is safe. */
  private async send(method: string, params: unknown, attempt: number): Promise<unknown> {
    const ch = await this.link();
    try {
      return await ch.request(method, params);
    } catch (e) {
      if (!isClosedError(e) || this.closed || !this.dropped.has(ch)) throw e;
      if (!RETRYABLE.has(method) || attempt >= 10) {
        throw new RpcError(ErrorCodes.ConnectionClosed, `${method} was in flight when the connection to ${this.target.name} dropped; it is not replayed`);
      }
      return this.send(method, params, attempt + 1);
    }
  }

  notification(method: string, params: unknown): boolean {
    if (method !== 'initialized') return false;
    void this.link().then(
      (ch) => ch.notify(method, params),
      () => undefined,
    );
    return true;
  }

  private fromHost(method: string, params: unknown): void {
    if (this.closed) return;
    const p = (params ?? {}) as Record<string, unknown>;
    if (PROCESS_NOTIFICATIONS.has(method)) {
      const f = this.processes.get(String(p.processId));
      if (!f) return this.forged(method);
      return this.forwardProcess(f, method as NotificationMethod, p);
    }
    // network/policyDecision: the host's managed proxy judged a connection of one of this agent's commands (as a local engine tells it).
    const mine =
      method === 'fs/changed' ? this.watches.has(String(p.watchId))
      : method === 'http/request/bodyDelta' ? this.httpRequests.has(String(p.requestId))
      : method === 'network/policyDecision' ? this.processes.has(String(p.processId))
      : false;
    if (!mine) return this.forged(method);
    if (method === 'http/request/bodyDelta' && p.done === true) this.httpRequests.delete(String(p.requestId));
    this.sink.notify(method as NotificationMethod, params as NotificationMap[NotificationMethod]);
  }

  /**
   * A request of the host's server to its client: the one there is, network/policyRequest from
   * its managed proxy, becomes the same question as a local engine's (the sink's `request`: the
   * gate asks the user, endpoint.ts), but only about a process this agent connection started
   * there; anything else is refused without asking (a host cannot make the user answer for
   * something the agent never ran, nor reach the agent with requests of its own).
   */
  private async hostRequest(method: string, params: unknown, signal: AbortSignal): Promise<unknown> {
    if (method !== 'network/policyRequest') throw new RpcError(ErrorCodes.MethodNotFound, Messages.methodNotFound(method));
    const processId = (params as { processId?: unknown } | null)?.processId;
    if (this.closed || typeof processId !== 'string' || !this.processes.has(processId) || !this.sink.request) {
      this.log?.('warn', `relay to ${this.target.name}: refused a network question about ${typeof processId === 'string' ? `process ${JSON.stringify(processId.slice(0, 64))}` : 'no process'}, which this agent connection did not start there`);
      return denyAnswer('not_allowed');
    }
    return this.sink.request(method, params, signal);
  }

  private forged(method: string): void {
    this.log?.('warn', `relay to ${this.target.name}: dropped a ${method} notification for something this agent connection did not start`);
  }

  /** Once per seq (a resumed link may repeat what the catch-up forwarded). */
  private forwardProcess(f: Followed, method: NotificationMethod, p: Record<string, unknown>): void {
    const seq = typeof p.seq === 'number' && Number.isSafeInteger(p.seq) ? p.seq : undefined;
    if (seq !== undefined) {
      if (seen(f, seq)) return;
      mark(f, seq);
    }
    if (method === 'process/exited') f.exited = true;
    if (method === 'process/closed') {
      f.closed = true;
      f.ahead.clear();
    }
    this.sink.notify(method, p as unknown as NotificationMap[NotificationMethod]);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    // The host session ends with its connection (the host terminates its processes after its TTL).
    this.live?.close('agent connection closed');
    void this.channel?.then(
      (ch) => ch.close('agent connection closed'),
      () => undefined,
    );
  }
}

const seen = (f: Followed, seq: number) => seq <= f.contig || f.ahead.has(seq);
function mark(f: Followed, seq: number): void {
  if (seq !== f.contig + 1) {
    // Out of order (the reference may send seq 2 before 1): bounded, the gap is either filled or closed.
    if (f.ahead.size < 4096) f.ahead.add(seq);
    return;
  }
  f.contig = seq;
  while (f.ahead.delete(f.contig + 1)) f.contig++;
}
