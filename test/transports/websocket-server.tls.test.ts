// The websocket listener with TLS (wss://): a real handshake with a self-signed certificate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as https from 'node:https';
import { RpcConnection } from '../../src/rpc/connection';
import { connectWebSocketTransport } from '../../src/transports/websocket-client';
import { listenWebSocket } from '../../src/transports/websocket-server';
import { makeSelfSigned, tempDir } from '../support/security';

test('websocket: TLS listener serves wss:// and /readyz over https; untrusted certificates are refused', async () => {
  const tmp = tempDir('exec-wss-');
  const files = makeSelfSigned(tmp.dir, 'srv');
  const cert = readFileSync(files.certFile);
  const listener = await listenWebSocket({
    host: '127.0.0.1',
    port: 0,
    tls: { cert, key: readFileSync(files.keyFile) },
    onConnection: (t) => new RpcConnection(t).setRequestHandler((m) => ({ tls: true, m })),
  });
  try {
    assert.match(listener.url, /^wss:\/\/127\.0\.0\.1:\d+$/);
    const status = await new Promise<number>((resolve, reject) =>
      https.get(listener.url.replace('wss://', 'https://') + '/readyz', { ca: cert }, (res) => resolve(res.statusCode ?? 0)).on('error', reject),
    );
    assert.equal(status, 200);
    const t = await connectWebSocketTransport(listener.url, { ca: cert });
    assert.deepEqual(await new RpcConnection(t).request('hello', {}), { tls: true, m: 'hello' });
    t.close();
    await assert.rejects(connectWebSocketTransport(listener.url), /self[- ]signed|certificate/i);
  } finally {
    await listener.close();
    tmp.dispose();
  }
});
