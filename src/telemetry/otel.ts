// The OpenTelemetry implementation of the telemetry hooks (./api.ts). Loaded only when
// telemetry is turned on (./load.ts): with it off none of this — nor the SDK — is evaluated.
// Providers are private (never registered globally), so an embedding host (the VS Code
// extension host, an app using the client library) keeps its own OpenTelemetry setup.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DiagLogLevel,
  ROOT_CONTEXT,
  SpanKind,
  diag,
  SpanStatusCode,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Counter,
  type Span,
  type Tracer,
  type UpDownCounter,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { defaultResource, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  SamplingDecision,
  type SpanExporter,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { RequestId, TraceContext } from '../protocol/types';
import { VERSION } from '../version';
import type { CallError, ClientCall, ClientTelemetry, ProcessRecord, RejectReason, RequestRecord, ServerTelemetry } from './api';
import type { TelemetryConfig } from './config';
import { methodLabel, sandboxLabel } from './methods';
import { RequestMeter } from './request-meter';
import { protoSpanExporter } from './otlp-proto';
import { SpanBatcher, SpanRecord, ids } from './server-spans';

/** Set when this module is evaluated: tests check that telemetry off never loads it. */
(globalThis as Record<symbol, unknown>)[Symbol.for('exec-server.telemetry.sdkLoaded')] = true;

type Log = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;

/** Longest method name recorded on a span (a client may send any string). */
const MAX_METHOD_CHARS = 128;
/** Longest traceparent/tracestate considered (W3C: 55 and 512 chars). */
const MAX_TRACE_CHARS = 1024;

const propagator = new W3CTraceContextPropagator();

function sampler(c: TelemetryConfig['sampler']): Sampler {
  switch (c.name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(c.ratio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(c.ratio) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * The probability that a request without a parent trace context starts a sampled trace, when
 * the sampler decides such a root by ratio alone (every sampler but always_on and
 * parentbased_always_on): the request path then decides by itself and, for a root it does not
 * sample, creates no span at all (the SDK would create a non-recording span, its ids and a
 * context for nothing). A trace ID ratio sampler's decision is a deterministic function of a
 * trace ID that, for a root, is itself random: deciding first with Math.random() samples the
 * same fraction. Requests with a parent still go through the SDK's sampler.
 */
function rootSampleRate(c: TelemetryConfig['sampler']): number | undefined {
  switch (c.name) {
    case 'always_off':
    case 'parentbased_always_off':
      return 0;
    case 'traceidratio':
    case 'parentbased_traceidratio':
      return c.ratio;
    default:
      return undefined;
  }
}

/**
 * Hands ended spans to the BatchSpanProcessor after the current event-loop turn, not inside
 * `span.end()`: the batch processor serializes and sends a full batch (512 spans) synchronously
 * in the `end` that filled it, which put the whole export on one request's path.
 */
class DeferredSpanProcessor implements SpanProcessor {
  private pending: ReadableSpan[] = [];
  private scheduled = false;
  constructor(private readonly next: BatchSpanProcessor) {}
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    // The batch processor keeps at most 2048 spans and drops the rest; so does this queue.
    if (this.pending.length >= 2048) return;
    this.pending.push(span);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.drain());
    }
  }
  private drain(): void {
    this.scheduled = false;
    const spans = this.pending;
    this.pending = [];
    for (const span of spans) this.next.onEnd(span);
  }
  forceFlush(): Promise<void> {
    this.drain();
    return this.next.forceFlush();
  }
  shutdown(): Promise<void> {
    this.drain();
    return this.next.shutdown();
  }
}

function resource(c: TelemetryConfig): Resource {
  return defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: c.serviceName, [ATTR_SERVICE_VERSION]: VERSION }));
}

function traceExporter(traces: NonNullable<TelemetryConfig['traces']>): SpanExporter {
  return traces.protocol === 'http/json' ? new OtlpJsonExporter({ url: traces.endpoint }) : new OtlpProtoExporter({ url: traces.endpoint });
}

/** A tracer provider exporting over OTLP/HTTP (client spans), or undefined when traces are off. */
function tracerProvider(c: TelemetryConfig): BasicTracerProvider | undefined {
  if (!c.traces) return undefined;
  return new BasicTracerProvider({ resource: resource(c), sampler: sampler(c.sampler), spanProcessors: [new DeferredSpanProcessor(new BatchSpanProcessor(traceExporter(c.traces)))] });
}

/**
 * The server's traces: span records of our own (./server-spans.ts) and their sampling decision.
 * A root is decided here (by ratio, or always/never); a request with a parent trace context
 * goes through the SDK's sampler for the configured name, so parent-based and ratio semantics
 * are the SDK's own.
 */
interface ServerTraces {
  batcher: SpanBatcher;
  /** Probability that a root is sampled (1 for always_on, parentbased_always_on). */
  rootRate: number;
  sampler: Sampler;
}

function serverTraces(c: TelemetryConfig, log: Log): ServerTraces | undefined {
  if (!c.traces) return undefined;
  // Protobuf with our serializer (./otlp-proto.ts); JSON (a debugging format) through the SDK's.
  const exporter = c.traces.protocol === 'http/json' ? traceExporter(c.traces) : protoSpanExporter(c.traces.endpoint);
  const batcher = new SpanBatcher(exporter, resource(c), { name: 'exec-server', version: VERSION }, undefined, (m) => log('warn', m));
  return { batcher, rootRate: rootSampleRate(c.sampler) ?? 1, sampler: sampler(c.sampler) };
}

/** A sampled span for `name`, or undefined; `parent` is the wire trace context's (ROOT_CONTEXT when none). */
function startSpan(t: ServerTraces, name: string, kind: SpanKind, parent: Context, method?: string, requestId?: RequestId): SpanRecord | undefined {
  const psc = parent === ROOT_CONTEXT ? undefined : trace.getSpanContext(parent);
  if (!psc) {
    if (t.rootRate < 1 && !(Math.random() < t.rootRate)) return undefined;
    return new SpanRecord(t.batcher, name, kind, ids.traceId(), undefined, undefined, method, requestId);
  }
  if (t.sampler.shouldSample(parent, psc.traceId, name, kind, {}, []).decision !== SamplingDecision.RECORD_AND_SAMPLED) return undefined;
  return new SpanRecord(t.batcher, name, kind, psc.traceId, psc.traceState, psc, method, requestId);
}

/** The parent context of a wire `trace` member; anything malformed is ignored (a new root). */
export function extractTrace(t: unknown): Context {
  if (t === null || typeof t !== 'object' || Array.isArray(t)) return ROOT_CONTEXT;
  const { traceparent, tracestate } = t as Record<string, unknown>;
  if (typeof traceparent !== 'string' || traceparent.length > MAX_TRACE_CHARS) return ROOT_CONTEXT;
  const carrier: Record<string, string> = { traceparent };
  if (typeof tracestate === 'string' && tracestate.length <= MAX_TRACE_CHARS) carrier.tracestate = tracestate;
  return propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
}

/** The wire `trace` member for a context (undefined when it holds no valid span context). */
export function injectTrace(ctx: Context): TraceContext | undefined {
  const carrier: Record<string, string> = {};
  propagator.inject(ctx, carrier, defaultTextMapSetter);
  if (!carrier.traceparent) return undefined;
  return carrier.tracestate ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate } : { traceparent: carrier.traceparent };
}

function failSpan(span: Span, e: CallError): void {
  span.setAttribute('rpc.jsonrpc.error_code', e.code);
  span.setAttribute('rpc.jsonrpc.error_message', e.message.slice(0, 256));
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message.slice(0, 256) });
}

interface Instruments {
  /** Requests, their durations and process output bytes (recorded without the SDK on the request path). */
  meter: RequestMeter;
  connections: UpDownCounter;
  sessions: UpDownCounter;
  processes: UpDownCounter;
  processesStarted: Counter;
  processesExited: Counter;
  rejected: Counter;
}

function instruments(mp: MeterProvider, meter: RequestMeter): Instruments {
  const m = mp.getMeter('exec-server', VERSION);
  return {
    meter,
    connections: m.createUpDownCounter('exec_server_connections', { description: 'Open client connections' }),
    sessions: m.createUpDownCounter('exec_server_sessions', { description: 'Live sessions (attached or detached)' }),
    processes: m.createUpDownCounter('exec_server_processes', { description: 'Running processes' }),
    processesStarted: m.createCounter('exec_server_processes_started', { description: 'Processes started, by sandbox type' }),
    processesExited: m.createCounter('exec_server_processes_exited', { description: 'Processes exited, by outcome (success, failure, sandbox_denied)' }),
    rejected: m.createCounter('exec_server_connections_rejected', { description: 'Connections refused before JSON-RPC, by reason (401, 403, limit, other)' }),
  };
}

/**
 * One request: its start time, its span when sampled, its metric series. The span's context
 * (for a child process span) is made only when a process asks for it.
 */
class OtelRequest implements RequestRecord {
  private readonly t0 = performance.now();
  private done = false;
  constructor(
    /** Its span when traced and sampled; an unsampled request's processes are not traced either. */
    readonly span: SpanRecord | undefined,
    private readonly label: string,
    private readonly inst: Instruments | undefined,
  ) {}
  end(error?: CallError): void {
    if (this.done) return;
    this.done = true;
    if (this.span) {
      if (error) this.span.fail(error.code, error.message);
      this.span.end();
    }
    if (this.inst) this.inst.meter.record(this.inst.meter.series(this.label, error !== undefined), (performance.now() - this.t0) / 1000);
  }
}

class OtelProcess implements ProcessRecord {
  private state: 'starting' | 'running' | 'exited' | 'failed' = 'starting';
  private sandbox = 'none';
  constructor(
    private readonly span: SpanRecord | undefined,
    private readonly inst: Instruments | undefined,
  ) {}
  started(sandboxType: string): void {
    this.sandbox = sandboxLabel(sandboxType);
    this.span?.setAttribute('exec_server.sandbox_type', this.sandbox);
    this.inst?.processesStarted.add(1, { sandbox: this.sandbox });
    if (this.state === 'starting') {
      this.state = 'running';
      this.inst?.processes.add(1);
    }
  }
  failed(error: CallError): void {
    if (this.state !== 'starting') return;
    this.state = 'failed';
    if (this.span) {
      this.span.fail(error.code, error.message);
      this.span.end();
    }
  }
  exited(exitCode: number, sandboxDenied: boolean): void {
    if (this.state === 'exited' || this.state === 'failed') return;
    if (this.state === 'running') this.inst?.processes.add(-1);
    this.state = 'exited';
    const outcome = sandboxDenied ? 'sandbox_denied' : exitCode === 0 ? 'success' : 'failure';
    this.inst?.processesExited.add(1, { outcome });
    if (this.span) {
      this.span.setAttribute('process.exit.code', exitCode);
      this.span.setAttribute('exec_server.sandbox_denied', sandboxDenied);
      if (exitCode !== 0) this.span.setStatus(SpanStatusCode.ERROR, sandboxDenied ? 'sandbox denied' : `exit code ${exitCode}`);
      this.span.end();
    }
  }
}

export interface OtelServerTelemetry extends ServerTelemetry {
  /** http://host:port/metrics when the Prometheus endpoint is on. */
  readonly metricsUrl: string | undefined;
}

/** Starts the configured exporters (traces over OTLP, metrics on a Prometheus endpoint). */
export async function startServerTelemetry(c: TelemetryConfig, log: Log = () => {}, opts: { diagnostics?: boolean } = {}): Promise<OtelServerTelemetry> {
  if (opts.diagnostics) {
    // The SDK reports export failures (collector unreachable...) through its global diag logger;
    // only a process that owns its OpenTelemetry setup (the CLI) installs one.
    const fmt = (m: string, args: unknown[]) => [m, ...args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : JSON.stringify(a)))].join(' ');
    diag.setLogger(
      {
        error: (m, ...a) => log('warn', `telemetry: ${fmt(m, a)}`),
        warn: (m, ...a) => log('warn', `telemetry: ${fmt(m, a)}`),
        info: (m, ...a) => log('debug', `telemetry: ${fmt(m, a)}`),
        debug: () => {},
        verbose: () => {},
      },
      { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
    );
  }
  const traces = serverTraces(c, log);
  let mp: MeterProvider | undefined;
  let inst: Instruments | undefined;
  let metricsServer: http.Server | undefined;
  let metricsUrl: string | undefined;
  if (c.metrics) {
    // The exporter renders; the HTTP server is ours: it can bind port 0 and report the bound port.
    const res = resource(c);
    const meter = new RequestMeter(res);
    const exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true, metricProducers: [meter] });
    mp = new MeterProvider({ resource: res, readers: [exporter] });
    inst = instruments(mp, meter);
    const server = http.createServer((req, res) => {
      if (req.method === 'GET' && (req.url ?? '/').split('?')[0] === '/metrics') exporter.getMetricsRequestHandler(req, res);
      else res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found (metrics are at /metrics)\n');
    });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(c.metrics!.port, c.metrics!.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (e) {
      await mp.shutdown().catch(() => {});
      await traces?.batcher.shutdown().catch(() => {});
      throw new Error(`cannot serve Prometheus metrics on ${c.metrics.host}:${c.metrics.port}: ${(e as Error).message}`);
    }
    server.on('error', (e) => log('error', `metrics endpoint: ${e.message}`));
    server.unref();
    metricsServer = server;
    const a = server.address() as AddressInfo;
    metricsUrl = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}/metrics`;
    log('info', `metrics: Prometheus endpoint ${metricsUrl}`);
  }
  if (c.traces) log('info', `traces: OTLP ${c.traces.protocol} to ${c.traces.endpoint} (service.name ${c.serviceName}, sampler ${c.sampler.name})`);
  return serverTelemetry(traces, mp, inst, metricsServer, metricsUrl, log);
}

/** Server spans only (no metrics endpoint), created synchronously: the extension's in-process server. */
export function createServerTracing(c: TelemetryConfig, log: Log = () => {}): OtelServerTelemetry {
  return serverTelemetry(serverTraces(c, log), undefined, undefined, undefined, undefined, log);
}

function serverTelemetry(
  traces: ServerTraces | undefined,
  mp: MeterProvider | undefined,
  inst: Instruments | undefined,
  metricsServer: http.Server | undefined,
  metricsUrl: string | undefined,
  log: Log,
): OtelServerTelemetry {
  let stopped: Promise<void> | undefined;
  return {
    enabled: true,
    metricsUrl,
    request(method: string, id: RequestId | undefined, wireTrace: unknown): RequestRecord {
      const label = methodLabel(method);
      if (!traces) return new OtelRequest(undefined, label, inst);
      // Sampling is decided first: an unsampled request creates no span, attribute or context.
      // The rpc.* attributes are derived from the method and id only when a batch is exported.
      const parent = wireTrace === undefined || wireTrace === null ? ROOT_CONTEXT : extractTrace(wireTrace);
      return new OtelRequest(startSpan(traces, label, SpanKind.SERVER, parent, method, id), label, inst);
    },
    process(parent: RequestRecord): ProcessRecord {
      if (!traces) return new OtelProcess(undefined, inst);
      if (parent instanceof OtelRequest) {
        const p = parent.span;
        return new OtelProcess(p ? new SpanRecord(traces.batcher, 'process', SpanKind.INTERNAL, p.traceId, p.traceState, p.spanContext()) : undefined, inst);
      }
      return new OtelProcess(startSpan(traces, 'process', SpanKind.INTERNAL, ROOT_CONTEXT), inst);
    },
    processOutput(bytes: number): void {
      inst?.meter.addOutput(bytes);
    },
    connectionOpened: () => inst?.connections.add(1),
    connectionClosed: () => inst?.connections.add(-1),
    sessionOpened: () => inst?.sessions.add(1),
    sessionEnded: () => inst?.sessions.add(-1),
    connectionRejected: (reason: RejectReason) => inst?.rejected.add(1, { reason }),
    shutdown(): Promise<void> {
      stopped ??= (async () => {
        // Spans first (the BatchSpanProcessor exports what it holds), then the metrics endpoint.
        await traces?.batcher.shutdown().catch((e: unknown) => log('warn', `traces: flush failed: ${e instanceof Error ? e.message : String(e)}`));
        await mp?.shutdown().catch(() => {});
        if (metricsServer) {
          const s = metricsServer;
          s.closeAllConnections?.();
          await new Promise<void>((r) => s.close(() => r()));
        }
      })();
      return stopped;
    },
  };
}

/** Client spans (kind CLIENT, named after the method) whose context each request carries. */
export class OtelClientTelemetry implements ClientTelemetry {
  private readonly tracer: Tracer;
  constructor(
    private readonly provider: BasicTracerProvider,
    private readonly attributes: Attributes = {},
  ) {
    this.tracer = provider.getTracer('exec-server-client', VERSION);
  }
  call(method: string): ClientCall {
    const parent = context.active();
    const span = this.tracer.startSpan(
      methodLabel(method),
      { kind: SpanKind.CLIENT, attributes: { 'rpc.system': 'jsonrpc', 'rpc.method': method.slice(0, MAX_METHOD_CHARS), ...this.attributes } },
      parent,
    );
    return {
      trace: injectTrace(trace.setSpan(parent, span)),
      end(error?: CallError) {
        if (error) failSpan(span, error);
        span.end();
      },
    };
  }
  /** The same tracer with extra attributes on every span (e.g. the environment's name). */
  withAttributes(attributes: Attributes): OtelClientTelemetry {
    return new OtelClientTelemetry(this.provider, { ...this.attributes, ...attributes });
  }
  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

/** Client tracing exporting over OTLP (config.traces must be set). */
export function startClientTelemetry(c: TelemetryConfig): OtelClientTelemetry {
  const tp = tracerProvider(c);
  if (!tp) throw new Error('client telemetry needs an OTLP trace endpoint');
  return new OtelClientTelemetry(tp);
}

/**
 * No spans of our own: each request carries the caller's active OpenTelemetry context, through
 * the globally registered propagator (for apps that set up their own OpenTelemetry SDK).
 */
export const activeContextTelemetry: ClientTelemetry = {
  call() {
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    const t: TraceContext | undefined = carrier.traceparent
      ? carrier.tracestate
        ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate }
        : { traceparent: carrier.traceparent }
      : undefined;
    return { trace: t, end() {} };
  },
};
