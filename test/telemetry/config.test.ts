// Telemetry configuration from OTEL_* variables and CLI flags: defaults (off), the standard
// endpoint rules, flags winning over the environment, and a clear error for invalid values
// (including through the CLI, which then exits 2 before listening).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { METHODS } from '../../src/server/router';
import { TelemetryConfigError, telemetryConfig, telemetryEnabled } from '../../src/telemetry/config';
import { KNOWN_METHODS, methodLabel } from '../../src/telemetry/methods';
import { cleanEnv, cliPath, ensureBuilt } from '../support/telemetry';

test('nothing configured: off', () => {
  const c = telemetryConfig({});
  assert.equal(telemetryEnabled(c), false);
  assert.equal(c.serviceName, 'exec-server');
  assert.deepEqual(c.sampler, { name: 'parentbased_always_on', ratio: 1 });
  assert.equal(telemetryEnabled(telemetryConfig({ OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' })), false);
});

test('traces: OTEL_* rules (base endpoint + /v1/traces, signal endpoint as is, protobuf default)', () => {
  assert.deepEqual(telemetryConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).traces, { endpoint: 'http://localhost:4318/v1/traces', protocol: 'http/protobuf' });
  assert.deepEqual(telemetryConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318/', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).traces, {
    endpoint: 'http://jaeger:4318/v1/traces',
    protocol: 'http/json',
  });
  assert.equal(
    telemetryConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:1', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/custom' }).traces?.endpoint,
    'https://b/custom',
  );
  assert.equal(telemetryConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }).traces, undefined);
  const s = telemetryConfig({ OTEL_SERVICE_NAME: 'svc', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' });
  assert.equal(s.serviceName, 'svc');
  assert.deepEqual(s.sampler, { name: 'parentbased_traceidratio', ratio: 0.25 });
});

test('flags win over the environment', () => {
  const c = telemetryConfig(
    { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env:4318', OTEL_SERVICE_NAME: 'env', OTEL_EXPORTER_PROMETHEUS_PORT: '9999' },
    { otlpEndpoint: 'http://flag:4318', otlpProtocol: 'http/json', serviceName: 'flag', prometheus: '[::1]:9100', sampler: 'always_off' },
  );
  assert.deepEqual(c.traces, { endpoint: 'http://flag:4318/v1/traces', protocol: 'http/json' });
  assert.equal(c.serviceName, 'flag');
  assert.deepEqual(c.metrics, { host: '::1', port: 9100 });
  assert.equal(c.sampler.name, 'always_off');
  assert.deepEqual(telemetryConfig({}, { prometheus: '9100' }).metrics, { host: '127.0.0.1', port: 9100 });
  assert.deepEqual(telemetryConfig({ OTEL_METRICS_EXPORTER: 'prometheus' }).metrics, { host: '127.0.0.1', port: 9464 });
  assert.deepEqual(telemetryConfig({ OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_HOST: '0.0.0.0', OTEL_EXPORTER_PROMETHEUS_PORT: '0' }).metrics, {
    host: '0.0.0.0',
    port: 0,
  });
});

test('invalid values are clear errors', () => {
  const bad: [Record<string, string>, Record<string, string>, RegExp][] = [
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, {}, /unsupported exporter "zipkin"/],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, {}, /http\/protobuf or http\/json/],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }, {}, /not a URL/],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://x' }, {}, /http:\/\/ or https:\/\//],
    [{ OTEL_TRACES_SAMPLER: 'sometimes' }, {}, /expected one of/],
    [{ OTEL_TRACES_SAMPLER_ARG: '2' }, {}, /0\.\.1/],
    [{ OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_PORT: '70000' }, {}, /port number/],
    [{}, { prometheus: 'host:' }, /port number/],
    [{}, { otlpProtocol: 'grpc' }, /http\/protobuf or http\/json/],
  ];
  for (const [env, flags, re] of bad) assert.throws(() => telemetryConfig(env, flags), (e: unknown) => e instanceof TelemetryConfigError && re.test(e.message), JSON.stringify([env, flags]));
});

test('the CLI refuses an invalid telemetry setting before listening (exit 2, message on stderr)', () => {
  ensureBuilt();
  const r = spawnSync(process.execPath, [cliPath, '--listen', 'ws://127.0.0.1:0', '--otlp-protocol', 'grpc'], { encoding: 'utf8', env: cleanEnv(), timeout: 20_000 });
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /--otlp-protocol "grpc": expected http\/protobuf or http\/json/);
  const e = spawnSync(process.execPath, [cliPath, '--listen', 'ws://127.0.0.1:0'], { encoding: 'utf8', env: cleanEnv({ OTEL_METRICS_EXPORTER: 'statsd' }), timeout: 20_000 });
  assert.equal(e.status, 2);
  assert.match(e.stderr, /OTEL_METRICS_EXPORTER=statsd: unsupported exporter/);
  const help = spawnSync(process.execPath, [cliPath, '--help'], { encoding: 'utf8', timeout: 20_000 });
  for (const flag of ['--otlp-endpoint', '--otlp-protocol', '--service-name', '--trace-sampler', '--prometheus']) assert.ok(help.stdout.includes(flag), flag);
});

test('bounded method labels: every method of the server is known; anything else is `other`', () => {
  for (const m of [...Object.keys(METHODS), 'initialize']) assert.ok(KNOWN_METHODS.has(m), `${m} is in src/telemetry/methods.ts`);
  for (const m of ['fs/nope', '/etc/passwd', '__proto__', 'constructor', 'x'.repeat(1000)]) assert.equal(methodLabel(m), 'other');
});
