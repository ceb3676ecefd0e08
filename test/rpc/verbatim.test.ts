// Spliced serialization of marked base64 payloads (src/rpc/verbatim.ts, src/transports/encode.ts):
// the bytes on the wire must be exactly the JSON text JSON.stringify would produce, websocket
// frames must stay text frames, and unmarked or odd messages must take the plain path. A
// Base64Text payload (base64 held in a buffer) is written as that buffer itself, never copied.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import WebSocket from 'ws';
import { RpcConnection } from '../../src/rpc/connection';
import { asciiJsonString, Base64Text, JsonText, verbatimAsPlain, joinSerialized, markVerbatim, serializeMessage } from '../../src/rpc/verbatim';
import { encodeMessage } from '../../src/transports/encode';
import { StdioTransport } from '../../src/transports/stdio';
import { listenWebSocket } from '../../src/transports/websocket-server';

const b64 = (n: number) => randomBytes(n).toString('base64');

test('verbatim: a marked payload splices to exactly the JSON.stringify text, and the holder is left unchanged', () => {
  const params = markVerbatim({ processId: 'p"1\\', seq: 7, stream: 'stdout', chunk: b64(100_000) }, 'chunk');
  const msg = { method: 'process/output', params };
  const s = serializeMessage(msg);
  assert.equal(typeof s, 'object', 'a marked large payload is spliced');
  assert.equal(joinSerialized(s), JSON.stringify(msg));
  assert.equal(params.chunk.length, Math.ceil(100_000 / 3) * 4, 'payload restored after serializing');
  const res = { id: 'x', result: markVerbatim({ dataBase64: b64(5000), eof: false }, 'dataBase64') };
  assert.equal(joinSerialized(serializeMessage(res)), JSON.stringify(res));
});

test('verbatim: unmarked, small, non-string or missing payloads take the plain JSON.stringify path', () => {
  const unmarked = { method: 'process/write', params: { chunk: `"\\\n${b64(5000)}` } };
  assert.equal(serializeMessage(unmarked), JSON.stringify(unmarked));
  const small = { id: 1, result: markVerbatim({ chunk: 'aGk=' }, 'chunk') };
  assert.equal(serializeMessage(small), JSON.stringify(small));
  const notString = { id: 1, result: markVerbatim({ chunk: 42 } as { chunk: unknown }, 'chunk') };
  assert.equal(serializeMessage(notString), JSON.stringify(notString));
  const frozen = { id: 1, result: Object.freeze(markVerbatim({ chunk: b64(5000) }, 'chunk')) };
  assert.equal(serializeMessage(frozen), JSON.stringify(frozen), 'a frozen holder is never written to');
  const nullParams = { method: 'x', params: null };
  assert.equal(serializeMessage(nullParams), JSON.stringify(nullParams));
});

test('encodeMessage: a spliced frame is a Buffer whose UTF-8 text parses back to the message (non-ASCII around it too)', () => {
  const msg = { id: 3, result: markVerbatim({ path: 'file:///tmp/é✓', chunk: b64(70_000), eof: true }, 'chunk') };
  const out = encodeMessage(msg, '\n');
  assert.ok(Buffer.isBuffer(out));
  assert.equal(out.toString('utf8'), JSON.stringify(msg) + '\n');
  assert.equal(encodeMessage({ id: 1, result: {} }, '\n'), '{"id":1,"result":{}}\n');
});

test('websocket: marked payloads arrive as text frames, byte-exact, and a burst sent in one tick all arrives in order', async () => {
  const payloads = [b64(3 * 1024 * 1024), b64(2000), b64(10)];
  const listener = await listenWebSocket({
    host: '127.0.0.1',
    port: 0,
    onConnection: (t) => {
      const rpc = new RpcConnection(t);
      for (let i = 0; i < 200; i++) rpc.notify('n', { i });
      payloads.forEach((chunk, i) => rpc.notify('process/output', markVerbatim({ i, chunk }, 'chunk')));
    },
  });
  const ws = new WebSocket(listener.url);
  try {
    const frames: { text: string; binary: boolean }[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (d, isBinary) => {
        frames.push({ text: d.toString(), binary: isBinary });
        if (frames.length === 200 + payloads.length) resolve();
      });
      ws.on('error', reject);
      setTimeout(() => reject(new Error(`only ${frames.length} frames arrived`)), 20_000).unref();
    });
    assert.ok(frames.every((f) => !f.binary), 'all text frames');
    for (let i = 0; i < 200; i++) assert.deepEqual(JSON.parse(frames[i].text), { method: 'n', params: { i } });
    payloads.forEach((chunk, i) => assert.deepEqual(JSON.parse(frames[200 + i].text), { method: 'process/output', params: { i, chunk } }));
  } finally {
    ws.close();
    await listener.close();
  }
});

test('stdio: a marked payload is written as one JSON line the peer parses back', async () => {
  const input = new PassThrough();
  const output = new PassThrough();
  const t = new StdioTransport(input, output);
  const chunks: Buffer[] = [];
  output.on('data', (d: Buffer) => chunks.push(d));
  const chunk = b64(600_000);
  t.send({ id: 9, result: markVerbatim({ chunk, eof: false }, 'chunk') });
  t.send({ id: 10, result: {} });
  await new Promise((r) => setImmediate(r));
  const lines = Buffer.concat(chunks).toString('utf8').split('\n');
  assert.deepEqual(lines.slice(0, 2).map((l) => JSON.parse(l)), [
    { id: 9, result: { chunk, eof: false } },
    { id: 10, result: {} },
  ]);
  assert.equal(lines[2], '');
  t.close();
});

const text = (n: number) => new Base64Text(Buffer.from(b64(n), 'latin1'));

test('Base64Text: encodeMessage gives head, the payload buffer itself, tail; JSON anywhere else is the string', () => {
  const t = text(90_000);
  const msg = { id: 'r"1', result: markVerbatim({ dataBase64: t }, 'dataBase64') };
  const expected = JSON.stringify({ id: 'r"1', result: { dataBase64: t.toString() } });
  assert.equal(JSON.stringify(msg), expected, 'toJSON: the string');
  const out = encodeMessage(msg, '\n');
  assert.ok(Array.isArray(out) && out.length === 3);
  assert.equal(out[1], t.bytes, 'the payload is the very buffer (no copy)');
  assert.equal(Buffer.concat(out).toString('utf8'), expected + '\n');
  assert.equal(joinSerialized(serializeMessage(msg)), expected);
  // Small or unmarked: the plain path, still the string.
  const small = { id: 1, result: markVerbatim({ dataBase64: text(10) }, 'dataBase64') };
  assert.equal(encodeMessage(small), JSON.stringify({ id: 1, result: { dataBase64: small.result.dataBase64.toString() } }));
  // In process: the member becomes the string.
  const r = verbatimAsPlain(markVerbatim({ dataBase64: t as Base64Text | string }, 'dataBase64'));
  assert.equal(r.dataBase64, t.toString());
});

test('Base64Text over a websocket and stdio: one text frame / one line, byte-exact, in order with the rest', async () => {
  const t = text(2 * 1024 * 1024);
  const listener = await listenWebSocket({
    host: '127.0.0.1',
    port: 0,
    onConnection: (tr) => {
      tr.send({ id: 1, result: {} });
      tr.send({ id: 2, result: markVerbatim({ dataBase64: t }, 'dataBase64') });
      tr.send({ id: 3, result: {} });
    },
  });
  const ws = new WebSocket(listener.url);
  try {
    const frames: { text: string; binary: boolean }[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (d, isBinary) => {
        frames.push({ text: d.toString(), binary: isBinary });
        if (frames.length === 3) resolve();
      });
      ws.on('error', reject);
      setTimeout(() => reject(new Error(`only ${frames.length} frames arrived`)), 20_000).unref();
    });
    assert.ok(frames.every((f) => !f.binary), 'text frames');
    assert.deepEqual(frames.map((f) => JSON.parse(f.text)), [{ id: 1, result: {} }, { id: 2, result: { dataBase64: t.toString() } }, { id: 3, result: {} }]);
  } finally {
    ws.close();
    await listener.close();
  }
  const input = new PassThrough();
  const output = new PassThrough();
  const st = new StdioTransport(input, output);
  const chunks: Buffer[] = [];
  output.on('data', (d: Buffer) => chunks.push(d));
  st.send({ id: 9, result: markVerbatim({ dataBase64: t }, 'dataBase64') });
  st.send({ id: 10, result: {} });
  await new Promise((r) => setImmediate(r));
  const lines = Buffer.concat(chunks).toString('utf8').split('\n');
  assert.deepEqual(lines.slice(0, 2).map((l) => JSON.parse(l)), [{ id: 9, result: { dataBase64: t.toString() } }, { id: 10, result: {} }]);
  st.close();
});

test('JsonText: spliced as it is (no quotes) over a wire, the value it holds everywhere else', () => {
  // Above the splice's minimum size (smaller ones take JSON.stringify, through toJSON).
  const value = { entries: Array.from({ length: 100 }, (_, i) => ({ path: `file:///a%20b/${i}`, kind: 'file' })) };
  const text = JSON.stringify(value.entries);
  const message = { id: 7, result: markVerbatim({ entries: new JsonText(text), truncated: false }, 'entries') };
  const s = serializeMessage(message);
  assert.equal(typeof s, 'object', 'spliced');
  assert.deepEqual(JSON.parse(joinSerialized(s)), { id: 7, result: { entries: value.entries, truncated: false } });
  assert.equal(joinSerialized(s), JSON.stringify({ id: 7, result: { entries: value.entries, truncated: false } }));
  // Any other JSON.stringify (a log, a wrapper) sees the value; in process it is the value.
  assert.equal(JSON.stringify(message), joinSerialized(s));
  const plain = verbatimAsPlain(markVerbatim({ entries: new JsonText(text) as unknown, truncated: false }, 'entries'));
  assert.deepEqual(plain, { entries: value.entries, truncated: false });
});

test('asciiJsonString: every character a JSON string needs escaped, and every non-ASCII one, as \\uXXXX', () => {
  const nasty = ['plain', 'q"uote', 'back\\slash', 'nl\n\r\t\0\u001f', 'é日本', '\u2028\u2029', '\ud800 lone', '😀', '"]},{"path":"x'];
  for (const s of nasty) {
    const inner = asciiJsonString(s);
    assert.match(inner, /^[\x20-\x7e]*$/, 'ASCII only');
    assert.equal(JSON.parse(`"${inner}"`), s);
  }
  const same = 'file:///a%22b';
  assert.equal(asciiJsonString(same), same);
});
