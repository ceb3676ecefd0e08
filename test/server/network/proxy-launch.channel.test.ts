// The executor's side of the relay's IPC channel (attachProxy), driven as a hostile relay would:
// the channel comes from inside the sandbox, so every message that is not exactly "here is my
// HTTP / SOCKS5 listener on 127.0.0.1" ends the proxy, nothing after the two listeners is taken,
// and the channel is disconnected once they are in.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { test } from 'node:test';
import type { NetworkProxyLaunch } from '../../../src/server/network/launch-config';
import { attachProxy, MAX_CONNECTIONS } from '../../../src/server/network/proxy-launch';
import { setNetworkResolver } from '../../../src/server/network/resolve';
import { waitFor } from '../../support/wait';

class FakeChannel extends EventEmitter {
  connected = true;
  disconnects = 0;
  disconnect(): void {
    this.connected = false;
    this.disconnects++;
  }
}

const launch = (enableSocks5 = true): NetworkProxyLaunch => ({
  proxy: { enabled: true, enableSocks5, enableSocks5Udp: false, allowUpstreamProxy: false, dangerouslyAllowAllUnixSockets: false, mode: 'full', domains: [['localhost', 'allow']], unixSockets: [], allowLocalBinding: false, reviewDomains: [], credentialMasking: false, credentialProviders: [], transparentTcp: false },
  auditMetadata: {},
});

async function listener(host = '127.0.0.1'): Promise<net.Server> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, host, r));
  return s;
}

function attach(ch: FakeChannel, l = launch()) {
  const logs: string[] = [];
  const proxy = attachProxy(ch, { processId: 'p1', launch: l, notify: () => {}, log: (_lvl, m) => logs.push(m) });
  return { proxy, logs };
}

/** What a connection to `port` gets: the first bytes of an answer, or how it ended. */
function probe(port: number, send = 'GET http://127.0.0.1:1/ HTTP/1.1\r\n\r\n', halfClose = false): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let got = '';
    s.on('connect', () => (halfClose ? s.end(send) : s.write(send)));
    s.on('data', (d) => (got += d));
    s.on('error', (e: NodeJS.ErrnoException) => resolve(got || e.code || 'error'));
    s.on('close', () => resolve(got || 'closed'));
    setTimeout(() => {
      s.destroy();
      resolve(got || 'timeout');
    }, 3000);
  });
}

const connections = (s: net.Server) => new Promise<number>((r) => s.getConnections((_e, n) => r(n ?? 0)));

const closedServer = (s: net.Server) => new Promise<boolean>((r) => s.getConnections((e) => r(!!e || !s.listening)));

test('both listeners taken: connections are served by the proxy and the channel is disconnected at once', async () => {
  const ch = new FakeChannel();
  const { proxy } = attach(ch);
  const h = await listener();
  const s = await listener();
  ch.emit('message', { listener: 'http' }, h);
  assert.equal(ch.disconnects, 0);
  ch.emit('message', { listener: 'socks' }, s);
  assert.equal(ch.disconnects, 1, 'nothing more is read from the relay');
  // A request for a loopback literal is judged and refused by the policy: the proxy answered.
  assert.match(await probe((h.address() as net.AddressInfo).port), /^HTTP\/1\.1 403/);
  // ...also to a client that shut down its sending side right after the request, while the
  // decision was still pending (a slow name lookup; `localhost` is allow-listed as that exact
  // name, port 9 has no listener: the 502 is the answer): its FIN must not end our side.
  // The lookup returns only once the proxy's side of the connection has read the client's FIN.
  const finReached = new Promise<void>((r) => h.once('connection', (sock: net.Socket) => sock.once('end', r)));
  setNetworkResolver(async () => {
    await finReached;
    return [{ address: '127.0.0.1', family: 4 }];
  });
  try {
    assert.match(await probe((h.address() as net.AddressInfo).port, 'GET http://localhost:9/ HTTP/1.1\r\n\r\n', true), /^HTTP\/1\.1 502 Bad Gateway[\s\S]*upstream failure$/);
  } finally {
    setNetworkResolver(undefined);
  }
  proxy.close();
  assert.equal(h.listening, false);
  assert.equal(s.listening, false);
});

test('attack: a message that is not a listener hand-over ends the proxy (and closes what came with it)', async () => {
  for (const bad of [{ listener: 'ftp' }, { listener: 'http', extra: 1 }, 'http', null, { cmd: 'NODE_HANDLE' }]) {
    const ch = new FakeChannel();
    const { logs } = attach(ch);
    const h = await listener();
    const rogue = await listener();
    ch.emit('message', { listener: 'http' }, h);
    ch.emit('message', bad, (bad as { listener?: string })?.listener === 'http' ? rogue : rogue);
    assert.equal(ch.connected, false, `disconnected after ${JSON.stringify(bad)}`);
    assert.equal(h.listening, false, `the taken listener is closed after ${JSON.stringify(bad)}`);
    assert.equal(rogue.listening, false, `the handle of ${JSON.stringify(bad)} is closed`);
    assert.ok(logs.some((l) => /the proxy is closed/.test(l)));
  }
});

test('attack: a hand-over without a listening socket, or a listener not on 127.0.0.1, ends the proxy', async () => {
  const ch1 = new FakeChannel();
  attach(ch1);
  ch1.emit('message', { listener: 'http' }, undefined);
  assert.equal(ch1.connected, false);

  const ch2 = new FakeChannel();
  const { logs } = attach(ch2);
  const wide = await listener('0.0.0.0');
  ch2.emit('message', { listener: 'http' }, wide);
  assert.equal(ch2.connected, false);
  assert.equal(wide.listening, false);
  assert.ok(logs.some((l) => /not on 127\.0\.0\.1/.test(l)));
  assert.ok(await closedServer(wide));
});

test('attack: a second listener for the same kind is refused; messages after close are ignored', async () => {
  const ch = new FakeChannel();
  attach(ch);
  const a = await listener();
  const b = await listener();
  ch.emit('message', { listener: 'http' }, a);
  ch.emit('message', { listener: 'http' }, b);
  assert.equal(a.listening, false);
  assert.equal(b.listening, false);
  const c = await listener();
  ch.emit('message', { listener: 'socks' }, c);
  assert.equal(c.listening, true, 'a closed proxy takes nothing more (the handle is left to its owner)');
  c.close();
});

test('SOCKS5 off: the SOCKS listener is closed, connections to it are refused', async () => {
  const ch = new FakeChannel();
  const { proxy } = attach(ch, launch(false));
  const h = await listener();
  const s = await listener();
  const sp = (s.address() as net.AddressInfo).port;
  ch.emit('message', { listener: 'http' }, h);
  ch.emit('message', { listener: 'socks' }, s);
  assert.equal(s.listening, false);
  assert.equal(await probe(sp, '\x05\x01\x00'), 'ECONNREFUSED');
  proxy.close();
});

test(`attack: more than ${MAX_CONNECTIONS} open connections: the rest are reset at once`, async () => {
  const ch = new FakeChannel();
  const { proxy } = attach(ch);
  const h = await listener();
  ch.emit('message', { listener: 'http' }, h);
  ch.emit('message', { listener: 'socks' }, await listener());
  const port = (h.address() as net.AddressInfo).port;
  const held: net.Socket[] = [];
  for (let i = 0; i < MAX_CONNECTIONS; i++) {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    await new Promise((r) => s.once('connect', r));
    held.push(s);
  }
  try {
    // Wait until the proxy holds them all (each one sends nothing yet).
    await waitFor(() => connections(h).then((n) => n >= MAX_CONNECTIONS), { what: 'all connections accepted' });
    assert.equal(await probe(port), 'ECONNRESET');
    held.pop()!.destroy();
    await waitFor(() => connections(h).then((n) => n < MAX_CONNECTIONS), { what: 'one connection gone' });
    assert.match(await probe(port), /^HTTP\/1\.1 403/, 'served again once one closed');
  } finally {
    for (const s of held) s.destroy();
    proxy.close();
  }
});
