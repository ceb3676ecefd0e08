// Binary frames (extension `binaryOutput`): the process/output header round-trips, malformed
// frames are refused clearly, only a client that opted in gets binary frames (others keep the
// reference's JSON), one client following a process across a reconnect that switches between
// binary and JSON gets every byte once, in order; fs/readBlock answers as kind 2 frames.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import WebSocket from 'ws';
import { RpcChannel } from '../../src/rpc/channel';
import { ExecServerClient } from '../../src/client/client';
import { connectInProcess, connectWebSocket } from '../../src/client/connect';
import { BINARY_OUTPUT_EXTENSION, FLOW_CONTROL_EXTENSION } from '../../src/protocol/types';
import { serveConnection } from '../../src/transports/serve';
import { StdioTransport } from '../../src/transports/stdio';
import { connectWebSocketTransport } from '../../src/transports/websocket-client';
import { markBytes } from '../../src/rpc/bytes-members';
import { decodeFrame, decodeOutputFrame, encodeOutputFrame, FRAME_MAGIC } from '../../src/transports/output-frame';
import { encodeMessage } from '../../src/transports/encode';
import { uri } from '../support/server';
import { LineChecker, numberedLines, ourWsServer, tmpDir, waitFor } from '../support/flow';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

test('binary frame: header layout round-trips (large seq, unicode id, empty payload) and the payload is a view, not a copy', () => {
  const data = Buffer.from('hello\x00\xff world', 'latin1');
  const frame = encodeOutputFrame('proc-é✓', 2 ** 40 + 7, 'stderr', data);
  assert.equal(frame[0], FRAME_MAGIC);
  assert.equal(frame[1], 1);
  assert.equal(frame[2], 1);
  assert.equal(frame[3], 1);
  assert.equal(frame.readUInt16BE(12), Buffer.byteLength('proc-é✓'));
  const m = decodeOutputFrame(frame);
  assert.deepEqual({ ...m.params, data: undefined }, { processId: 'proc-é✓', seq: 2 ** 40 + 7, stream: 'stderr', data: undefined });
  assert.ok(m.params.data.equals(data));
  assert.equal(m.params.data.buffer, frame.buffer, 'decoded payload shares the frame memory');
  const empty = decodeOutputFrame(encodeOutputFrame('x', 1, 'pty', Buffer.alloc(0)));
  assert.equal(empty.params.data.length, 0);
  assert.equal(empty.params.stream, 'pty');
  assert.equal(decodeOutputFrame(encodeOutputFrame('x', Number.MAX_SAFE_INTEGER, 'stdout', data)).params.seq, Number.MAX_SAFE_INTEGER);
});

test('binary frame: malformed frames are refused with a clear error', () => {
  const ok = encodeOutputFrame('abc', 5, 'stdout', Buffer.from('x'));
  const bad = (mut: (b: Buffer) => Buffer, re: RegExp) => assert.throws(() => decodeOutputFrame(mut(Buffer.from(ok))), re);
  bad((b) => b.subarray(0, 10), /too short/);
  bad((b) => ((b[1] = 9), b), /unsupported binary frame version 9/);
  bad((b) => ((b[2] = 7), b), /unknown binary frame kind 7/);
  bad((b) => ((b[3] = 3), b), /unknown output stream code 3/);
  bad((b) => (b.writeUInt32BE(0x20_0000, 4), b), /seq out of range/);
  bad((b) => (b.writeUInt16BE(500, 12), b), /truncated/);
});

test('websocket: a malformed binary frame from the server is a parse error for the client, with the reason', async () => {
  const wss = new WebSocket.Server({ host: '127.0.0.1', port: 0 });
  await new Promise((r) => wss.once('listening', r));
  // Sent once the client says it listens (a frame in the upgrade's TCP read would beat the subscription).
  wss.on('connection', (ws) => ws.once('message', () => ws.send(Buffer.from([FRAME_MAGIC, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]), { binary: true })));
  try {
    const t = await connectWebSocketTransport(`ws://127.0.0.1:${(wss.address() as net.AddressInfo).port}`);
    const err = new Promise<string>((resolve) => t.onParseError(resolve));
    t.send({ method: 'ready' });
    assert.match(await err, /unsupported binary frame version 2/);
    t.close();
  } finally {
    wss.close();
  }
});

/** A raw websocket client: initialize with `params`, start a process printing `text`, collect the frames until process/closed. */
async function rawRun(url: string, initParams: Record<string, unknown>, text: string): Promise<{ extensions: string[]; frames: { binary: boolean; data: Buffer }[] }> {
  const ws = new WebSocket(url);
  await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
  const frames: { binary: boolean; data: Buffer }[] = [];
  const responses = new Map<number, (v: any) => void>();
  let closed!: () => void;
  const done = new Promise<void>((r) => (closed = r));
  ws.on('message', (d: Buffer, binary) => {
    frames.push({ binary, data: d });
    if (!binary) {
      const m = JSON.parse(d.toString());
      if (m.id !== undefined) responses.get(m.id)?.(m.result ?? m.error);
      if (m.method === 'process/closed') closed();
    }
  });
  const call = (id: number, method: string, params: unknown) =>
    new Promise<any>((r) => {
      responses.set(id, r);
      ws.send(JSON.stringify({ id, method, params }));
    });
  const init = await call(1, 'initialize', { clientName: 'raw', ...initParams });
  ws.send(JSON.stringify({ method: 'initialized', params: {} }));
  await call(2, 'process/start', { processId: 'p', argv: ['printf', '%s', text], cwd: uri(process.cwd()), env: ENV, tty: false });
  await done;
  ws.close();
  return { extensions: init.extensions, frames: frames.filter((f) => f.binary || JSON.parse(f.data.toString()).method === 'process/output') };
}

test('websocket: only a client that opts in gets binary output frames; an old client (no opt-in) gets base64 JSON', async () => {
  const s = await ourWsServer();
  try {
    const text = 'x'.repeat(3000);
    const bin = await rawRun(s.url, { binaryOutput: true }, text);
    assert.ok(bin.extensions.includes(BINARY_OUTPUT_EXTENSION));
    assert.ok(!bin.extensions.includes(FLOW_CONTROL_EXTENSION), 'flow control was not asked for');
    assert.ok(bin.frames.length > 0 && bin.frames.every((f) => f.binary));
    const decoded = bin.frames.map((f) => decodeOutputFrame(f.data).params);
    assert.equal(Buffer.concat(decoded.map((d) => d.data)).toString(), text);
    assert.deepEqual(decoded.map((d) => d.seq), decoded.map((_, i) => i + 1));
    assert.ok(decoded.every((d) => d.processId === 'p' && d.stream === 'stdout'));

    const old = await rawRun(s.url, {}, text);
    assert.ok(!old.extensions.includes(BINARY_OUTPUT_EXTENSION));
    assert.ok(old.frames.length > 0 && old.frames.every((f) => !f.binary));
    assert.equal(Buffer.concat(old.frames.map((f) => Buffer.from(JSON.parse(f.data.toString()).params.chunk, 'base64'))).toString(), text);
  } finally {
    await s.stop();
  }
});

test('recovery across encodings: binary websocket → JSON connection → binary again; every line once and in order', async () => {
  const dir = tmpDir();
  const s = await ourWsServer();
  // A second way in to the same server that can only carry JSON: JSON lines over TCP.
  const tcp = net.createServer((sock) => void serveConnection(s.server, new StdioTransport(sock, sock), { label: 'json-tcp' }));
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  const tcpPort = (tcp.address() as net.AddressInfo).port;
  let attempt = 0;
  const kinds: string[] = [];
  const client = await ExecServerClient.connect(
    async () => {
      const n = attempt++;
      if (n % 2 === 1) {
        const sock = net.connect(tcpPort, '127.0.0.1');
        await new Promise((r, j) => (sock.once('connect', r), sock.once('error', j)));
        kinds.push('json');
        return new RpcChannel(new StdioTransport(sock, sock), () => sock.destroy());
      }
      const t = await connectWebSocketTransport(s.url);
      kinds.push('binary');
      return new RpcChannel(t, () => t.socket.terminate());
    },
    { clientName: 'mixed', reconnect: true, reconnectDelayMs: 20 },
  );
  try {
    assert.equal(client.binaryOutputEnabled, true);
    const total = 300_000;
    // The child holds after line 250 000 until released, so the third (binary) connection is
    // sure to carry output: without the hold a fast run finished the process over JSON.
    const held = 250_000;
    const release = path.join(dir, 'release');
    const h = await client.startProcess({ argv: numberedLines(total, path.join(dir, 'progress'), { afterLine: held, untilFile: release }), cwd: dir, env: ENV });
    const lines = new LineChecker();
    let closeError: string | undefined;
    h.onClose((e) => (closeError = e.error));
    const encodings: boolean[] = [];
    h.onOutput((e) => lines.push(e.data));
    // Two drops mid-stream: the process is followed over binary, then JSON, then binary.
    await waitFor(() => lines.bytes > 300_000, 'output over the first (binary) connection');
    encodings.push(client.binaryOutputEnabled);
    client.simulateDisconnect();
    await waitFor(() => client.state === 'connected' && client.reconnects === 1, 'the JSON reconnect');
    encodings.push(client.binaryOutputEnabled);
    await waitFor(() => lines.lines === held, 'every line up to the hold over the JSON connection');
    client.simulateDisconnect();
    await waitFor(() => client.state === 'connected' && client.reconnects === 2, 'the binary reconnect');
    encodings.push(client.binaryOutputEnabled);
    assert.equal(h.isClosed, false, 'the process is still held');
    fs.writeFileSync(release, '');
    await h.closed;
    assert.deepEqual(encodings, [true, false, true]);
    assert.deepEqual(kinds.slice(0, 3), ['binary', 'json', 'binary']);
    assert.equal(closeError, undefined);
    assert.equal(lines.error, undefined);
    assert.equal(lines.lines, total);
  } finally {
    await client.close();
    tcp.close();
    await s.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('fs/readBlock: a client that opted in gets the block as a binary response frame; an old client gets base64 JSON', async () => {
  const dir = tmpDir();
  const s = await ourWsServer();
  const file = path.join(dir, 'blob');
  const blob = Buffer.alloc(300_000);
  for (let i = 0; i < blob.length; i++) blob[i] = (i * 7919) % 256;
  fs.writeFileSync(file, blob);
  try {
    for (const binary of [true, false]) {
      const ws = new WebSocket(s.url);
      await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
      const answers = new Map<number, { binary: boolean; data: Buffer }>();
      ws.on('message', (d: Buffer, isBinary) => {
        const id = isBinary ? JSON.parse(d.toString('utf8', 8 + d[3], 8 + d[3] + d.readUInt32BE(4))).id : JSON.parse(d.toString()).id;
        if (id !== undefined) answers.set(id, { binary: isBinary, data: d });
      });
      const call = async (id: number, method: string, params: unknown) => {
        ws.send(JSON.stringify({ id, method, params }));
        await waitFor(() => answers.has(id), `answer ${id}`);
        return answers.get(id)!;
      };
      await call(1, 'initialize', { clientName: 'raw', ...(binary ? { binaryOutput: true } : {}) });
      ws.send(JSON.stringify({ method: 'initialized', params: {} }));
      await call(2, 'fs/open', { handleId: 'h1', path: uri(file) });
      const a = await call(3, 'fs/readBlock', { handleId: 'h1', offset: 1000, len: 200_000 });
      assert.equal(a.binary, binary);
      if (binary) {
        assert.equal(a.data[0], FRAME_MAGIC);
        assert.equal(a.data[2], 2, 'kind 2: response with bytes');
        const m = decodeFrame(a.data) as { id: number; result: { chunk: Buffer; eof: boolean } };
        assert.equal(m.id, 3);
        assert.equal(m.result.eof, false);
        assert.ok(m.result.chunk.equals(blob.subarray(1000, 201_000)));
      } else {
        const m = JSON.parse(a.data.toString());
        assert.ok(Buffer.from(m.result.chunk, 'base64').equals(blob.subarray(1000, 201_000)));
      }
      // Errors stay JSON either way.
      const e = await call(4, 'fs/readBlock', { handleId: 'nope', offset: 0, len: 10 });
      assert.equal(e.binary, false);
      assert.match(JSON.parse(e.data.toString()).error.message, /unknown file handle/);
      ws.close();
    }
  } finally {
    await s.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('fs/readBlock: the client streams a file through binary frames, in process, and as JSON — same bytes', async () => {
  const dir = tmpDir();
  const s = await ourWsServer();
  const file = path.join(dir, 'big');
  const blob = Buffer.alloc(5 * 1024 * 1024 + 123);
  for (let i = 0; i < blob.length; i += 4096) blob.writeUInt32BE(i, i);
  fs.writeFileSync(file, blob);
  const clients = [
    await connectWebSocket(s.url, { reconnect: false }),
    await connectWebSocket(s.url, { reconnect: false, binaryOutput: false }),
    await connectInProcess(s.server, {}),
  ];
  try {
    assert.deepEqual(clients.map((c) => c.binaryOutputEnabled), [true, false, true]);
    for (const c of clients) {
      const parts: Uint8Array[] = [];
      for await (const chunk of c.fs.createReadStream(file, { blockSize: 1024 * 1024 })) parts.push(chunk);
      assert.ok(Buffer.concat(parts).equals(blob));
    }
  } finally {
    for (const c of clients) await c.close();
    await s.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a response carrying raw bytes is base64 on a JSON-only carrier (never JSON of a Buffer)', () => {
  const msg = { id: 1, result: markBytes({ chunk: Buffer.from('hi there'), eof: true }, 'chunk') };
  const text = String(encodeMessage(msg));
  assert.deepEqual(JSON.parse(text), { id: 1, result: { chunk: Buffer.from('hi there').toString('base64'), eof: true } });
});
