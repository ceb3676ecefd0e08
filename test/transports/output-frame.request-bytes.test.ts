// src/transports/output-frame.ts kind 3: a request whose params carry raw bytes (fs/writeBlock's
// chunk from a client whose server enabled binaryOutput): the frame's layout, its errors, the
// base64 fallback of JSON-only carriers, and a streamed save through our CLI over a websocket
// (masked in one pooled buffer, unmasked by the server with the bundle's ws-mask) with and
// without binaryOutput.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import * as net from 'node:net';
import { connectWebSocket } from '../../src/client/connect';
import { bytesToBase64Members, markBytes } from '../../src/rpc/bytes-members';
import { decodeFrame, encodeResponseBytesFrame, FRAME_KIND_REQUEST_BYTES, FRAME_MAGIC } from '../../src/transports/output-frame';
import { encodeMessage } from '../../src/transports/encode';
import { cliPath, startServerProcess } from '../support/cli';

test('kind 3: a request with a bytes member round-trips as a view, without base64; malformed frames are refused', () => {
  const bytes = randomBytes(70_000);
  const msg = { id: 7, method: 'fs/writeBlock', params: markBytes({ handleId: 'h', offset: 65536, chunk: bytes }, 'chunk') };
  const frame = encodeResponseBytesFrame(msg);
  assert.equal(frame[0], FRAME_MAGIC);
  assert.equal(frame[2], FRAME_KIND_REQUEST_BYTES);
  assert.ok(frame.length < bytes.length + 200, 'the bytes travel as they are');
  const back = decodeFrame(frame) as { id: number; method: string; params: { handleId: string; offset: number; chunk: Buffer } };
  assert.equal(back.method, 'fs/writeBlock');
  assert.equal(back.params.offset, 65536);
  assert.ok(Buffer.isBuffer(back.params.chunk) && back.params.chunk.equals(bytes));
  assert.equal(back.params.chunk.buffer, frame.buffer, 'a view into the frame, not a copy');

  // A JSON-only carrier (stdio) gets base64 instead.
  const json = JSON.parse(String(encodeMessage(msg)));
  assert.equal(json.params.chunk, bytes.toString('base64'));
  assert.deepEqual(bytesToBase64Members({ id: 1, method: 'x', params: { a: 1 } }), { id: 1, method: 'x', params: { a: 1 } });

  // A kind 3 frame whose JSON is not a request with a params object.
  const bad = Buffer.from(frame);
  const jsonAt = 8 + bad[3];
  const m = bad.readUInt32BE(4);
  const noMethod = Buffer.concat([bad.subarray(0, 4), Buffer.alloc(4), bad.subarray(8, jsonAt), Buffer.from('{"id":7,"params":{}}'), bad.subarray(jsonAt + m)]);
  noMethod.writeUInt32BE(Buffer.byteLength('{"id":7,"params":{}}'), 4);
  assert.throws(() => decodeFrame(noMethod), /binary request frame without a params object/);
  assert.throws(() => decodeFrame(frame.subarray(0, jsonAt + 3)), /binary request frame truncated/);
});

test('a streamed save to our CLI over a websocket: raw kind 3 frames with binaryOutput, base64 JSON without; the same bytes land', async (t) => {
  const server = await startServerProcess(process.execPath, [cliPath, '--listen', 'ws://127.0.0.1:0'], { t });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'req-bytes-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Which frames the client's websocket writes on its TCP socket (unmasked here to read the kind).
  const sent: { kind?: number }[] = [];
  const write = net.Socket.prototype.write;
  net.Socket.prototype.write = function (this: net.Socket, data: unknown, ...rest: unknown[]) {
    if (Buffer.isBuffer(data) && data.length > 14 && data[0] === 0x82 && (data[1] & 0x80) !== 0) {
      const len7 = data[1] & 0x7f;
      const at = len7 < 126 ? 2 : len7 === 126 ? 4 : 10;
      const key = data.subarray(at, at + 4);
      const p = data.subarray(at + 4, at + 7).map((b, i) => b ^ key[i]);
      sent.push({ kind: p[0] === FRAME_MAGIC ? p[2] : undefined });
    } else sent.push({});
    return (write as (...a: unknown[]) => boolean).call(this, data, ...rest);
  } as typeof write;
  t.after(() => (net.Socket.prototype.write = write));
  const data = randomBytes(3 * 1024 * 1024 + 5);
  for (const binaryOutput of [true, false]) {
    sent.length = 0;
    const client = await connectWebSocket(server.url, { binaryOutput, reconnect: false });
    try {
      assert.equal(client.binaryOutputEnabled, binaryOutput);
      const f = path.join(dir, `save-${binaryOutput}.bin`);
      await client.fs.writeFile(f, data, { streamAboveBytes: 1024 });
      assert.ok(readFileSync(f).equals(data), `the saved bytes (binaryOutput ${binaryOutput})`);
      const kind3 = sent.filter((s) => s.kind === FRAME_KIND_REQUEST_BYTES).length;
      if (binaryOutput) assert.ok(kind3 >= 48, `every block as a kind 3 frame (${kind3} of ${sent.length} sends)`);
      else assert.equal(kind3, 0, 'no binary request frames to a connection without binaryOutput');
    } finally {
      await client.close();
    }
  }
});
