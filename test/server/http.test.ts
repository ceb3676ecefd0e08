// src/server/http.ts: http/request buffered and streamed, its errors; environment/info and /status with null params.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { after, before, test } from 'node:test';
import { ExecServer } from '../../src/server/exec-server';
import { b64, type Client, connectClient, rejectsWith, unb64, uri } from '../support/server';

let server: ExecServer;
let c: Client;
let web: http.Server;
let base: string;
before(async () => {
  server = new ExecServer();
  c = await connectClient(server);
  web = http.createServer((req, res) => {
    if (req.url === '/redirect') {
      res.writeHead(302, { location: '/hello' });
      res.end();
      return;
    }
    if (req.url === '/echo') {
      const parts: Buffer[] = [];
      req.on('data', (d) => parts.push(d));
      req.on('end', () => {
        res.writeHead(201, { 'x-method': req.method!, 'x-got': String(req.headers['x-test'] ?? '') });
        res.end(Buffer.concat(parts));
      });
      return;
    }
    if (req.url === '/stream') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('part1-');
      setTimeout(() => res.end('part2'), 50);
      return;
    }
    if (req.url === '/slow') {
      setTimeout(() => res.end('late'), 5_000).unref();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('hello');
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
});
after(async () => {
  await server.shutdown();
  web.closeAllConnections();
  await new Promise((r) => web.close(r));
});

test('http/request: buffered body, method/headers/body sent, redirect policies', async () => {
  const r = await c.call('http/request', { method: 'GET', url: `${base}/hello`, headers: [], requestId: 'r1' });
  assert.equal(r.status, 200);
  assert.equal(unb64(r.bodyBase64), 'hello');
  assert.ok(r.headers.some((h: any) => h.name === 'content-type' && h.value === 'text/plain'));
  const e = await c.call('http/request', {
    method: 'POST',
    url: `${base}/echo`,
    headers: [{ name: 'X-Test', value: 'yes' }],
    bodyBase64: b64('payload'),
    requestId: 'r2',
  });
  assert.equal(e.status, 201);
  assert.equal(unb64(e.bodyBase64), 'payload');
  assert.ok(e.headers.some((h: any) => h.name === 'x-method' && h.value === 'POST'));
  assert.ok(e.headers.some((h: any) => h.name === 'x-got' && h.value === 'yes'));
  const stop = await c.call('http/request', { method: 'GET', url: `${base}/redirect`, headers: [], requestId: 'r3', redirectPolicy: 'stop' });
  assert.equal(stop.status, 302);
  assert.ok(stop.headers.some((h: any) => h.name === 'location' && h.value === '/hello'));
  const follow = await c.call('http/request', { method: 'GET', url: `${base}/redirect`, headers: [], requestId: 'r4', redirectPolicy: 'follow' });
  assert.equal(follow.status, 200);
  assert.equal(unb64(follow.bodyBase64), 'hello');
});

test('http/request: streamed body arrives as ordered bodyDelta notifications after the result', async () => {
  const r = await c.call('http/request', { method: 'GET', url: `${base}/stream`, headers: [], requestId: 's1', streamResponse: true });
  assert.equal(r.status, 200);
  assert.equal(r.bodyBase64, '');
  const deltas = () => c.sink.events.filter((e) => e.method === 'http/request/bodyDelta' && e.params.requestId === 's1').map((e) => e.params);
  await c.sink.waitFor(() => deltas().some((d) => d.done), 10_000, 'done delta');
  const ds = deltas();
  assert.deepEqual(ds.map((d) => d.seq), ds.map((_, i) => i + 1));
  assert.equal(ds.map((d) => unb64(d.deltaBase64)).join(''), 'part1-part2');
  assert.equal(ds[ds.length - 1].error, null);
});

test('http/request errors: invalid url, unreachable, timeout, bad params', async () => {
  await rejectsWith(c.call('http/request', { method: 'GET', url: 'notaurl', headers: [], requestId: 'e1' }), -32602, 'http/request url is invalid: relative URL without a base');
  await rejectsWith(c.call('http/request', { method: 'GET', url: 'http://127.0.0.1:1/', headers: [], requestId: 'e2' }), -32603, /^http\/request failed: /);
  await rejectsWith(c.call('http/request', { method: 'GET', url: `${base}/slow`, headers: [], requestId: 'e3', timeoutMs: 200 }), -32603, /http\/request failed/);
  await rejectsWith(c.call('http/request', { url: base, headers: [], requestId: 'e4' }), -32602, 'missing field `method`');
  await rejectsWith(c.call('http/request', { method: 'GET', url: base, headers: [], requestId: 'e5', redirectPolicy: 'maybe' }), -32602, /unknown variant `maybe`/);
});

test('environment/info and environment/status accept null params', async () => {
  const info = await c.call('environment/info', null);
  const shell = process.env.SHELL || os.userInfo().shell || '/bin/sh';
  assert.deepEqual(info.shell, { name: shell.split('/').pop(), path: shell });
  assert.equal(info.cwd, uri(process.cwd()));
  assert.equal(info.userHomeDir, uri(os.homedir()));
  assert.equal(info.tempDir, uri(os.tmpdir()));
  assert.equal(info.platformOs, process.platform === 'darwin' ? 'macos' : process.platform);
  assert.equal(typeof info.executorVersion, 'string');
  assert.equal(typeof info.capabilities, 'object');
  assert.deepEqual(await c.call('environment/status', null), { status: 'ready' });
  assert.deepEqual(await c.call('environment/status', {}), { status: 'ready' });
  await rejectsWith(c.call('environment/info', 5), -32602, /invalid type: number/);
});
