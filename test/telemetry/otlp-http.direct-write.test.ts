// Our OTLP transport (src/telemetry/otlp-http.ts) writes a request straight to its socket's
// descriptor, not through Node's stream code: that code (Writable.write, cork, writev) is
// optimized for the server's accepted sockets, and the transport's socket, of another shape,
// deoptimized it in every server with traces on ("wrong map", docs/performance.md "Telemetry
// cost"). What the socket does not take at once still goes through the stream, intact.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import * as net from 'node:net';
import { test } from 'node:test';
import { rawHttpTransport } from '../../src/telemetry/otlp-http';
import { rawCollector } from '../support/telemetry';
import { waitFor } from '../support/wait';

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n';

test('each request goes straight to the socket: its stream write is never called when the socket takes it all', async () => {
  const c = await rawCollector(() => OK);
  const port = Number(new URL(c.url).port);
  const transport = rawHttpTransport({ url: c.url, headers: async () => ({}) });
  // A socket's write is the stream's (Duplex.prototype.write): shadowed on net.Socket's prototype
  // for the test, it sees every socket write of this process.
  const streamWrites: net.Socket[] = [];
  const own = Object.getOwnPropertyDescriptor(net.Socket.prototype, 'write');
  const write = net.Socket.prototype.write;
  net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
    if (this.remotePort === port) streamWrites.push(this);
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  };
  try {
    const body = Buffer.alloc(20_000, 7);
    // The first on a new connection (it waits for the connect), the rest on the same one.
    for (let i = 0; i < 5; i++) assert.equal((await transport.send(body, 10_000)).status, 'success');
  } finally {
    if (own) Object.defineProperty(net.Socket.prototype, 'write', own);
    else delete (net.Socket.prototype as { write?: unknown }).write;
    transport.shutdown();
    await c.close();
  }
  assert.equal(c.sockets.length, 1, 'one keep-alive connection');
  assert.equal(c.seen.length, 5);
  for (const r of c.seen) assert.ok(r.body.equals(Buffer.alloc(20_000, 7)));
  assert.equal(streamWrites.length, 0, 'the transport wrote through its socket\'s stream');
});

test('a request the socket does not take at once goes out whole through the stream: head and body intact, in order', async () => {
  // The collector reads nothing for a while: the kernel's buffers fill, the direct write takes
  // only part of a 24 MiB request, and the rest waits in the stream.
  const c = await rawCollector(() => OK);
  const port = Number(new URL(c.url).port);
  const transport = rawHttpTransport({ url: c.url, headers: async () => ({}) });
  const direct: number[] = [];
  const writevSync = fs.writevSync;
  fs.writevSync = (...args: Parameters<typeof fs.writevSync>) => {
    const n = writevSync(...args);
    direct.push(n);
    return n;
  };
  try {
    const small = Buffer.from('first, on a new connection');
    assert.equal((await transport.send(small, 30_000)).status, 'success');
    const held = c.sockets[0];
    held.pause();
    const big = Buffer.alloc(24 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i, i);
    const second = transport.send(big, 30_000);
    // Its direct write has happened (and taken what the kernel's buffers had room for) before the
    // collector reads again.
    await waitFor(() => direct.length >= 2, { timeout: 10_000, what: 'the direct write of the big request' });
    held.resume();
    assert.equal((await second).status, 'success');
    const third = Buffer.from('third, after the stream drained');
    assert.equal((await transport.send(third, 30_000)).status, 'success');
    assert.equal(c.seen.length, 3);
    assert.ok(c.seen[0].body.equals(small));
    assert.ok(c.seen[1].body.equals(big), 'the 24 MiB body arrived byte for byte');
    assert.ok(c.seen[2].body.equals(third));
    // The big one went partly straight to the socket, partly through the stream.
    assert.equal(direct.length, 3);
    assert.ok(direct[1] > 0 && direct[1] < big.length, `direct write of the big request: ${direct[1]} bytes`);
  } finally {
    fs.writevSync = writevSync;
    transport.shutdown();
    await c.close();
  }
});
