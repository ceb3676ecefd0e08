// Our client carries the active OpenTelemetry context on every outbound request: checked on
// the wire (a recording websocket server), end to end to our server over stdio (the CLI,
// spans to a real OTLP/HTTP receiver) and in process (server spans are children of the client
// spans), and against the reference `codex exec-server`, which must accept the `trace` member.
// Without telemetry the client sends no `trace` member at all.
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT_CONTEXT, context, trace, type Context, type ContextManager } from '@opentelemetry/api';
import { WebSocketServer } from 'ws';
import { connectInProcess, connectStdio, connectWebSocket } from '../../src/client/connect';
import { ExecServer } from '../../src/server/exec-server';
import { telemetryConfig } from '../../src/telemetry/config';
import { otel, startServerTelemetry } from '../../src/telemetry/load';
import { referenceServer, startWsServer } from '../support/reference';
import { cleanEnv, cliPath, ensureBuilt, startReceiver, type OtlpReceiver } from '../support/telemetry';

/** An AsyncLocalStorage context manager: what an app using OpenTelemetry registers. */
class AlsContextManager implements ContextManager {
  private readonly als = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.als.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.als.run(ctx, () => fn.apply(thisArg, args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.als.disable();
    return this;
  }
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'telemetry-client-'));
let rx: OtlpReceiver;
before(async () => {
  ensureBuilt();
  context.setGlobalContextManager(new AlsContextManager());
  rx = await startReceiver();
});
after(async () => {
  await rx.close();
  rmSync(dir, { recursive: true, force: true });
});

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
/** An app's span context (as if a span of the embedding app were active). */
function appContext(): { ctx: Context; traceId: string; spanId: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { ctx: trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: 1, isRemote: false }), traceId, spanId };
}
const clientTelemetry = (protocol: 'http/json' | 'http/protobuf' = 'http/json') =>
  otel().startClientTelemetry(telemetryConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_SERVICE_NAME: 'client-under-test' }));

/** A websocket server that records every frame and answers like a minimal exec-server. */
async function recordingServer(): Promise<{ url: string; frames: Record<string, unknown>[]; close(): Promise<void> }> {
  const frames: Record<string, unknown>[] = [];
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  wss.on('connection', (ws) => {
    ws.on('message', (d) => {
      const m = JSON.parse(String(d)) as Record<string, unknown>;
      frames.push(m);
      if (m.id === undefined) return;
      const result = m.method === 'initialize' ? { sessionId: 'recorded' } : m.method === 'environment/status' ? { status: 'ready' } : {};
      ws.send(JSON.stringify({ id: m.id, result }));
    });
  });
  const port = (wss.address() as { port: number }).port;
  return {
    url: `ws://127.0.0.1:${port}`,
    frames,
    close: () => new Promise<void>((r) => wss.close(() => r())),
  };
}

test('on the wire: every request carries the active context through a client span; without telemetry, no trace member', async () => {
  const server = await recordingServer();
  const tel = clientTelemetry();
  try {
    const client = await connectWebSocket(server.url, { reconnect: false, telemetry: tel });
    const app = appContext();
    await context.with(app.ctx, () => client.request('environment/status', null));
    await client.request('fs/getMetadata', { path: 'file:///tmp' });
    await client.close();
    await tel.shutdown();

    const requests = server.frames.filter((f) => f.id !== undefined);
    assert.deepEqual(requests.map((f) => f.method), ['initialize', 'environment/status', 'fs/getMetadata']);
    const ids = requests.map((f) => {
      const t = f.trace as { traceparent: string };
      const m = TRACEPARENT.exec(t?.traceparent ?? '');
      assert.ok(m, `${f.method} carries a traceparent: ${JSON.stringify(f)}`);
      return { traceId: m[1], spanId: m[2] };
    });
    assert.equal(ids[1].traceId, app.traceId, 'the request made inside the app span continues its trace');
    assert.notEqual(ids[1].spanId, app.spanId, 'parented through a client span');
    assert.notEqual(ids[2].traceId, app.traceId, 'outside the app span: a new trace');
    // Notifications (initialized) carry no trace.
    assert.ok(server.frames.filter((f) => f.id === undefined).every((f) => f.trace === undefined));

    const spans = await rx.waitFor((s) => s.filter((x) => x.serviceName === 'client-under-test').length >= 3);
    const status = spans.find((s) => s.spanId === ids[1].spanId);
    assert.ok(status, 'the client span whose id went on the wire was exported');
    assert.equal(status.name, 'environment/status');
    assert.equal(status.kind, 3, 'SpanKind CLIENT');
    assert.equal(status.parentSpanId, app.spanId);
    assert.equal(status.attributes['rpc.system'], 'jsonrpc');

    // Control: the same client without telemetry puts no trace member on the wire.
    server.frames.length = 0;
    const plain = await connectWebSocket(server.url, { reconnect: false });
    await context.with(app.ctx, () => plain.request('environment/status', null));
    await plain.close();
    assert.ok(server.frames.length >= 2);
    assert.ok(server.frames.every((f) => !('trace' in f)), JSON.stringify(server.frames));
  } finally {
    await server.close();
  }
});

test('in process: server spans are children of the client spans; the process span follows', async () => {
  const serverTel = await startServerTelemetry(telemetryConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_SERVICE_NAME: 'inproc-server' }));
  const server = new ExecServer({ telemetry: serverTel });
  const tel = clientTelemetry('http/protobuf');
  try {
    const client = await connectInProcess(server, { telemetry: tel.withAttributes({ 'exec_server.environment': 'Local' }) });
    const app = appContext();
    const exitCode = await context.with(app.ctx, async () => {
      await client.fs.stat(dir);
      const p = await client.startProcess({ argv: ['sh', '-c', 'exit 0'], cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
      return p.exited;
    });
    assert.equal(exitCode, 0);
    await client.close();
    await server.shutdown();
    await tel.shutdown();
    await serverTel.shutdown();
    const spans = await rx.waitFor((s) => s.some((x) => x.serviceName === 'inproc-server' && x.name === 'process'));
    const clientMeta = spans.find((s) => s.name === 'fs/getMetadata' && s.kind === 3 && s.traceId === app.traceId);
    assert.ok(clientMeta);
    assert.equal(clientMeta.attributes['exec_server.environment'], 'Local');
    const serverMeta = spans.find((s) => s.name === 'fs/getMetadata' && s.kind === 2 && s.traceId === app.traceId);
    assert.ok(serverMeta, 'a server span in the same trace');
    assert.equal(serverMeta.parentSpanId, clientMeta.spanId);
    assert.equal(serverMeta.serviceName, 'inproc-server');
    const serverStart = spans.find((s) => s.name === 'process/start' && s.kind === 2 && s.traceId === app.traceId)!;
    const proc = spans.find((s) => s.name === 'process' && s.traceId === app.traceId)!;
    assert.equal(proc.parentSpanId, serverStart.spanId);
    assert.equal(proc.attributes['process.exit.code'], 0);
    assert.equal(proc.statusCode, 0);
  } finally {
    await server.shutdown();
  }
});

test('over stdio to the CLI: its server span continues our client span (flushed when input ends)', async () => {
  const tel = clientTelemetry();
  const env = cleanEnv({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_SERVICE_NAME: 'stdio-server' });
  const child = spawn(process.execPath, [cliPath, '--listen', 'stdio'], { stdio: ['pipe', 'pipe', 'pipe'], env });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const client = await connectStdio({ input: child.stdout, output: child.stdin }, { telemetry: tel });
  const app = appContext();
  await context.with(app.ctx, () => client.request('environment/status', null));
  await client.close();
  child.stdin.end();
  assert.equal(await exited, 0, stderr);
  await tel.shutdown();
  const spans = await rx.waitFor((s) => s.some((x) => x.serviceName === 'stdio-server' && x.traceId === app.traceId));
  const c = spans.find((s) => s.kind === 3 && s.traceId === app.traceId && s.name === 'environment/status')!;
  const s = spans.find((x) => x.kind === 2 && x.traceId === app.traceId && x.name === 'environment/status')!;
  assert.ok(c && s);
  assert.equal(s.parentSpanId, c.spanId);
});

test('the reference codex exec-server accepts requests carrying trace context', async (t) => {
  const reference = await startWsServer(referenceServer, [], 30_000, t);
  const url = reference.url;
  const tel = clientTelemetry();
  const client = await connectWebSocket(url, { reconnect: false, telemetry: tel });
  const app = appContext();
  await context.with(app.ctx, async () => {
    assert.deepEqual(await client.request('environment/status', null), { status: 'ready' });
    const meta = await client.fs.stat(dir);
    assert.equal(meta.isDirectory, true);
    const p = await client.startProcess({ argv: ['sh', '-c', 'echo traced'], cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    let out = '';
    p.onOutput((o) => (out += Buffer.from(o.data).toString()));
    assert.equal(await p.exited, 0);
    await p.closed;
    assert.equal(out, 'traced\n');
  });
  await client.close();
  await tel.shutdown();
  const spans = await rx.waitFor((s) => s.some((x) => x.name === 'process/start' && x.traceId === app.traceId));
  const mine = spans.filter((s) => s.traceId === app.traceId);
  assert.ok(mine.length >= 3);
  assert.ok(mine.every((s) => s.statusCode !== 2), 'no request failed');
});
