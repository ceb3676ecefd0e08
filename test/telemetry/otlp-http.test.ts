// Our HTTP/1.1 transport of span batches (src/telemetry/otlp-http.ts, used by protoBatchExporter
// for http: endpoints) against the SDK's node transport, the one it replaces: both exporters are
// pointed at the same scripted collector and must end the same way (result code, error class,
// message and status, requests made, retries) for a success, Retry-After retries, a 400, a
// collector that never answers (the OTLP timeout), one that hangs up, one that is not there, and
// send the same request (path, body bytes, Content-Type, User-Agent, OTEL_EXPORTER_OTLP_HEADERS).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { convertLegacyHttpOptions, createOtlpHttpExportDelegate } = require('@opentelemetry/otlp-exporter-base/node-http') as typeof import('@opentelemetry/otlp-exporter-base/build/src/index-node-http');
import { protoBatchExporter } from '../../src/telemetry/otlp-proto';
import type { BatchExporter } from '../../src/telemetry/server-spans';
import { rawCollector as collector, type Answer, type Seen } from '../support/telemetry';

/** The SDK's own path, as protoBatchExporter was before: its node transport with a pass-through serializer. */
function sdkExporter(url: string): BatchExporter {
  const options = convertLegacyHttpOptions({ url }, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' });
  const base = new OTLPExporterBase<Uint8Array>(createOtlpHttpExportDelegate(options, { serializeRequest: (r: Uint8Array) => r, deserializeResponse: () => ({}) }));
  return { export: (r, _n, done) => base.export(r, done), shutdown: () => base.shutdown() };
}

interface Outcome {
  code: number;
  error?: { name: string; message: string; code?: unknown; data?: unknown };
  ms: number;
}

async function exportOnce(ex: BatchExporter, body: Uint8Array): Promise<Outcome> {
  const t0 = Date.now();
  const r = await new Promise<{ code: number; error?: Error }>((resolve) => ex.export(body, 1, resolve));
  const e = r.error as (Error & { code?: unknown; data?: unknown }) | undefined;
  return { code: r.code, error: e && { name: e.name, message: e.message, code: e.code, data: e.data }, ms: Date.now() - t0 };
}

const BODY = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) & 0xff));

/** Runs one export through each exporter against its own collector answering by `answer`; returns both. */
async function both(answer: Answer, env: Record<string, string> = {}, url?: (u: string) => string) {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  const out: { outcome: Outcome; seen: Seen[]; connections: number }[] = [];
  try {
    for (const make of [sdkExporter, protoBatchExporter]) {
      const c = await collector(answer);
      const ex = make(url ? url(c.url) : c.url);
      try {
        const outcome = await exportOnce(ex, BODY);
        out.push({ outcome, seen: [...c.seen], connections: c.connections() });
      } finally {
        await ex.shutdown();
        await c.close();
      }
    }
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  return { sdk: out[0], ours: out[1] };
}

const ok = 'HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n';

test('a success: the same request as the SDK transport (path, body, Content-Type, User-Agent, OTEL_EXPORTER_OTLP_HEADERS), sent with a Content-Length', async () => {
  const { sdk, ours } = await both(() => ok, { OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=secret,x-tenant=t1', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=t2' });
  assert.deepEqual(ours.outcome.error, undefined);
  assert.equal(ours.outcome.code, 0);
  assert.equal(sdk.outcome.code, 0);
  assert.equal(ours.seen.length, 1);
  const [a, b] = [sdk.seen[0], ours.seen[0]];
  assert.equal(b.method, a.method);
  assert.equal(b.path, a.path);
  assert.ok(b.body.equals(BODY) && a.body.equals(BODY));
  for (const h of ['content-type', 'user-agent', 'x-api-key', 'x-tenant']) assert.equal(b.headers[h], a.headers[h], h);
  assert.match(b.headers.host, /^127\.0\.0\.1:\d+$/);
  assert.equal(b.headers['x-tenant'], 't2');
  // The body goes out sized, in one write with its head (the SDK's pipes a Readable: chunked).
  assert.equal(b.headers['content-length'], String(BODY.length));
  assert.equal(b.headers['transfer-encoding'], undefined);
});

test('keep-alive: exports reuse one connection; a "Connection: close" answer makes the next export connect again', async () => {
  let n = 0;
  const c = await collector(() => (++n === 2 ? 'HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n' : ok));
  const ex = protoBatchExporter(c.url);
  try {
    for (let i = 0; i < 4; i++) assert.equal((await exportOnce(ex, BODY)).code, 0);
    assert.deepEqual(
      c.seen.map((s) => s.connection),
      [1, 1, 2, 2],
    );
  } finally {
    await ex.shutdown();
    await c.close();
  }
});

test('retryable statuses are retried as the SDK retries them (Retry-After honoured), then succeed', async () => {
  const { sdk, ours } = await both((_r, n) => (n <= 2 ? 'HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n' : ok), { OTEL_EXPORTER_OTLP_TIMEOUT: '5000' });
  assert.equal(sdk.outcome.code, 0);
  assert.equal(ours.outcome.code, 0);
  assert.equal(sdk.seen.length, 3);
  assert.equal(ours.seen.length, 3);
});

test('a 400 fails at once with the same OTLPExporterError (status, message, body)', async () => {
  const { sdk, ours } = await both(() => 'HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\nbad request');
  assert.equal(ours.outcome.code, 1);
  assert.deepEqual(ours.outcome.error, sdk.outcome.error);
  assert.equal(ours.outcome.error?.name, 'OTLPExporterError');
  assert.equal(ours.outcome.error?.code, 400);
  assert.equal(ours.seen.length, 1);
});

test('a collector that never answers: the OTLP timeout ends the export as the SDK ends it', async () => {
  const { sdk, ours } = await both(() => 'silence', { OTEL_EXPORTER_OTLP_TIMEOUT: '300' });
  assert.equal(ours.outcome.code, 1);
  assert.deepEqual(ours.outcome.error, sdk.outcome.error);
  assert.equal(ours.outcome.error?.message, 'Request timed out');
  assert.equal(ours.seen.length, sdk.seen.length);
  assert.ok(ours.outcome.ms >= 250 && ours.outcome.ms < 3000, `${ours.outcome.ms} ms`);
});

test('a collector that hangs up, and one that is not there: retryable network errors, given up at the timeout as the SDK does', async () => {
  const hung = await both(() => 'hang-up', { OTEL_EXPORTER_OTLP_TIMEOUT: '300' });
  assert.equal(hung.ours.outcome.code, 1);
  assert.deepEqual(hung.ours.outcome.error, hung.sdk.outcome.error);
  assert.equal(hung.ours.outcome.error?.code, 'ECONNRESET');
  // A port nobody listens on (the collector's, once it is closed).
  const gone = await collector(() => ok);
  const port = new URL(gone.url).port;
  await gone.close();
  const refused = await both(() => ok, { OTEL_EXPORTER_OTLP_TIMEOUT: '300' }, () => `http://127.0.0.1:${port}/v1/traces`);
  assert.equal(refused.ours.outcome.code, 1);
  assert.equal(refused.ours.outcome.error?.code, 'ECONNREFUSED');
  assert.equal(refused.ours.outcome.error?.code, refused.sdk.outcome.error?.code);
});

test('a header value with a line break fails the export as the SDK transport fails it, with nothing sent', async () => {
  const { sdk, ours } = await both(() => ok, { OTEL_EXPORTER_OTLP_HEADERS: 'x-ok=1,x-bad=a%0D%0AInjected: yes' });
  assert.equal(ours.outcome.code, 1);
  assert.equal(sdk.outcome.code, 1);
  assert.deepEqual(ours.outcome.error, sdk.outcome.error);
  assert.equal(ours.outcome.error?.code, 'ERR_INVALID_CHAR');
  assert.equal(ours.seen.length, 0);
  assert.equal(sdk.seen.length, 0);
});
