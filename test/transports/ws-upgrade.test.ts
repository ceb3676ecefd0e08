// The websocket client under VS Code's proxy support (test/support/vscode-proxy-patch.ts imitates
// what it does to http/https/net/tls in the extension host). A websocket over a given stream (the
// `ssh -W` channel of Connect to Host) must go over that stream only: when it went through
// `http.request`, the proxy agent opened its own socket to the URL's 127.0.0.1:PORT — a listener
// on THIS machine — and sent it the upgrade with the remote server's bearer token (docs/security.md, "Network paths and proxies"). A
// loopback ws:// URL is never handed to a proxy either; a remote one still honours VS Code's proxy.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as net from 'node:net';
import { test } from 'node:test';
import { RpcConnection } from '../../src/rpc/connection';
import { connectWebSocketTransport } from '../../src/transports/websocket-client';
import { listenWebSocket, type WebSocketListener } from '../../src/transports/websocket-server';
import { createTokenVerifier } from '../../src/transports/ws-auth';
import { patchLikeVsCodeProxySupport, recordingListener } from '../support/vscode-proxy-patch';

const TOKEN = 'the-hosts-secret-token-0123456789';

/** A token-checking echo server (what the host's detached exec-server stands for). */
async function tokenServer(): Promise<WebSocketListener> {
  const verify = createTokenVerifier({ mode: 'capability-token', tokenSha256: createHash('sha256').update(TOKEN).digest('hex') });
  return listenWebSocket({
    host: '127.0.0.1',
    port: 0,
    authenticate: (req) => verify(req.headers.authorization),
    onConnection: (t) => new RpcConnection(t).setRequestHandler((method, params) => ({ method, echo: params })),
  });
}

function connectTcp(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

test('ws over a stream: the upgrade and every frame go over the given stream; VS Code-patched http/https/net/tls are never called and a listener on the URL\'s 127.0.0.1:PORT gets no byte', async (t) => {
  const server = await tokenServer();
  // The "forwarded channel": connected before the patch, as ssh's stdio is there before the websocket.
  const stream = await connectTcp(server.port);
  // What squats this machine's 127.0.0.1:PORT — the port the URL names (the remote server's).
  const squatter = await recordingListener();
  const patch = patchLikeVsCodeProxySupport();
  t.after(async () => {
    patch.restore();
    stream.destroy();
    await squatter.close();
    await server.close();
  });
  const connecting = connectWebSocketTransport(`ws://127.0.0.1:${squatter.port}/`, { token: TOKEN, stream, connectTimeoutMs: 5000 }).catch((e: Error) => e);
  const transport = await connecting;
  assert.equal(squatter.received(), '', 'the squatter received nothing');
  assert.deepEqual(patch.calls, [], 'no call of the patched network functions');
  if (transport instanceof Error) throw transport;
  const rpc = new RpcConnection(transport);
  assert.deepEqual(await rpc.request('over-the-stream', { n: 1 }), { method: 'over-the-stream', echo: { n: 1 } });
  // A large message both ways (client frames are masked; the server rejects unmasked ones).
  const big = 'x'.repeat(300_000);
  assert.equal(((await rpc.request('big', { big })) as { echo: { big: string } }).echo.big.length, big.length);
  transport.close('done');
  assert.deepEqual(patch.calls, [], 'no call of the patched network functions');
  assert.equal(squatter.received(), '', 'the squatter received nothing');
});

test('ws over a stream: a wrong Sec-WebSocket-Accept, an unasked extension, a refusal or a stream that ends are errors; nothing is written after the request', async (t) => {
  const answers: [string, RegExp][] = [
    ['HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n', /Sec-WebSocket-Accept/],
    ['HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n', /extension/i],
    ['HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n', /Upgrade/],
    ['HTTP/1.1 401 Unauthorized\r\nContent-Length: 13\r\n\r\ninvalid token', /HTTP 401 unauthorized \(missing or invalid token\): invalid token/],
    ['HTTP/1.1 302 Found\r\nLocation: ws://elsewhere/\r\nContent-Length: 0\r\n\r\n', /HTTP 302 upgrade refused/],
    ['', /closed during the websocket handshake/],
    [`HTTP/1.1 200 OK\r\n${'X-Filler: y\r\n'.repeat(2000)}\r\n`, /oversized/],
  ];
  for (const [answer, expected] of answers) {
    const seen: Buffer[] = [];
    const server = net.createServer((s) => {
      s.on('data', (d: Buffer) => {
        seen.push(d);
        const text = Buffer.concat(seen).toString('latin1');
        if (!text.includes('\r\n\r\n')) return;
        const key = /sec-websocket-key: (\S+)/i.exec(text)?.[1] ?? '';
        const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
        s.end(answer.replace('{accept}', accept));
      });
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const stream = await connectTcp(port);
    await assert.rejects(connectWebSocketTransport(`ws://127.0.0.1:${port}/`, { token: TOKEN, stream, connectTimeoutMs: 5000 }), expected, JSON.stringify(answer.slice(0, 60)));
    const sent = Buffer.concat(seen).toString('latin1');
    assert.match(sent, /^GET \/ HTTP\/1\.1\r\n/);
    assert.equal(sent.indexOf('\r\n\r\n'), sent.length - 4, 'only the upgrade request was sent');
    assert.ok(stream.destroyed, 'the stream is closed after a failed handshake');
    await new Promise<void>((r) => server.close(() => r()));
  }
  void t;
});

test('ws over a stream: no answer within the connect timeout is ETIMEDOUT and closes the stream', async () => {
  const server = net.createServer((s) => s.on('error', () => undefined));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const stream = await connectTcp(port);
  try {
    await assert.rejects(connectWebSocketTransport(`ws://127.0.0.1:${port}/`, { stream, connectTimeoutMs: 300 }), (e: unknown) => (e as { code?: string }).code === 'ETIMEDOUT');
    assert.ok(stream.destroyed);
  } finally {
    server.close();
  }
});

test('ws: a loopback ws:// URL never goes through the patched HTTP stack, so a configured proxy never sees its token', async (t) => {
  const server = await tokenServer();
  const proxy = await recordingListener();
  const patch = patchLikeVsCodeProxySupport({ proxy: proxy.port });
  t.after(async () => {
    patch.restore();
    await proxy.close();
    await server.close();
  });
  for (const host of ['127.0.0.1', 'localhost']) {
    const transport = await connectWebSocketTransport(`ws://${host}:${server.port}/`, { token: TOKEN, connectTimeoutMs: 5000 });
    assert.deepEqual(await new RpcConnection(transport).request('direct', { host }), { method: 'direct', echo: { host } });
    transport.close('done');
  }
  assert.deepEqual(
    patch.calls.filter((c) => !c.startsWith('net.connect ')),
    [],
    'only net.connect (VS Code wraps it to load certificates; it connects where asked)',
  );
  assert.equal(proxy.received(), '', 'the proxy received nothing');
});

test('ws: a remote ws:// host goes through the HTTP stack, so VS Code\'s proxy settings apply to it', async (t) => {
  const proxy = await recordingListener();
  const patch = patchLikeVsCodeProxySupport({ proxy: proxy.port });
  t.after(async () => {
    patch.restore();
    await proxy.close();
  });
  // The name is never resolved: the patched stack sends the request to the "proxy" on 127.0.0.1.
  await assert.rejects(connectWebSocketTransport('ws://exec-host.invalid:8765/', { connectTimeoutMs: 1000 }));
  assert.ok(patch.calls.some((c) => c.startsWith('http.request exec-host.invalid:8765')), patch.calls.join(', '));
  assert.match(proxy.received(), /Host: exec-host\.invalid:8765/);
});
