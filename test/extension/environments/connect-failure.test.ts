// Connect failures are classified by the codes their errors carry (HTTP status of a refused
// upgrade, OS errno, JSON-RPC code), not by their message: each case is a real failure — a real
// server answering 401/403, an HTTP server that is no exec-server (one whose 500 page says
// "Unexpected token", which the message regex took for a wrong token), a closed port, a missing
// command, a command that fails with "Unexpected token" on stderr, a command that never answers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectCommand, connectWebSocket } from '../../../src/client/connect';
import { ExecServer } from '../../../src/server/exec-server';
import { serveConnection } from '../../../src/transports/serve';
import { listenWebSocket, type WebSocketListener } from '../../../src/transports/websocket-server';
import { createAuthenticator } from '../../../src/transports/ws-auth';
import { classifyConnectError } from '../../../src/extension/environments/manager';

/** The error a connect attempt rejects with (fails the test if it connects). */
async function failure(connect: () => Promise<{ close(): Promise<void> }>): Promise<Error> {
  try {
    const c = await connect();
    await c.close();
  } catch (e) {
    assert.ok(e instanceof Error, String(e));
    return e;
  }
  assert.fail('connected');
}

/** A plain HTTP server on 127.0.0.1 answering every request and upgrade with `status` and `body`. */
async function httpServer(status: number, body: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.writeHead(status, { 'content-type': 'text/plain' }).end(body));
  server.on('upgrade', (_req, socket) => {
    socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `ws://127.0.0.1:${port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('connect failure kinds', () => {
  const exec = new ExecServer();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'connect-failure-'));
  let listener: WebSocketListener;
  before(async () => {
    writeFileSync(path.join(tmp, 'token'), 'the-right-token-0123456789');
    listener = await listenWebSocket({
      host: '127.0.0.1',
      port: 0,
      authenticate: createAuthenticator({ mode: 'capability-token', tokenFile: path.join(tmp, 'token') }),
      onConnection: (t) => serveConnection(exec, t),
    });
  });
  after(async () => {
    await listener.close();
    await exec.shutdown();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('a real server answering 401 (wrong token) or 403 (foreign Origin) is unauthorized', async () => {
    const wrong = await failure(() => connectWebSocket(listener.url, { token: 'wrong-token-0123456789', reconnect: false }));
    assert.equal((wrong as { status?: number }).status, 401, wrong.message);
    assert.equal(classifyConnectError(wrong), 'unauthorized');
    const origin = await failure(() =>
      connectWebSocket(listener.url, { token: 'the-right-token-0123456789', headers: { Origin: 'http://evil.example' }, reconnect: false }),
    );
    assert.equal((origin as { status?: number }).status, 403, origin.message);
    assert.equal(classifyConnectError(origin), 'unauthorized');
  });

  it('an HTTP server whose 500 page says "Unexpected token" is a failed connect, not a wrong token', async () => {
    const s = await httpServer(500, 'SyntaxError: Unexpected token < in JSON at position 0');
    try {
      const e = await failure(() => connectWebSocket(s.url, { token: 'the-right-token-0123456789', reconnect: false }));
      assert.match(e.message, /Unexpected token/); // what the old message regex (/token/) read as "unauthorized"
      assert.equal(classifyConnectError(e), 'failed');
    } finally {
      await s.close();
    }
  });

  it('an HTTP server that is no websocket server (200 page) is a failed connect', async () => {
    const s = await httpServer(200, '<html>token expired? no, just a web page</html>');
    try {
      const e = await failure(() => connectWebSocket(s.url, { reconnect: false }));
      assert.equal((e as { status?: number }).status, 200, e.message);
      assert.equal(classifyConnectError(e), 'failed');
    } finally {
      await s.close();
    }
  });

  it('a closed port (ECONNREFUSED) is unreachable', async () => {
    const s = await httpServer(200, '');
    const url = s.url;
    await s.close();
    const e = await failure(() => connectWebSocket(url, { reconnect: false }));
    assert.equal((e as { code?: string }).code, 'ECONNREFUSED', e.message);
    assert.equal(classifyConnectError(e), 'unreachable');
  });

  it('a command that does not exist (ENOENT) is unreachable', async () => {
    const e = await failure(() => connectCommand(path.join(tmp, 'no-such-exec-server'), []));
    assert.equal((e as { code?: string }).code, 'ENOENT', e.message);
    assert.equal(classifyConnectError(e), 'unreachable');
  });

  it('a command that exits with "Unexpected token" on stderr (an old Node failing to parse the server) is a failed connect', async () => {
    const e = await failure(() => connectCommand('sh', ['-c', 'echo "SyntaxError: Unexpected token \'?\'" >&2; sleep 0.3; exit 1'], { initializeTimeoutMs: 5000 }));
    assert.match(e.message, /Unexpected token/); // the stderr tail is part of the message: the old regex said "unauthorized"
    assert.equal(classifyConnectError(e), 'failed', e.message);
  });

  it('a command that never answers initialize (our timeout) is unreachable', async () => {
    const e = await failure(() => connectCommand('sleep', ['30'], { initializeTimeoutMs: 300 }));
    assert.equal(classifyConnectError(e), 'unreachable', e.message);
  });
});
