// A session owns processes; connections come and go. While attached, process events go to
// the attached connection's sink; while detached they only go to retention (process/read).
import { randomUUID } from 'node:crypto';
import { RpcError, ErrorCodes, Messages, invalidRequest } from '../protocol/errors';
import type { NotificationMap, NotificationMethod, OutputStream } from '../protocol/types';
import { markVerbatim } from '../rpc/verbatim';
import type { NotificationSink } from './api';
import { ManagedProcess, type ProcessHost } from './process/managed-process';
import { donateChunk } from './process/read-blocks';
import { ShellSnapshots } from './process/shell-snapshot';
import { NOOP_SERVER_TELEMETRY, type ProcessRecord, type ServerTelemetry } from '../telemetry/api';

export interface SessionLimits {
  exitedProcessRetentionMs: number;
  maxRetainedBytesPerProcess: number;
  maxProcessesPerSession: number;
  /** Shared by every session of a server (ServerOptions.maxHeldProcesses, maxOutputWindowBytes). */
  budget?: ProcessBudget;
}

/**
 * What the processes of a whole server may hold: how many (live, or exited and still kept
 * readable, each with its retained output) and the sum of their output windows (unacknowledged
 * output stays retained). Taken when an id is reserved, given back when the process is forgotten.
 */
export class ProcessBudget {
  private readonly held = new Map<object, number>();
  private windows = 0;

  constructor(
    readonly maxHeld = Infinity,
    readonly maxWindowBytes = Infinity,
  ) {}

  take(proc: object, window: number): void {
    if (this.held.size >= this.maxHeld) {
      throw invalidRequest(`too many processes held by this server (limit ${this.maxHeld}: live ones and exited ones still readable); wait for some to exit and be read`);
    }
    if (window > 0 && this.windows + window > this.maxWindowBytes) {
      throw invalidRequest(
        `outputWindow of ${window} bytes does not fit this server's budget for unacknowledged output (${this.maxWindowBytes} bytes, ${this.windows} in use): acknowledge output (process/ack) or ask for a smaller window`,
      );
    }
    this.held.set(proc, window);
    this.windows += window;
  }

  drop(proc: object): void {
    const w = this.held.get(proc);
    if (w === undefined) return;
    this.held.delete(proc);
    this.windows -= w;
  }

  get inUse(): { processes: number; windowBytes: number } {
    return { processes: this.held.size, windowBytes: this.windows };
  }
}

export class Session implements ProcessHost {
  readonly id = randomUUID();
  private readonly processes = new Map<string, ManagedProcess>();
  private readonly retentionTimers = new Map<ManagedProcess, ReturnType<typeof setTimeout>>();
  private sink: NotificationSink | undefined;
  /** Opaque owner token of the attached connection (undefined = detached). */
  attachedTo: object | undefined;
  /** Ends a detached session unless it is resumed first (set by detach, cleared by attach/end). */
  private ttlTimer: ReturnType<typeof setTimeout> | undefined;
  private drainSub: { dispose(): void } | undefined;
  /**
   * Did the last attached client opt in to flow control? Kept while detached: a flow-controlled
   * child stays blocked (nothing is lost: its retention holds its window and more, so the resuming
   * client re-reads every unacknowledged byte) until the client resumes or the TTL ends the
   * session. A client that resumes without opting in (an older one) lifts every window.
   */
  private flowControl = false;
  ended = false;
  /** process/start.shellSnapshot's captures (./process/shell-snapshot.ts): per session, as on the reference. */
  readonly shellSnapshots = new ShellSnapshots();
  /** Telemetry of live processes by id (start → exit); empty while telemetry is off. */
  private readonly processTelemetry = new Map<string, ProcessRecord>();

  constructor(
    private readonly limits: SessionLimits,
    private readonly telemetry: ServerTelemetry = NOOP_SERVER_TELEMETRY,
  ) {}

  /** Follows a process/start until the process exits; false if `id` is already followed. */
  trackProcess(id: string, record: ProcessRecord): boolean {
    if (this.processTelemetry.has(id)) return false;
    this.processTelemetry.set(id, record);
    return true;
  }
  untrackProcess(id: string, record: ProcessRecord): void {
    if (this.processTelemetry.get(id) === record) this.processTelemetry.delete(id);
  }

  /** Process events seen by telemetry, attached or not (an exit after the session ended counts too). */
  private observe<M extends NotificationMethod>(method: M, params: NotificationMap[M]): void {
    if (method === 'process/exited') {
      const p = params as NotificationMap['process/exited'];
      const rec = this.processTelemetry.get(p.processId);
      if (!rec) return;
      this.processTelemetry.delete(p.processId);
      rec.exited(p.exitCode, p.sandboxDenied);
    }
  }

  /** `flowControl`: the connection's client opted in (process/ack); windows are enforced while it is true. */
  attach(owner: object, sink: NotificationSink, flowControl = false): void {
    this.attachedTo = owner;
    this.sink = sink;
    this.flowControl = flowControl;
    for (const p of this.processes.values()) p.setFlowEnforced(flowControl);
    if (this.ttlTimer) clearTimeout(this.ttlTimer);
    this.ttlTimer = undefined;
  }

  /** The connection went away: keep the processes for `ttlMs`, then `expire` unless resumed. */
  detach(ttlMs: number, expire: () => void): void {
    this.attachedTo = undefined;
    this.sink = undefined;
    this.resumeAll(); // while detached, output keeps flowing into retention
    this.ttlTimer = setTimeout(expire, ttlMs);
    this.ttlTimer.unref?.();
  }

  /**
   * A request to the attached client (network/policyRequest). Rejects at once while detached,
   * after the end, or when that client cannot be asked: the caller's answer is then a deny.
   */
  requestClient(method: string, params: unknown, signal: AbortSignal): Promise<unknown> {
    const sink = this.sink;
    if (!sink?.request || this.ended) return Promise.reject(new Error('no client attached that can be asked'));
    return sink.request(method, params, signal);
  }

  // ------------------------------------------------------------ ProcessHost

  notify<M extends NotificationMethod>(method: M, params: NotificationMap[M]): void {
    if (this.telemetry.enabled) this.observe(method, params);
    const sink = this.sink;
    if (!sink || this.ended) return;
    try {
      sink.notify(method, params);
    } catch {
      // a failing sink must not break the process pipeline; the transport reports its own close
    }
    this.checkCongestion(sink);
  }

  output(processId: string, seq: number, stream: OutputStream, data: Buffer): void {
    const sink = this.sink;
    if (!sink || this.ended) return;
    if (this.telemetry.enabled) this.telemetry.processOutput(data.length);
    try {
      if (sink.processOutput) {
        // A sink that may keep the Buffer without holding it (read-blocks.ts) gets it for good.
        if (!sink.holdsRecycledOutput) donateChunk(data);
        sink.processOutput(processId, seq, stream, data);
      }
      // Marked: the transport splices this base64 into the frame without a JSON escape scan.
      else sink.notify('process/output', markVerbatim({ processId, seq, stream, chunk: data.toString('base64') }, 'chunk'));
    } catch {
      // as in notify()
    }
    this.checkCongestion(sink);
  }

  private checkCongestion(sink: NotificationSink): void {
    // Backpressure: stop reading children while the peer cannot take more.
    if (!this.drainSub && sink.onDrain && sink.isCongested?.()) {
      for (const p of this.processes.values()) p.pauseOutput();
      let drained = false;
      const sub = sink.onDrain(() => {
        drained = true;
        this.resumeAll();
      });
      // A sink may report the drain synchronously: then there is nothing to wait for.
      if (drained) sub.dispose();
      else this.drainSub = sub;
    }
  }

  closed(proc: ManagedProcess): void {
    if (this.ended) return;
    // Keep it readable (and its id reserved) for a while, then forget it.
    const t = setTimeout(() => {
      this.retentionTimers.delete(proc);
      if (this.processes.get(proc.id) === proc) this.processes.delete(proc.id);
      this.limits.budget?.drop(proc);
      proc.dispose();
    }, this.limits.exitedProcessRetentionMs);
    t.unref?.();
    this.retentionTimers.set(proc, t);
  }

  private resumeAll(): void {
    this.drainSub?.dispose();
    this.drainSub = undefined;
    for (const p of this.processes.values()) p.resumeOutput();
  }

  // ------------------------------------------------------------ processes

  get(id: string): ManagedProcess | undefined {
    return this.processes.get(id);
  }

  /** Reserves `id` synchronously (so a concurrent duplicate start fails), or throws; `window`: its outputWindow (0: none). */
  reserve(id: string, window = 0): ManagedProcess {
    if (this.ended) throw invalidRequest(Messages.unknownSession(this.id));
    if (this.processes.has(id)) throw invalidRequest(Messages.processExists(id));
    let live = 0;
    for (const p of this.processes.values()) if (!p.exited) live++;
    if (live >= this.limits.maxProcessesPerSession) {
      throw invalidRequest(`too many processes in this session (limit ${this.limits.maxProcessesPerSession})`);
    }
    const proc = new ManagedProcess(id, this, this.limits.maxRetainedBytesPerProcess);
    this.limits.budget?.take(proc, window);
    proc.setFlowEnforced(this.flowControl);
    if (this.drainSub) proc.pauseOutput();
    if (window > 0) proc.setWindow(window);
    this.processes.set(id, proc);
    return proc;
  }

  release(proc: ManagedProcess): void {
    this.limits.budget?.drop(proc);
    if (this.processes.get(proc.id) === proc) this.processes.delete(proc.id);
  }

  requireProcess(id: string): ManagedProcess {
    const p = this.processes.get(id);
    if (!p) throw new RpcError(ErrorCodes.InvalidRequest, Messages.unknownProcess(id));
    return p;
  }

  /** Ends the session: kills every process, clears timers. Returns "child gone" promises. */
  end(): Promise<void>[] {
    if (this.ended) return [];
    this.ended = true;
    this.shellSnapshots.dispose();
    if (this.ttlTimer) clearTimeout(this.ttlTimer);
    this.drainSub?.dispose();
    for (const t of this.retentionTimers.values()) clearTimeout(t);
    this.retentionTimers.clear();
    const waits: Promise<void>[] = [];
    for (const p of this.processes.values()) {
      this.limits.budget?.drop(p);
      p.dispose();
      waits.push(p.whenClosed);
    }
    this.processes.clear();
    this.sink = undefined;
    this.attachedTo = undefined;
    return waits;
  }

  get processCount(): number {
    return this.processes.size;
  }
}
