// A session owns processes; connections come and go. While attached, process events go to
// the attached connection's sink; while detached they only go to retention (process/read).
import { randomUUID } from 'node:crypto';
import { RpcError, ErrorCodes, Messages, invalidRequest } from '../protocol/errors';
import type { NotificationMap, NotificationMethod } from '../protocol/types';
import type { NotificationSink } from './api';
import { ManagedProcess, type ProcessHost } from './process/managed-process';

export interface SessionLimits {
  exitedProcessRetentionMs: number;
  maxRetainedBytesPerProcess: number;
  maxProcessesPerSession: number;
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
  ended = false;

  constructor(private readonly limits: SessionLimits) {}

  attach(owner: object, sink: NotificationSink): void {
    this.attachedTo = owner;
    this.sink = sink;
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

  // ------------------------------------------------------------ ProcessHost

  notify<M extends NotificationMethod>(method: M, params: NotificationMap[M]): void {
    const sink = this.sink;
    if (!sink || this.ended) return;
    try {
      sink.notify(method, params);
    } catch {
      // a failing sink must not break the process pipeline; the transport reports its own close
    }
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

  /** Reserves `id` synchronously (so a concurrent duplicate start fails), or throws. */
  reserve(id: string): ManagedProcess {
    if (this.ended) throw invalidRequest(Messages.unknownSession(this.id));
    if (this.processes.has(id)) throw invalidRequest(Messages.processExists(id));
    let live = 0;
    for (const p of this.processes.values()) if (!p.exited) live++;
    if (live >= this.limits.maxProcessesPerSession) {
      throw invalidRequest(`too many processes in this session (limit ${this.limits.maxProcessesPerSession})`);
    }
    const proc = new ManagedProcess(id, this, this.limits.maxRetainedBytesPerProcess);
    if (this.drainSub) proc.pauseOutput();
    this.processes.set(id, proc);
    return proc;
  }

  release(proc: ManagedProcess): void {
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
    if (this.ttlTimer) clearTimeout(this.ttlTimer);
    this.drainSub?.dispose();
    for (const t of this.retentionTimers.values()) clearTimeout(t);
    this.retentionTimers.clear();
    const waits: Promise<void>[] = [];
    for (const p of this.processes.values()) {
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
