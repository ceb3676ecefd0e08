// Client-side state of one process: orders output/exit/close events by seq, drops duplicates,
// and merges catch-up reads (process/read after a reconnect) with live notifications.
import { Emitter } from '../rpc/event';
import type { OutputStream, ProcessReadResult, WriteStatus } from '../protocol/types';
import type { OutputEvent, ProcessHandle } from './api';

export type ProcessEvent =
  | { kind: 'output'; seq: number; stream: OutputStream; data: Uint8Array }
  | { kind: 'exited'; seq: number; exitCode: number }
  | { kind: 'closed'; seq: number; error?: string };

/** What a handle needs from its client (kept narrow so the client owns all connection state). */
export interface ProcessOps {
  write(processId: string, data: Uint8Array): Promise<WriteStatus>;
  resize(processId: string, rows: number, cols: number): Promise<boolean>;
  closeStdin(processId: string): Promise<boolean>;
  interrupt(processId: string): Promise<void>;
  terminate(processId: string): Promise<boolean>;
  /** process/ack: `consumedBytes` of output consumed in total (fire and forget). */
  ack?(processId: string, consumedBytes: number): void;
  /** This process's consumer is behind and the server does not pause the process for it: hold the connection's inbound data. */
  holdIncoming?(processId: string, held: boolean): void;
}

/** Flow-control settings of one process (see StartProcessOptions). */
export interface FlowOptions {
  window: number;
  manualAck: boolean;
}

export class ClientProcess implements ProcessHandle {
  private readonly outputEmitter = new Emitter<OutputEvent>();
  private readonly exitEmitter = new Emitter<{ exitCode: number }>();
  private readonly closeEmitter = new Emitter<{ error?: string }>();
  /** True until process/start has been answered (recovery leaves such handles to startProcess). */
  starting = true;
  /** Highest seq delivered (or skipped as known) so far. */
  lastSeq = 0;
  private readonly outOfOrder = new Map<number, ProcessEvent>();
  private exitSeen = false;
  private closeSeen = false;
  private code: number | undefined;
  /** Events are held (ordered) until the handle is handed to the caller, so none is missed. */
  private held: ProcessEvent[] | undefined = [];
  private resolveExited!: (c: number) => void;
  private rejectExited!: (e: Error) => void;
  private resolveClosed!: () => void;
  /** Flow control: output bytes received in seq order, consumed, and the consumed total last acked. */
  private receivedBytes = 0;
  private consumedBytes = 0;
  private ackedBytes = 0;
  private flow: FlowOptions = { window: 0, manualAck: false };

  readonly onOutput = this.outputEmitter.event;
  readonly onExit = this.exitEmitter.event;
  readonly onClose = this.closeEmitter.event;
  readonly exited: Promise<number>;
  readonly closed: Promise<void>;

  constructor(
    readonly processId: string,
    private readonly ops: ProcessOps,
  ) {
    this.exited = new Promise<number>((res, rej) => {
      this.resolveExited = res;
      this.rejectExited = rej;
    });
    this.exited.catch(() => {}); // observed through onClose's error too
    this.closed = new Promise<void>((res) => (this.resolveClosed = res));
  }

  get exitCode(): number | undefined {
    return this.code;
  }
  get outputWindow(): number {
    return this.flow.window;
  }

  /** Set by the client once it knows whether the server enforces a window for this process. */
  setFlow(flow: FlowOptions): void {
    this.flow = flow;
  }

  holdIncoming(held: boolean): void {
    this.ops.holdIncoming?.(this.processId, held && !this.closeSeen);
  }

  acknowledge(bytes: number): void {
    if (!this.flow.manualAck || !(bytes > 0)) return;
    this.consume(bytes);
  }

  /**
   * Counts consumed bytes (never beyond what arrived) and acks in steps of a quarter window:
   * a full window on the server means the client has received ≥ a window since the last ack,
   * so once it is consumed an ack is always sent — the process cannot stall on the client.
   */
  private consume(bytes: number): void {
    if (this.flow.window <= 0 || this.closeSeen) return;
    this.consumedBytes = Math.min(this.receivedBytes, this.consumedBytes + bytes);
    if (this.consumedBytes - this.ackedBytes >= Math.max(1, this.flow.window / 4)) {
      this.ackedBytes = this.consumedBytes;
      this.ops.ack?.(this.processId, this.consumedBytes);
    }
  }
  get isClosed(): boolean {
    return this.closeSeen;
  }

  /**
   * An adopted process (client.adoptProcess): seqs through `seq` are history this handle will
   * not see, and `byteOffset` output bytes precede what it receives (the flow-control count).
   */
  adoptAt(seq: number, byteOffset: number): void {
    if (this.lastSeq >= seq || this.receivedBytes > 0) return;
    this.lastSeq = seq;
    for (const k of [...this.outOfOrder.keys()]) if (k <= seq) this.outOfOrder.delete(k);
    this.receivedBytes = this.consumedBytes = this.ackedBytes = byteOffset;
  }

  /** Starts emitting (on the next macrotask, so `await startProcess()` callers can subscribe). */
  release(): void {
    setImmediate(() => {
      const held = this.held ?? [];
      this.held = undefined;
      for (const e of held) this.emit(e);
    });
  }

  /** A live notification: deliver in seq order, drop seq <= last seen. */
  deliver(ev: ProcessEvent): void {
    if (this.closeSeen || ev.seq <= this.lastSeq) return;
    if (ev.seq !== this.lastSeq + 1) {
      this.outOfOrder.set(ev.seq, ev);
      return;
    }
    this.accept(ev);
    this.drainOrdered();
  }

  /**
   * Merges a catch-up read (after a reconnect). Returns false if output was lost
   * (evicted from the server's retention) — the process then fails alone.
   */
  catchUp(reads: ProcessReadResult[]): boolean {
    if (this.closeSeen) return true;
    const before = this.lastSeq;
    const last = reads[reads.length - 1];
    const chunks = reads.flatMap((r) => r.chunks).filter((c) => c.seq > before);
    chunks.sort((a, b) => a.seq - b.seq);
    // Sorted, so the last chunk has the highest seq (a spread of every seq could exceed the argument limit).
    const upTo = Math.max(before, last.nextSeq - 1, chunks.length ? chunks[chunks.length - 1].seq : before);
    // Seqs in (before, upTo] not covered by chunks must be exit/close events.
    const seen = new Set(chunks.map((c) => c.seq));
    for (const [seq, ev] of this.outOfOrder) if (seq <= upTo && ev.kind !== 'output') seen.add(seq);
    let missing = 0;
    for (let s = before + 1; s <= upTo; s++) if (!seen.has(s)) missing++;
    const explainable = (last.exited && !this.exitSeen ? 1 : 0) + (last.closed && !this.closeSeen ? 1 : 0);
    for (const c of chunks) {
      if (c.seq <= this.lastSeq) continue;
      this.accept({ kind: 'output', seq: c.seq, stream: c.stream, data: Buffer.from(c.chunk, 'base64') });
    }
    if (missing > explainable) {
      this.fail(`output of process ${this.processId} was lost while reconnecting (evicted from the server)`);
      return false;
    }
    if (last.exited && !this.exitSeen) this.accept({ kind: 'exited', seq: this.lastSeq, exitCode: last.exitCode ?? -1 });
    this.lastSeq = Math.max(this.lastSeq, upTo);
    for (const seq of [...this.outOfOrder.keys()]) if (seq <= this.lastSeq) this.outOfOrder.delete(seq);
    this.drainOrdered();
    if (last.closed && !this.closeSeen) this.accept({ kind: 'closed', seq: this.lastSeq });
    return true;
  }

  /** The process cannot be followed any more (connection failed, output lost). */
  fail(error: string): void {
    if (this.closeSeen) return;
    this.closeSeen = true;
    this.outOfOrder.clear();
    this.push({ kind: 'closed', seq: this.lastSeq }, error);
  }

  write(data: Uint8Array | string): Promise<WriteStatus> {
    return this.ops.write(this.processId, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
  }
  resize(rows: number, cols: number): Promise<boolean> {
    return this.ops.resize(this.processId, rows, cols);
  }
  closeStdin(): Promise<boolean> {
    return this.ops.closeStdin(this.processId);
  }
  interrupt(): Promise<void> {
    return this.ops.interrupt(this.processId);
  }
  terminate(): Promise<boolean> {
    return this.ops.terminate(this.processId);
  }

  private drainOrdered(): void {
    for (;;) {
      const next = this.outOfOrder.get(this.lastSeq + 1);
      if (!next || this.closeSeen) break;
      this.outOfOrder.delete(next.seq);
      this.accept(next);
    }
  }

  private accept(ev: ProcessEvent): void {
    this.lastSeq = Math.max(this.lastSeq, ev.seq);
    if (ev.kind === 'output') this.receivedBytes += ev.data.length;
    if (ev.kind === 'exited') {
      if (this.exitSeen) return;
      this.exitSeen = true;
      this.code = ev.exitCode;
    } else if (ev.kind === 'closed') {
      if (this.closeSeen) return;
      this.closeSeen = true;
      this.outOfOrder.clear();
    }
    this.push(ev);
  }

  private push(ev: ProcessEvent, error?: string): void {
    const e: ProcessEvent = error === undefined ? ev : { kind: 'closed', seq: ev.seq, error };
    if (this.held) this.held.push(e);
    else this.emit(e);
  }

  private emit(ev: ProcessEvent): void {
    switch (ev.kind) {
      case 'output':
        this.outputEmitter.fire({ seq: ev.seq, stream: ev.stream, data: ev.data });
        if (!this.flow.manualAck) this.consume(ev.data.length);
        return;
      case 'exited':
        this.exitEmitter.fire({ exitCode: ev.exitCode });
        this.resolveExited(ev.exitCode);
        return;
      case 'closed':
        if (ev.error !== undefined) {
          this.rejectExited(new Error(ev.error));
          this.closeEmitter.fire({ error: ev.error });
        } else {
          this.closeEmitter.fire({});
        }
        this.resolveClosed();
        this.outputEmitter.dispose();
        this.exitEmitter.dispose();
        this.closeEmitter.dispose();
        return;
    }
  }
}
