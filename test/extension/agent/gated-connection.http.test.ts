// An agent's http/request past the endpoint's body bound (AGENT_LIMITS.maxHttpResponseBytes):
// the attack is a response that never ends, or one declaring a huge length. The gated
// connection must answer with an error AND make the engine stop reading — before this test,
// the rest of the body kept streaming through the extension host only to be dropped (a 300 MiB
// body cost the host ~250 MiB of RSS; an endless one, CPU and memory forever).
// Real in-process engine, real loopback HTTP server; what is measured is what the server
// managed to send and whether its connection was closed.
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { ExecServer } from '../../../src/server/exec-server';
import { AgentGate } from '../../../src/extension/agent/gate';
import { AGENT_LIMITS, WatchBudget } from '../../../src/extension/agent/limits';
import { GatedServerConnection } from '../../../src/extension/agent/gated-connection';
import { waitFor } from '../../support/wait';

const engine = new ExecServer();
after(() => engine.shutdown());

const MiB = 1024 * 1024;

/** A gated connection whose engine notifications go through filterNotification, as in the endpoint. */
function agentConnection() {
  const forwarded: Array<{ method: string; params: any }> = [];
  const gate = new AgentGate({
    policy: () => 'neverAsk',
    sandboxAll: () => false,
    timeoutMs: () => 5000,
    workspaceRoots: () => [],
    ask: async () => undefined,
  });
  const agentSink = { notify: (method: string, params: unknown) => void forwarded.push({ method, params }) };
  let conn!: GatedServerConnection;
  const inner = engine.connect({ notify: (m, p) => void (conn.filterNotification(m, p) && agentSink.notify(m, p)) }, { label: 'gated-http' });
  conn = new GatedServerConnection(inner, gate.connection('test'), { sink: agentSink, watches: new WatchBudget() });
  return { conn, forwarded };
}

/** A server answering every request with `write` until the client goes away; counts what reached the socket. */
async function bodyServer(declared: number | undefined) {
  const state = { flushed: 0, closed: 0 };
  const chunk = Buffer.alloc(MiB, 0x61);
  const server: Server = createServer((req, res: ServerResponse) => {
    req.resume();
    res.writeHead(200, declared === undefined ? {} : { 'content-length': String(declared) });
    let open = true;
    const pump = () => {
      while (open) if (!res.write(chunk)) return void res.once('drain', pump);
    };
    res.on('close', () => {
      open = false;
      state.flushed += res.socket?.bytesWritten ?? 0;
      state.closed++;
    });
    const sock = res.socket!;
    sock.on('close', () => (state.flushed = Math.max(state.flushed, sock.bytesWritten)));
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return { server, url, state };
}

async function init(conn: GatedServerConnection): Promise<void> {
  await conn.requestUntyped('initialize', { clientName: 'gated-http' });
  conn.notification('initialized', {});
}

const params = (url: string, requestId: string, streamResponse: boolean) => ({ method: 'GET', url, headers: [], requestId, redirectPolicy: 'stop', streamResponse, timeoutMs: 60_000 });

describe('agent http/request past the body bound', () => {
  it('an endless body: the request fails with the bound, and the engine stops reading (the server sees its connection closed)', async () => {
    const { server, url, state } = await bodyServer(undefined);
    const { conn } = agentConnection();
    try {
      await init(conn);
      await assert.rejects(conn.requestUntyped('http/request', params(url, 'endless', false)), (e: Error) => {
        assert.match(e.message, new RegExp(`larger than ${AGENT_LIMITS.maxHttpResponseBytes} bytes`));
        return true;
      });
      await waitFor(() => state.closed > 0, { timeout: 15_000, what: 'the endless response to be closed by the engine', detail: () => `server flushed ${state.flushed} bytes` });
      // What left the server: the bound, plus what sat in socket buffers when the engine stopped.
      assert.ok(state.flushed < AGENT_LIMITS.maxHttpResponseBytes + 32 * MiB, `server flushed ${(state.flushed / MiB).toFixed(1)} MiB`);
    } finally {
      conn.close();
      server.closeAllConnections();
      server.close();
    }
  });

  it('a streamed endless body: the agent gets an error delta, and the engine stops reading', async () => {
    const { server, url, state } = await bodyServer(undefined);
    const { conn, forwarded } = agentConnection();
    try {
      await init(conn);
      const r = (await conn.requestUntyped('http/request', params(url, 'endless-streamed', true))) as { status: number };
      assert.equal(r.status, 200);
      const last = await waitFor(() => forwarded.find((n) => n.method === 'http/request/bodyDelta' && n.params.done), { timeout: 15_000, what: 'the final delta' });
      assert.match(String(last.params.error), /larger than/);
      await waitFor(() => state.closed > 0, { timeout: 15_000, what: 'the endless response to be closed by the engine' });
      // Exactly one final delta, and the agent got at most the bound.
      const deltas = forwarded.filter((n) => n.method === 'http/request/bodyDelta');
      assert.equal(deltas.filter((n) => n.params.done).length, 1);
      const got = deltas.reduce((s, n) => s + Buffer.byteLength(n.params.deltaBase64, 'base64'), 0);
      assert.ok(got <= AGENT_LIMITS.maxHttpResponseBytes, `agent got ${got} bytes`);
    } finally {
      conn.close();
      server.closeAllConnections();
      server.close();
    }
  });

  it('a declared Content-Length over the bound is refused before the body is read', async () => {
    const BODY = 300 * MiB;
    const { server, url, state } = await bodyServer(BODY);
    const { conn } = agentConnection();
    try {
      await init(conn);
      await assert.rejects(conn.requestUntyped('http/request', params(url, 'declared', false)), /larger than/);
      await waitFor(() => state.closed > 0, { timeout: 15_000, what: 'the response to be closed by the engine' });
      // Refused on the header: far less than the bound left the server (only socket buffers).
      assert.ok(state.flushed < AGENT_LIMITS.maxHttpResponseBytes, `server flushed ${(state.flushed / MiB).toFixed(1)} MiB`);
    } finally {
      conn.close();
      server.closeAllConnections();
      server.close();
    }
  });

  it('a body within the bound still arrives whole', async () => {
    const server = createServer((req, res) => {
      req.resume();
      res.end(Buffer.alloc(3 * MiB + 7, 0x62));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const { conn } = agentConnection();
    try {
      await init(conn);
      const r = (await conn.requestUntyped('http/request', params(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, 'small', false))) as { bodyBase64: string };
      const body = Buffer.from(r.bodyBase64, 'base64');
      assert.equal(body.length, 3 * MiB + 7);
      assert.ok(body.every((b) => b === 0x62));
    } finally {
      conn.close();
      server.close();
    }
  });
});
