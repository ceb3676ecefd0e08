// src/transports/websocket-server.ts + websocket-transport.ts: /readyz, frames, maxPayload, pings, auth hook, Origin, congestion.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { RpcConnection } from '../../src/rpc/connection';
import { connectWebSocketTransport, WebSocketConnectError } from '../../src/transports/websocket-client';
import { listenWebSocket, type WebSocketListenOptions } from '../../src/transports/websocket-server';
import type { WebSocketTransport } from '../../src/transports/websocket-transport';
import { waitFor } from '../support/wait';

/** A listener whose connections echo requests back ({echo: params}). */
async function echoServer(extra: Partial<WebSocketListenOptions> = {}) {
  const transports: WebSocketTransport[] = [];
  const listener = await listenWebSocket({
    host: '127.0.0.1',
    port: 0,
    ...extra,
    onConnection: (t) => {
      transports.push(t);
      const rpc = new RpcConnection(t);
      rpc.setRequestHandler((method, params) => ({ method, echo: params }));
    },
  });
  return { listener, transports };
}

function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

test('websocket: GET /readyz answers 200 on the websocket port, other paths 404', async () => {
  const { listener } = await echoServer();
  try {
    const httpUrl = listener.url.replace('ws://', 'http://');
    assert.equal((await httpGet(`${httpUrl}/readyz`)).status, 200);
    assert.equal((await httpGet(`${httpUrl}/other`)).status, 404);
    assert.match(listener.url, /^ws:\/\/127\.0\.0\.1:\d+$/);
  } finally {
    await listener.close();
  }
});

test('websocket: text and binary frames holding JSON are both accepted; bad JSON gets a parse error', async () => {
  const { listener } = await echoServer();
  const ws = new WebSocket(listener.url);
  try {
    await new Promise((r, j) => ws.once('open', r).once('error', j));
    const replies: any[] = [];
    ws.on('message', (d) => replies.push(JSON.parse(d.toString())));
    ws.send(JSON.stringify({ id: 1, method: 'text', params: { a: 1 } }));
    ws.send(Buffer.from(JSON.stringify({ id: 2, method: 'binary', params: { b: 2 } })), { binary: true });
    ws.send('{not json');
    await waitFor(() => replies.length === 3, { what: 'three replies' });
    const byId = new Map(replies.map((r) => [r.id, r]));
    assert.deepEqual(byId.get(1).result, { method: 'text', echo: { a: 1 } });
    assert.deepEqual(byId.get(2).result, { method: 'binary', echo: { b: 2 } });
    assert.equal(byId.get(null).error.code, -32700);
  } finally {
    ws.terminate();
    await listener.close();
  }
});

test('websocket: a frame above maxPayload closes that connection (1009) and the server keeps serving', async () => {
  const { listener } = await echoServer({ maxPayload: 1024 });
  try {
    const t = await connectWebSocketTransport(listener.url);
    const closed = new Promise<string>((r) => t.onClose((i) => r(i.reason)));
    t.send({ id: 1, method: 'big', params: { s: 'x'.repeat(4096) } });
    assert.match(await closed, /1009|too big|Max payload/i);
    const t2 = await connectWebSocketTransport(listener.url);
    const rpc = new RpcConnection(t2);
    assert.deepEqual(await rpc.request('small', { ok: 1 }), { method: 'small', echo: { ok: 1 } });
    rpc.close();
  } finally {
    await listener.close();
  }
});

test('websocket: the server pings, and terminates a peer that never answers', async () => {
  const { listener } = await echoServer({ pingIntervalMs: 100 });
  const good = new WebSocket(listener.url);
  const deaf = new WebSocket(listener.url, { autoPong: false });
  try {
    let pings = 0;
    good.on('ping', () => pings++);
    await Promise.all([good, deaf].map((w) => new Promise((r, j) => w.once('open', r).once('error', j))));
    const deafClosed = new Promise<number>((r) => deaf.once('close', (code) => r(code)));
    assert.equal(await deafClosed, 1006); // terminated, no close handshake
    await waitFor(() => pings >= 3, { what: 'pings to the responsive peer' });
    assert.equal(good.readyState, WebSocket.OPEN);
  } finally {
    good.terminate();
    deaf.terminate();
    await listener.close();
  }
});

test('websocket: the authenticate hook refuses in the upgrade with its HTTP status, before any JSON-RPC', async () => {
  let connections = 0;
  const seen: (string | undefined)[] = [];
  const listener = await listenWebSocket({
    host: '127.0.0.1',
    port: 0,
    authenticate: async (req) => {
      seen.push(req.headers.authorization);
      return req.headers.authorization === 'Bearer good' ? { ok: true } : { ok: false, status: 401, message: 'invalid token' };
    },
    onConnection: (t) => {
      connections++;
      new RpcConnection(t).setRequestHandler(() => ({ ok: true }));
    },
  });
  try {
    await assert.rejects(connectWebSocketTransport(listener.url, { token: 'bad' }), (e: unknown) => {
      assert.ok(e instanceof WebSocketConnectError);
      assert.equal(e.status, 401);
      assert.match(e.message, /HTTP 401 unauthorized.*invalid token/);
      return true;
    });
    await assert.rejects(connectWebSocketTransport(listener.url), /HTTP 401/);
    assert.equal(connections, 0);
    const t = await connectWebSocketTransport(listener.url, { token: 'good' });
    assert.deepEqual(await new RpcConnection(t).request('x', {}), { ok: true });
    assert.deepEqual(seen, ['Bearer bad', undefined, 'Bearer good']);
    assert.equal(connections, 1);
    t.close();
  } finally {
    await listener.close();
  }
});

test('websocket: a browser Origin is refused with 403 unless allowed', async () => {
  const { listener } = await echoServer({ allowedOrigins: ['https://ok.example'] });
  try {
    await assert.rejects(connectWebSocketTransport(listener.url, { headers: { Origin: 'https://evil.example' } }), (e: unknown) => {
      assert.ok(e instanceof WebSocketConnectError);
      assert.equal(e.status, 403);
      return true;
    });
    const t = await connectWebSocketTransport(listener.url, { headers: { Origin: 'https://ok.example' } });
    t.close();
    const t2 = await connectWebSocketTransport(listener.url); // no Origin: not a browser
    t2.close();
  } finally {
    await listener.close();
  }
});

test('websocket client: clear errors for a refused port and for a handshake that never completes', async () => {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const freePort = (probe.address() as net.AddressInfo).port;
  await new Promise((r) => probe.close(r));
  await assert.rejects(connectWebSocketTransport(`ws://127.0.0.1:${freePort}`), /connection refused \(ECONNREFUSED\)/);

  const silent = net.createServer((s) => s.on('error', () => {})); // accepts TCP, never answers HTTP
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const port = (silent.address() as net.AddressInfo).port;
  try {
    await assert.rejects(connectWebSocketTransport(`ws://127.0.0.1:${port}`, { connectTimeoutMs: 300 }), /timed out|Opening handshake has timed out/);
  } finally {
    silent.close();
  }
  await assert.rejects(connectWebSocketTransport('not a url'), /invalid exec-server URL|Invalid URL/);
});

test('websocket: congestion is reported above the high-water mark and drain fires when the peer reads again', async () => {
  let server: WebSocketTransport | undefined;
  const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, highWaterMark: 64 * 1024, onConnection: (t) => (server = t) });
  const client = new WebSocket(listener.url);
  try {
    await new Promise((r, j) => client.once('open', r).once('error', j));
    await waitFor(() => server !== undefined, { what: 'server side' });
    const raw = (client as unknown as { _socket: net.Socket })._socket;
    raw.pause(); // stop reading: the server's buffers fill up
    const big = { method: 'x', params: { s: 'y'.repeat(1024 * 1024) } };
    // Send until the transport reports congestion (each poll sends one more megabyte).
    await waitFor(() => server!.isCongested() || (server!.send(big), false), { what: 'congestion after filling the socket', interval: 5 });
    assert.equal(server!.isCongested(), true, 'congested after filling the socket');
    const drained = new Promise<void>((r) => server!.onDrain(() => r()));
    raw.resume();
    await drained;
    assert.equal(server!.isCongested(), false);
  } finally {
    client.terminate();
    await listener.close();
  }
});

test('websocket client: keepalive pings notice a peer that stopped answering (half-open link)', async () => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, autoPong: false });
  await new Promise((r) => wss.once('listening', r));
  const port = (wss.address() as net.AddressInfo).port;
  try {
    const t = await connectWebSocketTransport(`ws://127.0.0.1:${port}`, { keepaliveMs: 100 });
    const info = await new Promise<{ reason: string; local: boolean }>((r) => t.onClose(r));
    assert.match(info.reason, /no pong/);
    assert.equal(info.local, false);
  } finally {
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(r));
  }
});
