// serveConnection: RpcConnection ↔ ServerConnection wiring with our real engine, over
// in-memory stdio streams (JSON lines, exactly as on a pipe).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as os from 'node:os';
import { PassThrough } from 'node:stream';
import { RpcConnection } from '../../src/rpc/connection';
import { ErrorCodes, RpcError } from '../../src/protocol/errors';
import { ExecServer } from '../../src/server/exec-server';
import { OVERLOADED_MESSAGE } from '../../src/server/in-flight';
import { serveConnection, type ServeOptions } from '../../src/transports/serve';
import { StdioTransport } from '../../src/transports/stdio';
import { isAlive } from '../support/process';
import { waitFor } from '../support/wait';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const cwd = new URL(`file://${os.tmpdir()}`).href;

/** A server connection over a pair of pipes, and a client RpcConnection on the other end. */
function wire(server: ExecServer, opts: ServeOptions = {}) {
  const c2s = new PassThrough();
  const s2c = new PassThrough();
  const served = serveConnection(server, new StdioTransport(c2s, s2c), opts);
  const client = new RpcConnection(new StdioTransport(s2c, c2s));
  return { served, client };
}

async function init(client: RpcConnection) {
  await client.request('initialize', { clientName: 'serve-test' });
  client.notify('initialized', {});
}

test('serve: requests are processed concurrently (a long poll does not block others)', async () => {
  const server = new ExecServer();
  const { client } = wire(server);
  try {
    await init(client);
    await client.request('process/start', { processId: 'q', argv: ['sleep', '30'], cwd, env: ENV, tty: false });
    const started = Date.now();
    const longPoll = client.request('process/read', { processId: 'q', afterSeq: 0, waitMs: 3000 });
    assert.deepEqual(await client.request('environment/status', null), { status: 'ready' });
    assert.ok(Date.now() - started < 2900, 'status answered while the long poll waits');
    await client.request('process/terminate', { processId: 'q' });
    await longPoll;
  } finally {
    client.close();
    await server.shutdown();
  }
});

test('serve: more requests in flight than the limit are answered -32001, then service resumes', async () => {
  const server = new ExecServer();
  const { client, served } = wire(server, { maxInFlight: 2 });
  try {
    await init(client);
    await client.request('process/start', { processId: 'q', argv: ['sleep', '30'], cwd, env: ENV, tty: false });
    const polls = [0, 1].map(() => client.request('process/read', { processId: 'q', afterSeq: 0, waitMs: 1500 }));
    await waitFor(() => served.inFlight >= 2, { what: 'both long polls in flight' });
    assert.equal(served.inFlight, 2);
    await assert.rejects(client.request('environment/status', null), (e: unknown) => {
      assert.ok(e instanceof RpcError);
      assert.equal(e.code, ErrorCodes.Overloaded);
      assert.equal(e.message, OVERLOADED_MESSAGE);
      return true;
    });
    await client.request('process/terminate', { processId: 'q' }).catch(() => {}); // may itself be refused
    await Promise.all(polls);
    assert.deepEqual(await client.request('environment/status', null), { status: 'ready' });
    await client.request('process/terminate', { processId: 'q' });
  } finally {
    client.close();
    await server.shutdown();
  }
});

test("the engine's own cap (in process, no serveConnection in front) refuses with the same -32001 answer", async () => {
  const server = new ExecServer({ maxInFlightPerConnection: 2 });
  const conn = server.connect({ notify() {} });
  try {
    await conn.requestUntyped('initialize', { clientName: 'serve-test' });
    conn.notification('initialized', {});
    await conn.requestUntyped('process/start', { processId: 'q', argv: ['sleep', '30'], cwd, env: ENV, tty: false });
    const polls = [0, 1].map(() => conn.requestUntyped('process/read', { processId: 'q', afterSeq: 0, waitMs: 1500 }));
    await assert.rejects(conn.requestUntyped('environment/status', null), (e: unknown) => {
      assert.ok(e instanceof RpcError);
      assert.equal(e.code, ErrorCodes.Overloaded);
      assert.equal(e.message, OVERLOADED_MESSAGE);
      return true;
    });
    await Promise.all(polls);
    assert.deepEqual(await conn.requestUntyped('environment/status', null), { status: 'ready' });
  } finally {
    conn.close();
    await server.shutdown();
  }
});

test('serve: a client notification other than initialized closes the connection', async () => {
  const server = new ExecServer();
  const { client, served } = wire(server);
  try {
    await init(client);
    const closed = new Promise((r) => client.onClose(r));
    client.notify('process/output', { processId: 'x' });
    await closed;
    await served.closed;
  } finally {
    client.close();
    await server.shutdown();
  }
});

test('serve: with terminateOnClose (stdio), end of input ends the session and kills its processes', async () => {
  const server = new ExecServer();
  const { client, served } = wire(server, { terminateOnClose: true });
  try {
    await init(client);
    let out = '';
    client.onNotification((n) => {
      if (n.method === 'process/output') out += Buffer.from((n.params as { chunk: string }).chunk, 'base64').toString();
    });
    await client.request('process/start', { processId: 's', argv: ['sh', '-c', 'echo $$; exec sleep 300'], cwd, env: ENV, tty: false });
    await waitFor(() => /\n/.test(out), { what: 'the child pid line' });
    const pid = Number(out.trim());
    assert.ok(pid > 0 && isAlive(pid));
    client.close();
    await served.closed;
    await waitFor(() => !isAlive(pid), { what: `child ${pid} killed when the session ended` });
  } finally {
    await server.shutdown();
  }
});
