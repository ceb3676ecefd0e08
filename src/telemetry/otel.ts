// The OpenTelemetry implementation of the telemetry hooks (./api.ts). Loaded only when
// telemetry is turned on (./load.ts): with it off none of this — nor the SDK — is evaluated.
// Providers are private (never registered globally), so an embedding host (the VS Code
// extension host, an app using the client library) keeps its own OpenTelemetry setup. The
// server's spans are written by ./server-spans.ts without the SDK's trace modules; those are
// required only for client spans (./otel-client.ts) or the http/json encoding (./otlp-json.ts).
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
// Imported: Node's global `performance` is a lazy accessor, and every request's read of it ran its getter.
import { performance } from 'node:perf_hooks';
import { DiagLogLevel, diag, type Counter, type UpDownCounter } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { defaultResource, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { RequestId } from '../protocol/types';
import { VERSION } from '../version';
import type { CallError, ClientTelemetry, ProcessRecord, RejectReason, RequestRecord, ServerTelemetry } from './api';
import type { TelemetryConfig } from './config';
import { methodLabel, sandboxLabel } from './methods';
import type * as OtelClient from './otel-client';
import type * as OtlpJson from './otlp-json';
import { protoBatchExporter } from './otlp-proto';
import { RequestMeter } from './request-meter';
import { StartTimes } from './start-times';
import { KIND_INTERNAL, KIND_SERVER, STATUS_ERROR, ServerSpan, SpanBatcher } from './server-spans';
import { parseWireTrace, spanSampler, type SpanSampler } from './trace-context';

export type { OtelClientTelemetry } from './otel-client';

/** Set when this module is evaluated: tests check that telemetry off never loads it. */
(globalThis as Record<symbol, unknown>)[Symbol.for('exec-server.telemetry.sdkLoaded')] = true;

type Log = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;

// Required on first use: esbuild keeps a require() inside a function lazy within the bundle.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const client = (): typeof OtelClient => require('./otel-client') as typeof OtelClient;

function resource(c: TelemetryConfig): Resource {
  // service.name / service.version (semantic conventions, by value: that package is 1 MiB of heap).
  return defaultResource().merge(resourceFromAttributes({ 'service.name': c.serviceName, 'service.version': VERSION }));
}

/** The server's traces: where its spans are written, and how they are sampled. */
interface ServerTraces {
  batcher: SpanBatcher;
  sampler: SpanSampler;
}

function serverTraces(c: TelemetryConfig, log: Log): ServerTraces | undefined {
  if (!c.traces) return undefined;
  const res = resource(c);
  const scope = { name: 'exec-server', version: VERSION };
  const exporter =
    c.traces.protocol === 'http/json'
      ? // eslint-disable-next-line @typescript-eslint/no-require-imports
        (require('./otlp-json') as typeof OtlpJson).jsonBatchExporter(c.traces.endpoint, res, scope)
      : protoBatchExporter(c.traces.endpoint);
  const batcher = new SpanBatcher(exporter, { resource: res.attributes, scope }, undefined, (m) => log('warn', m));
  return { batcher, sampler: spanSampler(c.sampler) };
}

/**
 * A sampled span, or undefined. A root (no valid `trace` member) is decided before anything is
 * made, so an unsampled request creates no span, ids or context; a request with a parent by the
 * sampler's rules for a remote parent.
 */
function startSpan(t: ServerTraces, name: string, kind: number, wireTrace: unknown, method?: string, requestId?: RequestId, startMs = performance.now()): ServerSpan | undefined {
  const parent = wireTrace === undefined || wireTrace === null ? undefined : parseWireTrace(wireTrace);
  if (parent === undefined) {
    const rate = t.sampler.rootRate;
    if (rate < 1 && !(Math.random() < rate)) return undefined;
    return new ServerSpan(t.batcher, name, kind, method, requestId, undefined, startMs);
  }
  if (!t.sampler.parented(parent)) return undefined;
  return new ServerSpan(t.batcher, name, kind, method, requestId, parent, startMs);
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
 * One request: its start time (a slot of the server's StartTimes), its span when sampled, its
 * metric series. The span's context (for a child process span) is made only when a process asks for it.
 */
class OtelRequest implements RequestRecord {
  private done = false;
  constructor(
    private readonly starts: StartTimes,
    /** The slot of its start time, performance.now() when it arrived (the span's start too: one clock reading at each end). */
    private readonly slot: number,
    /** Its span when traced and sampled; an unsampled request's processes are not traced either. */
    readonly span: ServerSpan | undefined,
    /** The request's metric series when it succeeds (RequestMeter.series; a failure is the next one). */
    private readonly series: number,
    private readonly meter: RequestMeter | undefined,
  ) {}
  end(error?: CallError): void {
    if (this.done) return;
    this.done = true;
    const t0 = this.starts.release(this.slot);
    const now = performance.now();
    if (this.span) {
      if (error) this.span.fail(error.code, error.message);
      this.span.end(now);
    }
    if (this.meter) this.meter.record(error === undefined ? this.series : this.series + 1, (now - t0) / 1000);
  }
}

class OtelProcess implements ProcessRecord {
  private state: 'starting' | 'running' | 'exited' | 'failed' = 'starting';
  private sandbox = 'none';
  constructor(
    private readonly span: ServerSpan | undefined,
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
      if (exitCode !== 0) this.span.setStatus(STATUS_ERROR, sandboxDenied ? 'sandbox denied' : `exit code ${exitCode}`);
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
  // The last method's label and series: requests come in runs of one method, and comparing the
  // wire's string with the last one costs less than hashing it twice (the label's set, the
  // meter's map), as every request did.
  let lastMethod: string | undefined;
  let lastLabel = 'other';
  let lastSeries = 0;
  const meter = inst?.meter;
  const starts = new StartTimes();
  return {
    enabled: true,
    metricsUrl,
    request(method: string, id: RequestId | undefined, wireTrace: unknown): RequestRecord {
      if (method !== lastMethod) {
        lastLabel = methodLabel(method);
        lastSeries = meter ? meter.series(lastLabel, false) : 0;
        lastMethod = method;
      }
      // Sampling is decided first: an unsampled request creates no span, ids or context.
      const t0 = performance.now();
      const span = traces ? startSpan(traces, lastLabel, KIND_SERVER, wireTrace, method, id, t0) : undefined;
      return new OtelRequest(starts, starts.take(t0), span, lastSeries, meter);
    },
    process(parent: RequestRecord): ProcessRecord {
      if (!traces) return new OtelProcess(undefined, inst);
      if (parent instanceof OtelRequest) {
        const p = parent.span;
        return new OtelProcess(p ? new ServerSpan(traces.batcher, 'process', KIND_INTERNAL, undefined, undefined, p) : undefined, inst);
      }
      return new OtelProcess(startSpan(traces, 'process', KIND_INTERNAL, undefined), inst);
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
        // Spans first (the batcher exports what it holds), then the metrics endpoint.
        await traces?.batcher.shutdown().catch((e: unknown) => log('warn', `traces: flush failed: ${e instanceof Error ? e.message : String(e)}`));
        // Said once, at the end, as the SDK's batch processor says it: a burst beyond the queue is dropped, never delayed.
        if (traces && traces.batcher.dropped > 0) log('warn', `traces: ${traces.batcher.dropped} spans dropped (queue of ${traces.batcher.maxQueue} full), ${traces.batcher.exported} exported`);
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

/** Client tracing exporting over OTLP (config.traces must be set); loads the SDK's trace modules. */
export function startClientTelemetry(c: TelemetryConfig): OtelClient.OtelClientTelemetry {
  return client().startClientTelemetry(c, resource(c));
}

/**
 * No spans of our own: each request carries the caller's active OpenTelemetry context, through
 * the globally registered propagator (for apps that set up their own OpenTelemetry SDK).
 */
export const activeContextTelemetry: ClientTelemetry = {
  call: (method) => client().activeContextTelemetry.call(method),
};
