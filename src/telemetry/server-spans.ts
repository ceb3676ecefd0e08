// The server's spans as plain records of our own, exported in batches through the SDK's OTLP
// exporter (which serializes them: http/protobuf or http/json, the same bytes the SDK's own spans
// would give). A request span through the SDK's Tracer cost a context, a sampler call, a SpanImpl
// with its limits and attribute validation, a processor chain and hex ids from Math.random; this
// record is a few fields set at start and end. What the exporter reads (attributes, times, the
// span context) is computed from them only when a batch is exported (docs/performance.md,
// "The latest numbers against the goals", telemetry row).
import { randomFillSync } from 'node:crypto';
import { SpanKind, SpanStatusCode, TraceFlags, type Attributes, type HrTime, type Link, type SpanContext, type SpanStatus, type TraceState } from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanExporter, TimedEvent } from '@opentelemetry/sdk-trace-base';
import type { RequestId } from '../protocol/types';

/** Longest string attribute value recorded from the wire (a client may send any string). */
export const MAX_ATTRIBUTE_CHARS = 128;

/** The attributes a server span derives from its method and request id: rpc.system, rpc.method, rpc.jsonrpc.request_id. */
export const RPC_KEYS = ['rpc.system', 'rpc.method', 'rpc.jsonrpc.request_id'] as const;

const NO_LINKS: Link[] = [];
const NO_EVENTS: TimedEvent[] = [];

/** performance.timeOrigin as [seconds, nanoseconds]; a span's times are offsets from it. */
const ORIGIN_MS = performance.timeOrigin;

const ORIGIN_S = Math.trunc(ORIGIN_MS / 1000);
const ORIGIN_NS = Math.round((ORIGIN_MS - ORIGIN_S * 1000) * 1e6);

/** A performance.now() reading as an absolute HrTime (as the SDK computes it: origin + offset). */
export function hrTimeOf(nowMs: number): HrTime {
  const nowS = Math.trunc(nowMs / 1000);
  const nowNs = Math.round((nowMs - nowS * 1000) * 1e6);
  let s = ORIGIN_S + nowS;
  let ns = ORIGIN_NS + nowNs;
  if (ns >= 1e9) {
    s += 1;
    ns -= 1e9;
  }
  return [s, ns];
}

/**
 * Random span and trace ids: hex slices of a pool of crypto random bytes, refilled when used up
 * (one randomFillSync per 256 span ids instead of two Math.random() calls and a Buffer write per id).
 */
class IdPool {
  private readonly pool = Buffer.allocUnsafe(4096);
  private at = this.pool.length;
  private take(n: number): string {
    if (this.at + n > this.pool.length) {
      randomFillSync(this.pool);
      this.at = 0;
    }
    const start = this.at;
    this.at += n;
    // An all-zero id is invalid (W3C): vanishingly rare, but never emitted.
    let zero = true;
    for (let i = start; i < start + n; i++) if (this.pool[i] !== 0) zero = false;
    if (zero) this.pool[start + n - 1] = 1;
    return this.pool.toString('hex', start, start + n);
  }
  spanId(): string {
    return this.take(8);
  }
  traceId(): string {
    return this.take(16);
  }
}

export const ids = new IdPool();

/** Where a record's exporter-facing fields come from (shared by every record of one server). */
export interface SpanOwner {
  readonly resource: Resource;
  readonly scope: InstrumentationScope;
  ended(span: SpanRecord): void;
}

/**
 * One span, ReadableSpan-shaped for the SDK's exporters. The request path sets only its fields;
 * `attributes`, the times and `spanContext()` are built when the exporter reads them.
 */
export class SpanRecord implements ReadableSpan {
  readonly spanId = ids.spanId();
  readonly startMs = performance.now();
  endMs = -1;
  statusCode: SpanStatusCode = SpanStatusCode.UNSET;
  statusMessage: string | undefined;
  /** Attributes beyond the ones the record's kind derives (rpc.*): set after the start. */
  extra: Attributes | undefined;
  private ctx: SpanContext | undefined;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  readonly links = NO_LINKS;
  readonly events = NO_EVENTS;

  constructor(
    private readonly owner: SpanOwner,
    readonly name: string,
    readonly kind: SpanKind,
    readonly traceId: string,
    readonly traceState: TraceState | undefined,
    readonly parentSpanContext: SpanContext | undefined,
    /** A server span's method and request id (its rpc.* attributes), undefined for a process span. */
    readonly method?: string,
    /**
     * Kept as received and turned into text only when exported: String() of a number goes
     * through V8's number-to-string cache, an old-generation table, so every request's id
     * string outlived a young collection and was promoted (docs/performance.md, "Telemetry cost").
     */
    readonly requestId?: RequestId,
  ) {}

  spanContext(): SpanContext {
    return (this.ctx ??= { traceId: this.traceId, spanId: this.spanId, traceFlags: TraceFlags.SAMPLED, traceState: this.traceState, isRemote: false });
  }

  setAttribute(key: string, value: string | number | boolean): void {
    (this.extra ??= {})[key] = value;
  }

  fail(code: number, message: string): void {
    this.setAttribute('rpc.jsonrpc.error_code', code);
    this.setAttribute('rpc.jsonrpc.error_message', message.slice(0, 256));
    this.setStatus(SpanStatusCode.ERROR, message.slice(0, 256));
  }

  setStatus(code: SpanStatusCode, message?: string): void {
    this.statusCode = code;
    this.statusMessage = message;
  }

  end(): void {
    if (this.endMs >= 0) return;
    this.endMs = performance.now();
    this.owner.ended(this);
  }

  /** rpc.method as recorded: the method cut to MAX_ATTRIBUTE_CHARS (undefined for a process span). */
  get rpcMethod(): string | undefined {
    return this.method === undefined || this.method.length <= MAX_ATTRIBUTE_CHARS ? this.method : this.method.slice(0, MAX_ATTRIBUTE_CHARS);
  }
  /** rpc.jsonrpc.request_id as recorded (cut to MAX_ATTRIBUTE_CHARS). */
  get rpcRequestId(): string | undefined {
    return this.requestId === undefined ? undefined : String(this.requestId).slice(0, MAX_ATTRIBUTE_CHARS);
  }
  get attributes(): Attributes {
    const method = this.rpcMethod;
    if (method === undefined) return this.extra ?? {};
    const a: Attributes = { [RPC_KEYS[0]]: 'jsonrpc', [RPC_KEYS[1]]: method };
    const id = this.rpcRequestId;
    if (id !== undefined) a[RPC_KEYS[2]] = id;
    return this.extra ? Object.assign(a, this.extra) : a;
  }
  get startTime(): HrTime {
    return hrTimeOf(this.startMs);
  }
  get endTime(): HrTime {
    return hrTimeOf(this.endMs < 0 ? this.startMs : this.endMs);
  }
  get duration(): HrTime {
    const ms = Math.max(0, (this.endMs < 0 ? this.startMs : this.endMs) - this.startMs);
    const s = Math.trunc(ms / 1000);
    return [s, Math.round((ms - s * 1000) * 1e6)];
  }
  get ended(): boolean {
    return this.endMs >= 0;
  }
  get status(): SpanStatus {
    return this.statusMessage === undefined ? { code: this.statusCode } : { code: this.statusCode, message: this.statusMessage };
  }
  get resource(): Resource {
    return this.owner.resource;
  }
  get instrumentationScope(): InstrumentationScope {
    return this.owner.scope;
  }
}

export interface BatchOptions {
  /** Spans held at most; more are dropped (OTEL_BSP_MAX_QUEUE_SIZE, default 2048). */
  maxQueue: number;
  /** Spans per export (OTEL_BSP_MAX_EXPORT_BATCH_SIZE, default 512). */
  maxBatch: number;
  /** Longest wait before a partial batch is exported, ms (OTEL_BSP_SCHEDULE_DELAY, default 5000). */
  delayMs: number;
}

function envInt(env: NodeJS.ProcessEnv, name: string, dflt: number): number {
  const v = Number(env[name]);
  return Number.isInteger(v) && v > 0 ? v : dflt;
}

/** The batch limits from the standard OTEL_BSP_* variables (the SDK's BatchSpanProcessor defaults). */
export function batchOptions(env: NodeJS.ProcessEnv = process.env): BatchOptions {
  const maxQueue = envInt(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048);
  return { maxQueue, maxBatch: Math.min(maxQueue, envInt(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512)), delayMs: envInt(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000) };
}

/**
 * Ended spans queued and exported in batches off the request path: a full batch is sent after
 * the current event-loop turn, a partial one after `delayMs`; one export in flight at a time.
 */
export class SpanBatcher implements SpanOwner {
  private queue: SpanRecord[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private immediate = false;
  private inFlight: Promise<void> | undefined;
  private stopped = false;
  /** Spans dropped because the queue was full. */
  dropped = 0;

  constructor(
    private readonly exporter: SpanExporter,
    readonly resource: Resource,
    readonly scope: InstrumentationScope,
    private readonly opts: BatchOptions = batchOptions(),
    private readonly onError: (message: string) => void = () => {},
  ) {}

  ended(span: SpanRecord): void {
    if (this.stopped) return;
    if (this.queue.length >= this.opts.maxQueue) {
      this.dropped++;
      return;
    }
    this.queue.push(span);
    if (this.queue.length >= this.opts.maxBatch) this.soon();
    else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.exportOne();
      }, this.opts.delayMs);
      this.timer.unref();
    }
  }

  private soon(): void {
    if (this.immediate || this.inFlight) return;
    this.immediate = true;
    setImmediate(() => {
      this.immediate = false;
      void this.exportOne();
    });
  }

  /** Exports up to one batch (waits for the export in flight first). */
  private async exportOne(): Promise<void> {
    while (this.inFlight) await this.inFlight;
    if (this.queue.length === 0) return;
    const batch = this.queue.length <= this.opts.maxBatch ? this.queue : this.queue.slice(0, this.opts.maxBatch);
    this.queue = batch === this.queue ? [] : this.queue.slice(this.opts.maxBatch);
    if (this.queue.length === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.inFlight = new Promise<void>((resolve) => {
      this.exporter.export(batch, (r) => {
        if (r.code !== 0) this.onError(`traces: export of ${batch.length} spans failed: ${r.error?.message ?? 'unknown error'}`);
        resolve();
      });
    }).finally(() => {
      this.inFlight = undefined;
      if (this.queue.length >= this.opts.maxBatch) this.soon();
      else if (this.queue.length > 0 && !this.timer && !this.stopped) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          void this.exportOne();
        }, this.opts.delayMs);
        this.timer.unref();
      }
    });
    await this.inFlight;
  }

  /** Exports everything queued. */
  async forceFlush(): Promise<void> {
    while (this.queue.length > 0 || this.inFlight) await this.exportOne();
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.exporter.shutdown();
  }
}
