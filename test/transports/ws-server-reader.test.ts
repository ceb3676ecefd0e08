// The server's own websocket frame reader (src/transports/ws-server-reader.ts) on a real
// listener (listenWebSocket), driven by a raw TCP client that writes exactly the masked bytes each
// test wants: a frame in the same write as the upgrade request, random streams cut anywhere
// (text, fs/writeBlock's kind 3 frames up to 1.5 MiB, fragments with pings inside), the protocol
// violations `ws` refuses, and the recycling rules: a lent chunk keeps its bytes until it is
// given back, a slab is read into again only after that, and the engine's fs/writeBlock gives
// every chunk back (written or refused).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { listenWebSocket, type WebSocketListener } from '../../src/transports/websocket-server';
import type { WebSocketTransport } from '../../src/transports/websocket-transport';
import { encodeResponseBytesFrame } from '../../src/transports/output-frame';
import { markBytes } from '../../src/rpc/bytes-members';
import { isRecycled, readBlockStats, returnChunk } from '../../src/server/process/read-blocks';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectWebSocket } from '../../src/client/connect';
import { ourWsServer } from '../support/flow';
import { waitFor } from '../support/wait';
import { randomStream, rng, wsFrame } from '../support/ws-frames';
import { SERVER_MESSAGES_PER_SLICE } from '../../src/transports/ws-frame-reader';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** A client frame masked with a random key. */
const frame = (opcode: number, payload: Buffer, opts: { fin?: boolean; first?: number } = {}) => wsFrame(opcode, payload, { ...opts, mask: randomBytes(4) });

/** fs/writeBlock's request as our client sends it to a binaryOutput server: a kind 3 frame. */
const writeBlock = (id: number, chunk: Buffer) => encodeResponseBytesFrame({ jsonrpc: '2.0', id, method: 'fs/writeBlock', params: markBytes({ handleId: 'h', offset: id, chunk }, 'chunk') });

/** Server frames (unmasked) parsed from what the client read. */
function serverFrames(buf: Buffer): { opcode: number; payload: Buffer }[] {
  const out: { opcode: number; payload: Buffer }[] = [];
  let i = 0;
  while (i + 2 <= buf.length) {
    assert.equal(buf[i + 1] & 0x80, 0, 'a server frame is never masked');
    let len = buf[i + 1] & 0x7f;
    let p = i + 2;
    if (len === 126) (len = buf.readUInt16BE(p)), (p += 2);
    else if (len === 127) (len = buf.readUInt32BE(p + 4)), (p += 8);
    if (p + len > buf.length) break;
    out.push({ opcode: buf[i] & 0x0f, payload: Buffer.from(buf.subarray(p, p + len)) });
    i = p + len;
  }
  return out;
}

/** A listener whose connections' messages (and close) are recorded. */
async function server(maxPayload?: number) {
  const messages: unknown[] = [];
  let transport: WebSocketTransport | undefined;
  let closed: string | undefined;
  const listener: WebSocketListener = await listenWebSocket({
    host: '127.0.0.1',
    port: 0,
    ...(maxPayload ? { maxPayload } : {}),
    onConnection(t) {
      transport = t;
      t.onMessage((m) => messages.push(m));
      t.onClose((c) => (closed = c.reason));
    },
  });
  return { listener, messages, transport: () => transport, closed: () => closed };
}

/** A raw client: the upgrade request (with `withRequest` in the same write), then what the test sends; records what it reads. */
async function rawClient(port: number, withRequest: Buffer = Buffer.alloc(0)) {
  const socket = net.connect({ host: '127.0.0.1', port });
  await new Promise<void>((r) => socket.once('connect', () => r()));
  const key = randomBytes(16).toString('base64');
  const request = `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`;
  let read = Buffer.alloc(0);
  let ended = false;
  socket.on('data', (d) => (read = Buffer.concat([read, d])));
  socket.on('close', () => (ended = true));
  socket.on('error', () => undefined);
  socket.write(Buffer.concat([Buffer.from(request), withRequest]));
  await waitFor(() => read.indexOf('\r\n\r\n') >= 0, { what: 'the 101 response' });
  const headEnd = read.indexOf('\r\n\r\n');
  const response = read.subarray(0, headEnd).toString('latin1');
  assert.match(response, /^HTTP\/1.1 101/);
  assert.ok(response.includes(createHash('sha1').update(key + GUID).digest('base64')));
  const afterHead = () => read.subarray(headEnd + 4);
  return {
    socket,
    frames: () => serverFrames(afterHead()),
    ended: () => ended,
    /** Writes `all` in pieces of the given sizes, letting the server read between them. */
    async send(all: Buffer, piece?: () => number) {
      for (let off = 0; off < all.length; ) {
        const n = Math.max(1, piece?.() ?? all.length);
        socket.write(all.subarray(off, off + n));
        off += n;
        if (piece) await new Promise((r) => setImmediate(r));
      }
    },
  };
}

test('on plain TCP the reader is ours: a kind 3 chunk arrives as a view of a recycled slab, unmasked in place', async () => {
  const srv = await server();
  try {
    const c = await rawClient(srv.listener.port);
    const chunk = randomBytes(64 * 1024);
    await c.send(frame(2, writeBlock(1, chunk)));
    await waitFor(() => srv.messages.length === 1, { what: 'the writeBlock request' });
    const got = (srv.messages[0] as { params: { chunk: Buffer } }).params.chunk;
    assert.ok(got.equals(chunk), 'the bytes intact');
    // With ws's receiver the chunk is in a buffer of its own (a copy per frame that spans reads).
    assert.ok(isRecycled(got), 'the chunk is a view of one of the reader’s recycled slabs');
    returnChunk(got);
    c.socket.destroy();
  } finally {
    await srv.listener.close();
  }
});

test('a frame sent in the same write as the upgrade request is read, after the connection’s listeners are set up', async () => {
  const srv = await server();
  try {
    const c = await rawClient(srv.listener.port, frame(1, Buffer.from('{"jsonrpc":"2.0","method":"early"}')));
    await waitFor(() => srv.messages.length === 1, { what: 'the early message' });
    assert.deepEqual(srv.messages[0], { jsonrpc: '2.0', method: 'early' });
    c.socket.destroy();
  } finally {
    await srv.listener.close();
  }
});

test('random valid streams (text, kind 3 chunks up to 1.5 MiB, fragments with pings inside, random cuts) arrive exactly; pings get unmasked pongs', async () => {
  const srv = await server(64 * 1024 * 1024);
  try {
    for (let seed = 1; seed <= 20; seed++) {
      const r = rng(seed);
      const { wire, expected, pings } = randomStream(seed, r, writeBlock, (op, payload, fin) => frame(op, payload, { fin }));
      const sizes = [1, 7, 100, 4096, 65_536, 300_000, 2_000_000];
      srv.messages.length = 0;
      const c = await rawClient(srv.listener.port);
      await c.send(Buffer.concat(wire), () => sizes[r(sizes.length)]);
      await waitFor(() => srv.messages.length === expected.length, { what: `all messages of case ${seed}` });
      for (const [k, want] of expected.entries()) {
        if ('data' in want) {
          const got = srv.messages[k] as { id: number; params: { chunk: Buffer } };
          assert.equal(got.id, want.index, `case ${seed} message ${k}`);
          assert.ok(got.params.chunk.equals(want.data), `case ${seed} message ${k}: ${want.data.length} bytes intact`);
          returnChunk(got.params.chunk);
        } else assert.deepEqual(srv.messages[k], want.json, `case ${seed} message ${k}`);
      }
      await waitFor(() => c.frames().filter((f) => f.opcode === 10).length === pings.length, { what: `${pings.length} pongs of case ${seed}` });
      assert.deepEqual(c.frames().filter((f) => f.opcode === 10).map((f) => f.payload.toString()), pings);
      assert.equal(srv.transport()!.closed, false, `case ${seed}: the connection is still open`);
      c.socket.destroy();
      await waitFor(() => srv.transport()!.closed, { what: `case ${seed}'s connection to close` });
    }
  } finally {
    await srv.listener.close();
  }
});

const violations: [string, Buffer, number][] = [
  ['an unmasked frame', wsFrame(1, Buffer.from('{}')), 1002],
  ['RSV1 without an extension', frame(1, Buffer.from('{}'), { first: 0xc1 }), 1002],
  ['an unknown opcode', frame(3, Buffer.from('x')), 1002],
  ['a fragmented ping', frame(9, Buffer.from('x'), { fin: false }), 1002],
  ['a continuation without a message', frame(0, Buffer.from('x')), 1002],
  ['a message over maxPayload', frame(2, Buffer.alloc(5000)), 1009],
  ['invalid UTF-8 in a text message', frame(1, Buffer.from([0x7b, 0xff, 0x7d])), 1007],
  ['a close code that may not be sent', frame(8, Buffer.from([0x03, 0xed])), 1002],
];
for (const [name, bytes, code] of violations) {
  test(`protocol violation: ${name} is answered with close code ${code}, the connection ends, nothing is delivered`, async () => {
    const srv = await server(4096);
    try {
      const c = await rawClient(srv.listener.port);
      await c.send(Buffer.concat([bytes, frame(1, Buffer.from('{"jsonrpc":"2.0","method":"after"}'))]));
      await waitFor(() => c.ended(), { what: 'the connection to end' });
      const close = c.frames().find((f) => f.opcode === 8);
      assert.ok(close, 'a close frame was sent');
      assert.equal(close.payload.readUInt16BE(0), code);
      assert.deepEqual(srv.messages, []);
      await waitFor(() => srv.closed() !== undefined, { what: 'the transport to close' });
    } finally {
      await srv.listener.close();
    }
  });
}

test('a message over maxPayload from a client that goes on sending and reads only afterwards: it still gets the 1009 close frame, then the end (never a reset for the bytes the server did not read)', async () => {
  const srv = await server(4096);
  try {
    const c = await rawClient(srv.listener.port);
    const errors: string[] = [];
    c.socket.on('error', (e: NodeJS.ErrnoException) => errors.push(e.code ?? e.message));
    // The frame's head is refused at once; its 8 MiB of payload keep coming while the client reads nothing.
    c.socket.pause();
    await c.send(frame(2, Buffer.alloc(8 * 1024 * 1024)), () => 256 * 1024);
    await new Promise<void>((r, j) => c.socket.write(Buffer.alloc(0), (e) => (e ? j(e) : r()))).catch((e: NodeJS.ErrnoException) => errors.push(`write: ${e.code}`));
    c.socket.resume();
    await waitFor(() => c.ended(), { what: 'the connection to end' });
    assert.deepEqual(errors, [], 'no reset, no failed write');
    const close = c.frames().find((f) => f.opcode === 8);
    assert.ok(close, 'the close frame was read');
    assert.equal(close.payload.readUInt16BE(0), 1009);
    assert.deepEqual(srv.messages, []);
  } finally {
    await srv.listener.close();
  }
});

test('the client’s close frame: its code and reason reach the transport, and the close is answered', async () => {
  const srv = await server();
  try {
    const c = await rawClient(srv.listener.port);
    await c.send(frame(8, Buffer.concat([Buffer.from([0x0f, 0xa0]), Buffer.from('bye now')])));
    await waitFor(() => srv.closed() !== undefined, { what: 'the transport to close' });
    assert.equal(srv.closed(), 'bye now');
    await waitFor(() => c.frames().some((f) => f.opcode === 8), { what: 'the answering close frame' });
    assert.equal(c.frames().find((f) => f.opcode === 8)!.payload.readUInt16BE(0), 4000);
    await waitFor(() => c.ended(), { what: 'the server to end the connection' });
  } finally {
    await srv.listener.close();
  }
});

test('a chunk not given back keeps its bytes while megabytes more are read; once given back, its slab is read into again', async () => {
  const srv = await server();
  try {
    const c = await rawClient(srv.listener.port);
    const kept = Buffer.alloc(64 * 1024, 0xaa);
    await c.send(frame(2, writeBlock(0, kept)));
    await waitFor(() => srv.messages.length === 1, { what: 'the first chunk' });
    const first = (srv.messages[0] as { params: { chunk: Buffer } }).params.chunk;
    assert.ok(isRecycled(first));
    // 16 MiB of other bytes, each chunk given back at once: slabs are recycled meanwhile, never
    // the kept one's (a chunk in its slab once the reader had moved on from it would be a reuse).
    const slab = first.buffer;
    let movedOn = false;
    const inKeptSlab = (chunk: Buffer) => {
      if (chunk.buffer !== slab) movedOn = true;
      return movedOn && chunk.buffer === slab;
    };
    const reusedBefore = readBlockStats.reused;
    let i = 1;
    for (; i <= 256; i++) {
      await c.send(frame(2, writeBlock(i, Buffer.alloc(64 * 1024, i & 0xff))));
      await waitFor(() => srv.messages.length === i + 1, { what: `chunk ${i}` });
      const chunk = (srv.messages[i] as { params: { chunk: Buffer } }).params.chunk;
      assert.equal(chunk[0], i & 0xff);
      assert.ok(!inKeptSlab(chunk), `chunk ${i}: the kept chunk's slab is not read into again`);
      assert.ok(first.equals(kept), `after chunk ${i}: the kept chunk is intact`);
      returnChunk(chunk);
      returnChunk(chunk); // a second give-back is not a second release
    }
    assert.ok(readBlockStats.reused > reusedBefore, 'slabs whose chunks were all given back were read into again');
    // Given back: the next slab the reader needs may be that one.
    returnChunk(first);
    let reusedKept = false;
    for (; i <= 400 && !reusedKept; i++) {
      await c.send(frame(2, writeBlock(i, Buffer.alloc(64 * 1024, 0x55))));
      await waitFor(() => srv.messages.length === i + 1, { what: `chunk ${i}` });
      const chunk = (srv.messages[i] as { params: { chunk: Buffer } }).params.chunk;
      reusedKept = inKeptSlab(chunk);
      returnChunk(chunk);
    }
    assert.ok(reusedKept, 'the slab of the given-back chunk was read into again');
    c.socket.destroy();
  } finally {
    await srv.listener.close();
  }
});

test('through the engine: a streamed save gives every chunk back, and so does a writeBlock that is refused', async (t) => {
  const srv = await ourWsServer();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ws-reader-'));
  t.after(async () => {
    await srv.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const heldBefore = readBlockStats.held;
  const client = await connectWebSocket(srv.url, { binaryOutput: true, reconnect: false });
  try {
    assert.equal(client.binaryOutputEnabled, true);
    const data = randomBytes(8 * 1024 * 1024 + 3);
    const f = path.join(dir, 'save.bin');
    await client.fs.writeFile(f, data, { streamAboveBytes: 1024 });
    assert.ok(readFileSync(f).equals(data), 'the saved bytes');
    // Refused before any write: a handle that does not exist.
    await assert.rejects(client.request('fs/writeBlock', markBytes({ handleId: 'nope', offset: 0, chunk: Buffer.alloc(64 * 1024, 1) }, 'chunk')), /unknown file handle/);
    // The connection's reader still holds the slab it reads into now, and nothing else.
    await waitFor(() => readBlockStats.held <= heldBefore + 1, { what: 'every lent chunk given back', detail: () => `held ${readBlockStats.held}, before ${heldBefore}` });
  } finally {
    await client.close();
  }
  await waitFor(() => readBlockStats.held <= heldBefore, { what: 'the reader’s own slab released with its connection', detail: () => `held ${readBlockStats.held}, before ${heldBefore}` });
});

test('a paused connection gets no further message from bytes already read; on resume the rest arrive in order, then the ping behind them is answered', async () => {
  const srv = await server();
  try {
    const c = await rawClient(srv.listener.port);
    const frames = Array.from({ length: 500 }, (_, i) => frame(1, Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'm', params: { i } }))));
    let deliveredWhilePaused = -1;
    const t = srv.transport()!;
    const sub = t.onMessage(() => {
      if (srv.messages.length !== 1) return;
      // Paused in the first message's handler: what the same read holds must wait.
      t.pauseIncoming!(true);
      setImmediate(() => {
        deliveredWhilePaused = srv.messages.length;
        t.pauseIncoming!(false);
      });
    });
    await c.send(Buffer.concat([...frames, frame(9, Buffer.from('behind them'))]));
    await waitFor(() => srv.messages.length === 500, { what: 'all 500 messages after the resume' });
    sub.dispose();
    assert.equal(deliveredWhilePaused, 1, 'nothing was delivered while paused');
    assert.deepEqual(srv.messages.map((m) => (m as { params: { i: number } }).params.i), frames.map((_, i) => i));
    await waitFor(() => c.frames().some((f) => f.opcode === 10), { what: 'the pong of the ping behind them' });
    c.socket.destroy();
  } finally {
    await srv.listener.close();
  }
});

test('a burst of 2 000 requests in one write is handed on in slices of at most SERVER_MESSAGES_PER_SLICE per event-loop turn, every one in order; a timer set at the first one fires before the burst is done', async () => {
  const srv = await server();
  try {
    const c = await rawClient(srv.listener.port);
    const frames = Array.from({ length: 2000 }, (_, i) => frame(1, Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'm', params: { i } }))));
    let atFirstImmediate = -1;
    let atFirstTimer = -1;
    const t = srv.transport()!;
    const sub = t.onMessage(() => {
      if (srv.messages.length !== 1) return;
      setImmediate(() => (atFirstImmediate = srv.messages.length));
      setTimeout(() => (atFirstTimer = srv.messages.length), 0);
    });
    await c.send(Buffer.concat(frames));
    await waitFor(() => srv.messages.length === 2000, { what: 'all 2 000 messages' });
    sub.dispose();
    // Handled in one go, the first read's requests (and their answers) were all alive at once:
    // before the slices, the first immediate ran after every message the read held (~1 000 or more).
    assert.ok(atFirstImmediate >= 1 && atFirstImmediate <= SERVER_MESSAGES_PER_SLICE, `messages handed on in the first turn: ${atFirstImmediate}`);
    assert.ok(atFirstTimer >= 1 && atFirstTimer < 2000, `messages handed on before a timer set at the first one fired: ${atFirstTimer}`);
    assert.deepEqual(srv.messages.map((m) => (m as { params: { i: number } }).params.i), frames.map((_, i) => i));
    c.socket.destroy();
  } finally {
    await srv.listener.close();
  }
});
