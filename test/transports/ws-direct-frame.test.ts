// Binary output and readBlock frames written straight to the socket (src/transports/ws-direct-frame.ts)
// must be exactly the messages `ws.send` would have produced: every websocket length encoding
// (7-bit, 16-bit, 64-bit), empty payloads, views into larger buffers, and in order with JSON
// messages sent in the same tick, and base64 JSON text frames built in recycled blocks. A plain
// `ws` client (the real parser) reads them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { listenWebSocket } from '../../src/transports/websocket-server';
import type { WebSocketTransport } from '../../src/transports/websocket-transport';
import { connectWebSocketTransport } from '../../src/transports/websocket-client';
import { decodeFrame, decodeOutputFrame } from '../../src/transports/output-frame';
import { directSocket, wsBinaryHeader } from '../../src/transports/ws-direct-frame';
import { markBytes } from '../../src/rpc/bytes-members';
import { markVerbatim } from '../../src/rpc/verbatim';
import { readBlockStats } from '../../src/server/process/read-blocks';
import { waitFor } from '../support/wait';

/** Bytes with a position-dependent pattern, so a shifted or truncated payload cannot compare equal. */
function pattern(n: number, salt: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + salt) & 0xff;
  return b;
}

async function serverAndClient() {
  let server: WebSocketTransport | undefined;
  const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => (server = t) });
  const ws = new WebSocket(listener.url, { maxPayload: 64 * 1024 * 1024 });
  const got: { data: Buffer; isBinary: boolean }[] = [];
  ws.on('message', (data, isBinary) => got.push({ data: data as Buffer, isBinary }));
  await new Promise((r, j) => ws.once('open', r).once('error', j));
  await waitFor(() => server !== undefined, { what: 'server side of the connection' });
  return { listener, ws, server: server!, got };
}

test('websocket header for each length encoding matches the RFC 6455 layout', () => {
  assert.deepEqual([...wsBinaryHeader(0)], [0x82, 0]);
  assert.deepEqual([...wsBinaryHeader(125)], [0x82, 125]);
  assert.deepEqual([...wsBinaryHeader(126)], [0x82, 126, 0, 126]);
  assert.deepEqual([...wsBinaryHeader(65535)], [0x82, 126, 0xff, 0xff]);
  assert.deepEqual([...wsBinaryHeader(65536)], [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0]);
  assert.deepEqual([...wsBinaryHeader(2 ** 32 + 5)], [0x82, 127, 0, 0, 0, 1, 0, 0, 0, 5]);
});

test('output frames written around ws.send arrive intact and in order with JSON sent in the same tick', async () => {
  const { listener, ws, server, got } = await serverAndClient();
  try {
    assert.ok(directSocket(server.socket), 'the server side of an open socket takes the direct path');
    // Total frame lengths around 125/126, 65535/65536 and well above (header is 14 + id bytes).
    const id = 'p-é';
    const over = 14 + Buffer.byteLength(id);
    const sizes = [0, 1, 125 - over, 126 - over, 65535 - over, 65536 - over, 200_000, 1_048_576 + 3];
    const payloads = sizes.map((n, i) => pattern(n, i));
    const backing = pattern(300_000, 99);
    const view = backing.subarray(1234, 1234 + 70_000); // a view into a larger buffer: only its bytes go out
    let seq = 1;
    for (const p of payloads) {
      server.sendOutputFrame(id, seq++, 'stdout', p);
      server.send({ method: 'note', params: { after: seq - 1 } });
    }
    server.sendOutputFrame(id, seq++, 'stderr', view);
    const expected = payloads.length * 2 + 1;
    await waitFor(() => got.length === expected, { what: `${expected} messages` });
    for (let i = 0; i < payloads.length; i++) {
      const frame = got[2 * i];
      assert.equal(frame.isBinary, true);
      const m = decodeOutputFrame(frame.data);
      assert.equal(m.params.seq, i + 1);
      assert.equal(m.params.processId, id);
      assert.ok(m.params.data.equals(payloads[i]), `payload ${i} (${sizes[i]} bytes) intact`);
      const note = got[2 * i + 1];
      assert.equal(note.isBinary, false);
      assert.deepEqual(JSON.parse(note.data.toString()), { method: 'note', params: { after: i + 1 } });
    }
    const last = decodeOutputFrame(got[expected - 1].data);
    assert.equal(last.params.stream, 'stderr');
    assert.ok(last.params.data.equals(view));
  } finally {
    ws.close();
    await listener.close();
  }
});

test('a readBlock answer (kind 2) written around ws.send carries its JSON and bytes', async () => {
  const { listener, ws, server, got } = await serverAndClient();
  try {
    const bytes = pattern(1_048_576, 7);
    server.send({ id: 7, result: markBytes({ chunk: bytes, eof: false }, 'chunk') });
    server.send({ id: 8, result: markBytes({ chunk: Buffer.alloc(0), eof: true }, 'chunk') });
    await waitFor(() => got.length === 2, { what: 'two answers' });
    const a = decodeFrame(got[0].data) as { id: number; result: { chunk: Buffer; eof: boolean } };
    assert.equal(a.id, 7);
    assert.equal(a.result.eof, false);
    assert.ok(a.result.chunk.equals(bytes));
    const b = decodeFrame(got[1].data) as { id: number; result: { chunk: Buffer; eof: boolean } };
    assert.deepEqual({ id: b.id, eof: b.result.eof, len: b.result.chunk.length }, { id: 8, eof: true, len: 0 });
  } finally {
    ws.close();
    await listener.close();
  }
});

test('the client side of a socket (frames must be masked) never takes the direct path', async () => {
  const { listener, ws, server } = await serverAndClient();
  const client = await connectWebSocketTransport(listener.url);
  try {
    assert.equal(directSocket(client.socket), undefined);
    assert.ok(directSocket(server.socket));
  } finally {
    client.close();
    ws.close();
    await listener.close();
  }
});

test('base64 output notifications built in recycled text frames arrive intact, in order, for every length encoding', async () => {
  const { listener, ws, server, got } = await serverAndClient();
  try {
    const held0 = readBlockStats.held;
    const reused0 = readBlockStats.reused;
    // Chunk sizes whose JSON lands in each websocket length encoding, a 64 KiB pipe read (the
    // streaming case, 64-bit length) and one above the pooled frame size (sent as before).
    const sizes = [1, 60, 1000, 48_000, 65_536, 73_000, 200_000];
    const sent: string[] = [];
    // Several turns of many messages each, without waiting: blocks are reused only after their write.
    for (let turn = 0; turn < 6; turn++) {
      for (let i = 0; i < 40; i++) {
        const n = sizes[(turn * 40 + i) % sizes.length];
        const params = markVerbatim({ processId: 'p', seq: sent.length + 1, stream: 'stdout', chunk: pattern(n, sent.length).toString('base64') }, 'chunk');
        server.send({ method: 'process/output', params });
        sent.push(JSON.stringify({ method: 'process/output', params }));
        if (i % 9 === 0) server.sendOutputFrame('q', i, 'stderr', pattern(100, i));
      }
      await new Promise((r) => setImmediate(r));
    }
    const texts = () => got.filter((g) => !g.isBinary);
    await waitFor(() => texts().length === sent.length, { what: `${sent.length} text messages`, detail: () => `${texts().length}` });
    texts().forEach((g, i) => assert.equal(g.data.toString('utf8'), sent[i], `message ${i + 1} intact`));
    assert.ok(readBlockStats.reused > reused0, 'frames were built in recycled blocks');
    await waitFor(() => readBlockStats.held === held0, { what: 'every frame block released once written', detail: () => `${readBlockStats.held - held0} held` });
  } finally {
    ws.close();
    await listener.close();
  }
});
