// The recording proxy used by the Codex agent tests: frames pass unchanged both ways and are
// recorded with requests paired to their answers; the bearer token reaches the upstream; an
// upstream refusal (401) reaches the client as the same HTTP status, not as an upgrade.
// Upstream: our built CLI with capability-token auth (requires `npm run build`).
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import WebSocket from 'ws';
import { ourServer, startWsServer } from '../reference';
import { waitFor } from '../wait';
import { startWsRecorder } from './ws-recorder';

function connect(url: string, token?: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

test('ws-recorder relays and records JSON-RPC, passes the token through, and mirrors a 401', async () => {
  const token = randomBytes(16).toString('hex');
  const srv = await startWsServer(ourServer, ['--ws-auth', 'capability-token', '--ws-token-sha256', createHash('sha256').update(token).digest('hex')]);
  const rec = await startWsRecorder(srv.url);
  try {
    const ws = await connect(rec.url, token);
    const answers: any[] = [];
    ws.on('message', (d) => answers.push(JSON.parse(String(d))));
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { clientName: 'rec-test' } }));
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'no/such/method', params: {} }));
    await waitFor(() => answers.length >= 2, { what: 'both answers relayed to the client', timeout: 10_000 });
    assert.equal(answers.length, 2, 'both answers relayed to the client');

    const [init] = rec.calls('initialize');
    assert.equal(init.params.clientName, 'rec-test');
    assert.ok(init.result && typeof init.result.sessionId === 'string', `initialize answer recorded: ${JSON.stringify(init)}`);
    const [bad] = rec.calls('no/such/method');
    assert.equal(bad.error?.code, -32601, 'the error answer is paired with its request');
    assert.equal(rec.authorizations[0], `Bearer ${token}`);
    // Frames are relayed byte for byte (the two answers may come in either order: pick id 1's).
    assert.deepEqual(answers.find((a) => a.id === 1), JSON.parse(rec.frames.find((f) => f.dir === 'in' && f.msg?.id === 1)!.raw));
    ws.close();

    await assert.rejects(connect(rec.url), /HTTP 401/, 'no token: the upstream 401 reaches the client');
    await assert.rejects(connect(rec.url, 'wrong'), /HTTP 401/, 'wrong token: 401');
  } finally {
    await rec.stop();
    await srv.stop();
  }
});
