// The extension's request telemetry, free of `vscode` (testable in plain Node): per-environment
// request statistics (always kept, in memory, for "Show Request Statistics"), and — only when
// the user set an OTLP endpoint — OpenTelemetry client spans for every environment plus server
// spans of the in-process Local server, exported to that endpoint. The SDK is loaded only then.
import type { ClientTelemetry, ServerTelemetry } from '../../telemetry/api';
import { combineClientTelemetry, NOOP_SERVER_TELEMETRY } from '../../telemetry/api';
import { telemetryConfig, type TelemetryConfig } from '../../telemetry/config';
import { otel } from '../../telemetry/load';
import type * as Otel from '../../telemetry/otel';
import { formatStats, RequestStats } from '../../telemetry/request-stats';

export interface TelemetrySettings {
  /** OTLP/HTTP base URL ('' = traces off). */
  otlpEndpoint: string;
  otlpProtocol: 'http/protobuf' | 'http/json';
}

type Log = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;

export class RequestTelemetry {
  private readonly stats = new Map<string, RequestStats>();
  private tracing: { key: string; client: Otel.OtelClientTelemetry; server?: ServerTelemetry } | undefined;
  /** Tracings replaced by a settings change: connections made before keep using theirs until deactivation. */
  private readonly retired: NonNullable<RequestTelemetry['tracing']>[] = [];

  constructor(
    private readonly settings: () => TelemetrySettings,
    private readonly log: Log = () => {},
  ) {}

  /** The configuration the settings describe, or undefined when traces are off (or invalid: logged). */
  private config(): TelemetryConfig | undefined {
    const s = this.settings();
    if (!s.otlpEndpoint) return undefined;
    try {
      return telemetryConfig({}, { otlpEndpoint: s.otlpEndpoint, otlpProtocol: s.otlpProtocol, serviceName: 'vscode-exec-server' });
    } catch (e) {
      this.log('warn', `telemetry settings: ${e instanceof Error ? e.message : String(e)}; traces stay off`);
      return undefined;
    }
  }

  /** The current tracing (created, or replaced after a settings change), or undefined when off. */
  private currentTracing(): RequestTelemetry['tracing'] {
    const c = this.config();
    const key = c ? JSON.stringify(c.traces) : '';
    if (this.tracing && this.tracing.key !== key) {
      this.retired.push(this.tracing);
      this.tracing = undefined;
    }
    if (c && !this.tracing) {
      this.tracing = { key, client: otel().startClientTelemetry(c) };
      this.log('info', `telemetry: traces to ${c.traces!.endpoint} (${c.traces!.protocol})`);
    }
    return this.tracing;
  }

  statsFor(environment: string): RequestStats {
    let s = this.stats.get(environment);
    if (!s) this.stats.set(environment, (s = new RequestStats()));
    return s;
  }

  /** The client hook of a new connection to `environment` (settings read now). */
  client(environment: string): ClientTelemetry {
    const tracing = this.currentTracing();
    return combineClientTelemetry(this.statsFor(environment), tracing?.client.withAttributes({ 'exec_server.environment': environment }))!;
  }

  /** Server spans of the in-process Local server (the no-op while traces are off). */
  server(): ServerTelemetry {
    const tracing = this.currentTracing();
    if (!tracing) return NOOP_SERVER_TELEMETRY;
    tracing.server ??= otel().createServerTracing(this.config()!);
    return tracing.server;
  }

  /** Per-environment tables of per-method counts and latency percentiles. */
  report(): string {
    if (this.stats.size === 0) return 'No requests yet.\n';
    return [...this.stats.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([env, s]) => formatStats(`${env} (since ${new Date(s.since).toLocaleTimeString()})`, s.snapshot()))
      .join('\n');
  }

  resetStatistics(): void {
    for (const s of this.stats.values()) s.reset();
  }

  /** Exports what is pending (deactivation). */
  async shutdown(): Promise<void> {
    const all = [...this.retired.splice(0), ...(this.tracing ? [this.tracing] : [])];
    this.tracing = undefined;
    await Promise.all(all.flatMap((t) => [t.client.shutdown(), t.server?.shutdown()]).map((p) => p?.catch(() => undefined)));
  }
}
