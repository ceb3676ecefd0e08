// Telemetry configuration from the standard OpenTelemetry environment variables and the CLI's
// flags (flags win). Pure parsing, no OpenTelemetry import: an invalid value is a clear error
// before anything starts; nothing configured means telemetry stays off (the default).
export type OtlpProtocol = 'http/json' | 'http/protobuf';
export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

export interface TelemetryConfig {
  /** OTLP/HTTP trace export (undefined: no traces). */
  traces?: { endpoint: string; protocol: OtlpProtocol };
  /** Prometheus text endpoint (undefined: no metrics). Port 0 = any free port. */
  metrics?: { host: string; port: number };
  serviceName: string;
  sampler: { name: SamplerName; ratio: number };
}

export class TelemetryConfigError extends Error {}

export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';
export const DEFAULT_PROMETHEUS_PORT = 9464;
export const DEFAULT_PROMETHEUS_HOST = '127.0.0.1';

/** Flag values (CLI) that override the environment. */
export interface TelemetryFlags {
  otlpEndpoint?: string;
  otlpProtocol?: string;
  serviceName?: string;
  sampler?: string;
  samplerArg?: string;
  /** HOST:PORT or PORT */
  prometheus?: string;
}

export const TELEMETRY_FLAGS_HELP = `Telemetry (off by default; the standard OTEL_* variables work too, flags win):
  --otlp-endpoint URL   send traces over OTLP/HTTP to URL (a collector's base URL, e.g.
                        http://127.0.0.1:4318; /v1/traces is appended). = OTEL_TRACES_EXPORTER=otlp
                        + OTEL_EXPORTER_OTLP_ENDPOINT
  --otlp-protocol P     http/protobuf (default) or http/json  (OTEL_EXPORTER_OTLP_PROTOCOL)
  --service-name NAME   service.name of the spans (default exec-server; OTEL_SERVICE_NAME)
  --trace-sampler NAME  ${SAMPLERS.join('|')}
                        (default parentbased_always_on; OTEL_TRACES_SAMPLER)
  --trace-sampler-arg X sampling ratio 0..1 for the *traceidratio samplers (OTEL_TRACES_SAMPLER_ARG)
  --prometheus [HOST:]PORT
                        serve Prometheus metrics on http://HOST:PORT/metrics (default host
                        127.0.0.1; = OTEL_METRICS_EXPORTER=prometheus + OTEL_EXPORTER_PROMETHEUS_HOST/PORT)
`;

type Env = Record<string, string | undefined>;

function list(v: string | undefined): string[] {
  return (v ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');
}

function exporterChoice(name: string, value: string | undefined, supported: string): boolean {
  const items = list(value);
  for (const i of items) {
    if (i !== supported && i !== 'none') {
      throw new TelemetryConfigError(`${name}=${value}: unsupported exporter "${i}" (supported: ${supported}, none)`);
    }
  }
  return items.includes(supported);
}

function protocol(name: string, v: string): OtlpProtocol {
  if (v === 'http/json' || v === 'http/protobuf') return v;
  throw new TelemetryConfigError(`${name} ${JSON.stringify(v)}: expected http/protobuf or http/json (gRPC is not supported)`);
}

function httpUrl(name: string, v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new TelemetryConfigError(`${name} ${JSON.stringify(v)}: not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TelemetryConfigError(`${name} ${JSON.stringify(v)}: expected an http:// or https:// URL`);
  return v;
}

function port(name: string, v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 65535) throw new TelemetryConfigError(`${name} ${JSON.stringify(v)}: expected a port number 0..65535`);
  return n;
}

/** Reads the configuration; throws TelemetryConfigError on an invalid value. */
export function telemetryConfig(env: Env = process.env, flags: TelemetryFlags = {}): TelemetryConfig {
  const disabled = (env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true';
  const serviceName = flags.serviceName ?? (env.OTEL_SERVICE_NAME?.trim() || 'exec-server');

  let sampler: SamplerName = 'parentbased_always_on';
  const samplerRaw = flags.sampler ?? env.OTEL_TRACES_SAMPLER?.trim().toLowerCase();
  if (samplerRaw) {
    if (!(SAMPLERS as readonly string[]).includes(samplerRaw)) {
      throw new TelemetryConfigError(`trace sampler ${JSON.stringify(samplerRaw)}: expected one of ${SAMPLERS.join(', ')}`);
    }
    sampler = samplerRaw as SamplerName;
  }
  let ratio = 1;
  const argRaw = flags.samplerArg ?? env.OTEL_TRACES_SAMPLER_ARG?.trim();
  if (argRaw) {
    ratio = Number(argRaw);
    if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) throw new TelemetryConfigError(`trace sampler argument ${JSON.stringify(argRaw)}: expected a number 0..1`);
  }
  const config: TelemetryConfig = { serviceName, sampler: { name: sampler, ratio } };

  const tracesOn = flags.otlpEndpoint !== undefined || exporterChoice('OTEL_TRACES_EXPORTER', env.OTEL_TRACES_EXPORTER, 'otlp');
  if (tracesOn && !disabled) {
    const protoRaw = flags.otlpProtocol ?? (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
    const proto = protoRaw ? protocol(flags.otlpProtocol ? '--otlp-protocol' : 'OTEL_EXPORTER_OTLP_PROTOCOL', protoRaw) : 'http/protobuf';
    let endpoint: string;
    if (flags.otlpEndpoint !== undefined) {
      endpoint = `${httpUrl('--otlp-endpoint', flags.otlpEndpoint).replace(/\/+$/, '')}/v1/traces`;
    } else if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()) {
      // The signal-specific variable is the full URL, used as is (OpenTelemetry spec).
      endpoint = httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.trim());
    } else {
      const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || DEFAULT_OTLP_ENDPOINT;
      endpoint = `${httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base).replace(/\/+$/, '')}/v1/traces`;
    }
    config.traces = { endpoint, protocol: proto };
  } else if (flags.otlpProtocol !== undefined) {
    protocol('--otlp-protocol', flags.otlpProtocol);
  }

  const metricsOn = flags.prometheus !== undefined || exporterChoice('OTEL_METRICS_EXPORTER', env.OTEL_METRICS_EXPORTER, 'prometheus');
  if (metricsOn && !disabled) {
    let host = env.OTEL_EXPORTER_PROMETHEUS_HOST?.trim() || DEFAULT_PROMETHEUS_HOST;
    let p = env.OTEL_EXPORTER_PROMETHEUS_PORT?.trim() ? port('OTEL_EXPORTER_PROMETHEUS_PORT', env.OTEL_EXPORTER_PROMETHEUS_PORT.trim()) : DEFAULT_PROMETHEUS_PORT;
    if (flags.prometheus !== undefined) {
      const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(flags.prometheus);
      if (m) {
        host = m[1] ?? m[2];
        p = port('--prometheus', m[3]);
      } else {
        p = port('--prometheus', flags.prometheus);
      }
    }
    config.metrics = { host, port: p };
  }
  return config;
}

/** Is anything to be exported? (false: the OpenTelemetry SDK is not even loaded) */
export function telemetryEnabled(c: TelemetryConfig): boolean {
  return c.traces !== undefined || c.metrics !== undefined;
}
