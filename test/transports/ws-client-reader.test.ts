// The client's own websocket frame reader (src/transports/ws-client-reader.ts), driven by a raw
// TCP server that writes exactly the bytes each test wants: frames sent with the 101 response,
// every length encoding, frames cut at every kind of boundary (including across the reader's
// 1 MiB slabs), fragmentation with a ping in between, the peer's close code and reason, and the
// protocol violations `ws` refuses (masked server frames, RSV bits, oversize, bad UTF-8).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { createHash } from 'node:crypto';
import { connectWebSocketTransport } from '../../src/transports/websocket-client';
import type { WebSocketTransport } from '../../src/transports/websocket-transport';
import { decodeOutputFrame, encodeOutputFrame } from '../../src/transports/output-frame';
import WebSocket from 'ws';
import { ClientFrameReader } from '../../src/transports/ws-client-reader';
import { waitFor } from '../support/wait';
import { randomStream, rng, wsFrame as frame } from '../support/ws-frames';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** Client frames (always masked) parsed from what the server read. */
function clientFrames(buf: Buffer): { opcode: number; payload: Buffer }[] {
  const out: { opcode: number; payload: Buffer }[] = [];
  let i = 0;
  while (i + 2 <= buf.length) {
    let len = buf[i + 1] & 0x7f;
    let p = i + 2;
    if (len === 126) (len = buf.readUInt16BE(p)), (p += 2);
    else if (len === 127) (len = buf.readUInt32BE(p + 4)), (p += 8);
    const mask = buf.subarray(p, p + 4);
    p += 4;
    if (p + len > buf.length) break;
    const payload = Buffer.from(buf.subarray(p, p + len));
    for (let k = 0; k < len; k++) payload[k] ^= mask[k & 3];
    out.push({ opcode: buf[i] & 0x0f, payload });
    i = p + len;
  }
  return out;
}

/**
 * A raw websocket server: answers the upgrade, then writes `afterUpgrade` in pieces of `piece`
 * bytes once the client sent its first frame (the test has subscribed by then) — or in the same
 * write as the 101 with `withHandshake`, and with `end` shuts its side after them. Records what
 * the client sent.
 */
async function rawServer(afterUpgrade: Buffer, opts: { withHandshake?: boolean; piece?: (i: number) => number; end?: boolean } = {}) {
  const received: Buffer[] = [];
  const sockets: net.Socket[] = [];
  const server = net.createServer((s) => {
    sockets.push(s);
    let head = Buffer.alloc(0);
    let upgraded = false;
    let started = false;
    const start = (all: Buffer) => {
      if (started) return;
      started = true;
      void (async () => {
        for (let off = 0, i = 0; off < all.length; i++) {
          const n = Math.max(1, opts.piece?.(i) ?? all.length);
          s.write(all.subarray(off, off + n));
          off += n;
          // Let the client read between pieces, so the cuts are real read boundaries.
          if (opts.piece) await new Promise((r) => setImmediate(r));
        }
        if (opts.end) s.end();
      })();
    };
    s.on('data', (d) => {
      if (upgraded) {
        received.push(d);
        return void start(afterUpgrade);
      }
      head = Buffer.concat([head, d]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      upgraded = true;
      const key = /sec-websocket-key: *(\S+)/i.exec(head.toString('latin1'))![1];
      const accept = createHash('sha1').update(key + GUID).digest('base64');
      const response = Buffer.from(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      if (opts.withHandshake) return start(Buffer.concat([response, afterUpgrade]));
      s.write(response);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `ws://127.0.0.1:${(server.address() as net.AddressInfo).port}/`;
  return {
    url,
    sent: () => clientFrames(Buffer.concat(received)),
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** The payload of the first pong the server got (waits for it). */
async function firstPong(srv: Awaited<ReturnType<typeof rawServer>>): Promise<string> {
  const pong = () => srv.sent().find((f) => f.opcode === 10);
  await waitFor(() => pong() !== undefined, { what: 'the pong' });
  return pong()!.payload.toString();
}

async function collect(url: string, maxPayload?: number) {
  const t: WebSocketTransport = await connectWebSocketTransport(url, { keepaliveMs: 0, ...(maxPayload ? { maxPayload } : {}) });
  const messages: unknown[] = [];
  let closed: { reason: string; local: boolean } | undefined;
  t.onMessage((m) => messages.push(m));
  t.onClose((c) => (closed = c));
  t.send({ jsonrpc: '2.0', method: 'go' });
  return { t, messages, closed: () => closed };
}

test('a frame sent together with the 101 response is read (bytes ws puts back after the upgrade)', async () => {
  // A ping: its answer shows the bytes were parsed (a message there would reach no subscriber yet).
  const srv = await rawServer(frame(9, Buffer.from('with the 101')), { withHandshake: true });
  try {
    const c = await collect(srv.url);
    assert.equal(await firstPong(srv), 'with the 101');
    c.t.close();
  } finally {
    srv.close();
  }
});

test('frames of every length encoding, cut at arbitrary read boundaries and across 1 MiB slabs, arrive whole and in order', async () => {
  const payloads: Buffer[] = [];
  const sizes = [0, 1, 125, 126, 65535, 65536, 70_000, 3 * 1024 * 1024 + 7, 33 * 1024, 10, 1024 * 1024, 2_000_001];
  for (const [i, n] of sizes.entries()) {
    const data = Buffer.allocUnsafe(n);
    for (let k = 0; k < n; k++) data[k] = (k * 7 + i * 13) & 0xff;
    payloads.push(data);
  }
  const wire = Buffer.concat([
    ...payloads.map((p, i) => frame(2, encodeOutputFrame('proc-1', i, 'stdout', p))),
    frame(1, Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'done' }))),
  ]);
  // Odd piece sizes: headers and payloads split everywhere, some reads bigger than a slab.
  const pieces = [1, 2, 3, 9, 1000, 65_537, 131_071, 1_500_000, 7];
  const srv = await rawServer(wire, { piece: (i) => pieces[i % pieces.length] });
  try {
    const c = await collect(srv.url, 64 * 1024 * 1024);
    await waitFor(() => c.messages.length === payloads.length + 1, { what: 'all frames' });
    for (const [i, p] of payloads.entries()) {
      const m = c.messages[i] as ReturnType<typeof decodeOutputFrame>;
      assert.equal(m.params.seq, i);
      assert.ok(Buffer.from(m.params.data).equals(p), `payload ${i} (${p.length} bytes) intact`);
    }
    assert.deepEqual(c.messages[payloads.length], { jsonrpc: '2.0', method: 'done' });
    assert.equal(c.closed(), undefined);
    c.t.close();
  } finally {
    srv.close();
  }
});

test('a fragmented text message with a ping between its fragments: the ping is answered, the message assembled', async () => {
  const text = JSON.stringify({ jsonrpc: '2.0', method: 'frag', params: { s: 'x'.repeat(50_000) + 'ü€' } });
  const bytes = Buffer.from(text);
  const a = bytes.subarray(0, 10);
  const b = bytes.subarray(10, 40_000);
  const c2 = bytes.subarray(40_000);
  const wire = Buffer.concat([frame(1, a, { fin: false }), frame(9, Buffer.from('are you there')), frame(0, b, { fin: false }), frame(0, c2)]);
  const srv = await rawServer(wire, { piece: () => 4096 });
  try {
    const c = await collect(srv.url);
    await waitFor(() => c.messages.length === 1, { what: 'the assembled message' });
    assert.equal(JSON.stringify(c.messages[0]), text);
    assert.equal(await firstPong(srv), 'are you there');
    c.t.close();
  } finally {
    srv.close();
  }
});

test('the server’s close frame: its reason reaches the transport and the close is answered', async () => {
  const payload = Buffer.concat([Buffer.from([0x0f, 0xa1]), Buffer.from('session replaced')]); // 4001
  const srv = await rawServer(Buffer.concat([frame(1, Buffer.from('{"jsonrpc":"2.0","method":"a"}')), frame(8, payload), frame(1, Buffer.from('{"jsonrpc":"2.0","method":"after close"}'))]));
  try {
    const c = await collect(srv.url);
    await waitFor(() => c.closed() !== undefined, { what: 'transport closed' });
    assert.equal(c.closed()!.reason, 'session replaced');
    assert.equal(c.closed()!.local, false);
    assert.deepEqual(c.messages, [{ jsonrpc: '2.0', method: 'a' }], 'nothing after the close frame is delivered');
    await waitFor(() => srv.sent().some((f) => f.opcode === 8), { what: 'the close answer' });
    assert.equal(srv.sent().find((f) => f.opcode === 8)!.payload.readUInt16BE(0), 4001);
  } finally {
    srv.close();
  }
});

for (const [name, wire, expect] of [
  ['a masked frame from the server', frame(1, Buffer.from('{}'), { mask: true }), /masked/],
  ['RSV bits without an extension', frame(1, Buffer.from('{}'), { first: 0x80 | 0x40 | 1 }), /RSV/],
  ['an unknown opcode', frame(3, Buffer.from('x')), /opcode/],
  ['a continuation without a message', frame(0, Buffer.from('x')), /continuation/],
  ['a control frame longer than 125 bytes', frame(9, Buffer.alloc(126)), /control/],
  ['invalid UTF-8 in a text message', frame(1, Buffer.from([0x22, 0xff, 0xfe, 0x22])), /UTF-8/],
  ['a message over maxPayload', frame(2, Buffer.alloc(5000)), /Max payload/],
  ['a 64-bit length beyond 2^53', Buffer.from([0x82, 127, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]), /length/],
  ['an invalid close code', frame(8, Buffer.from([0x03, 0xed])), /close code/],
] as const) {
  test(`protocol violation: ${name} ends the connection with a clear error and delivers nothing`, async () => {
    const srv = await rawServer(Buffer.concat([wire, frame(1, Buffer.from('{"jsonrpc":"2.0","method":"later"}'))]));
    try {
      const c = await collect(srv.url, 4096);
      await waitFor(() => c.closed() !== undefined, { what: 'transport closed' });
      assert.match(c.closed()!.reason, expect);
      assert.deepEqual(c.messages, []);
    } finally {
      srv.close();
    }
  });
}

test('a binary payload under 32 KiB is a copy (a kept small chunk does not pin the 1 MiB read slab)', async () => {
  const small = Buffer.alloc(100, 7);
  const big = Buffer.alloc(40_000, 9);
  const srv = await rawServer(Buffer.concat([frame(2, encodeOutputFrame('p', 1, 'stdout', small)), frame(2, encodeOutputFrame('p', 2, 'stdout', big))]));
  try {
    const c = await collect(srv.url);
    await waitFor(() => c.messages.length === 2, { what: 'both frames' });
    const [a, b] = c.messages as ReturnType<typeof decodeOutputFrame>[];
    // The big one is a view into the read slab; the small one must live elsewhere (its own copy,
    // possibly in Node's small-buffer pool — never the 1 MiB slab).
    assert.ok(b.params.data.equals(big));
    assert.ok(b.params.data.buffer.byteLength >= 1024 * 1024, 'the large payload is a view into the slab');
    assert.notEqual(a.params.data.buffer, b.params.data.buffer, 'the small payload is not in the slab');
    assert.ok(a.params.data.buffer.byteLength < 1024 * 1024);
    c.t.close();
  } finally {
    srv.close();
  }
});

test('not attached (ws internals not as expected): the bytes still reach ws’s own receiver intact', async () => {
  const payload = Buffer.alloc(3 * 1024 * 1024 + 5);
  for (let k = 0; k < payload.length; k++) payload[k] = (k * 11) & 0xff;
  const srv = await rawServer(Buffer.concat([frame(2, payload), frame(1, Buffer.from('{"last":true}'))]), { piece: () => 100_000 });
  const reader = new ClientFrameReader(64 * 1024 * 1024);
  const ws = new WebSocket(srv.url, { createConnection: reader.createConnection as unknown as WebSocket.ClientOptions['createConnection'], maxPayload: 64 * 1024 * 1024 });
  try {
    const got: { data: Buffer; binary: boolean }[] = [];
    ws.on('message', (data, binary) => got.push({ data: Buffer.from(data as Buffer), binary }));
    await new Promise((r, j) => ws.once('open', r).once('error', j));
    const other = new WebSocket(srv.url);
    await new Promise((r, j) => other.once('open', r).once('error', j));
    assert.equal(reader.attach(other), false, 'a websocket on another socket is refused, not taken over');
    other.terminate();
    ws.send('{"go":1}');
    await waitFor(() => got.length === 2, { what: 'both messages through ws' });
    assert.ok(got[0].binary && got[0].data.equals(payload));
    assert.equal(got[1].data.toString(), '{"last":true}');
  } finally {
    ws.terminate();
    srv.close();
  }
});

test('random valid streams (text, binary up to 1.5 MiB, fragments with pings inside, random cuts) arrive exactly', async () => {
  for (let seed = 1; seed <= 25; seed++) {
    const r = rng(seed);
    const { wire, expected, pings } = randomStream(seed, r, (i, data) => encodeOutputFrame('p', i, 'stdout', data), (op, payload, fin) => frame(op, payload, { fin }));
    wire.push(frame(1, Buffer.from('{"jsonrpc":"2.0","method":"end"}')));
    const sizes = [1, 7, 100, 4096, 65_536, 300_000, 2_000_000];
    const srv = await rawServer(Buffer.concat(wire), { piece: () => sizes[r(sizes.length)] });
    try {
      const c = await collect(srv.url, 64 * 1024 * 1024);
      await waitFor(() => c.messages.length === expected.length + 1, { what: `all messages of case ${seed}` });
      for (const [k, want] of expected.entries()) {
        const got = c.messages[k] as { params: { seq: number; data: Buffer } };
        if ('data' in want) {
          assert.equal(got.params.seq, want.index, `case ${seed} message ${k}`);
          assert.ok(Buffer.from(got.params.data).equals(want.data), `case ${seed} message ${k}: ${want.data.length} bytes intact`);
        } else assert.deepEqual(got, want.json, `case ${seed} message ${k}`);
      }
      await waitFor(() => srv.sent().filter((f) => f.opcode === 10).length === pings.length, { what: `${pings.length} pongs of case ${seed}` });
      assert.equal(c.closed(), undefined);
      c.t.close();
    } finally {
      srv.close();
    }
  }
});

test('random bytes after a valid message: never a crash — the connection ends with a reason, at the garbage or at the FIN the peer sends after it', async () => {
  for (let seed = 100; seed < 160; seed++) {
    const r = rng(seed);
    const garbage = Buffer.allocUnsafe(1 + r(3000));
    for (let k = 0; k < garbage.length; k++) garbage[k] = r(256);
    // Half the cases start the garbage with a plausible header byte, to get past the first checks.
    if (r(2) === 0) garbage[0] = [0x81, 0x82, 0x89, 0x8a, 0x88, 0x01, 0x00][r(7)];
    const srv = await rawServer(Buffer.concat([frame(1, Buffer.from('{"jsonrpc":"2.0","method":"first"}')), garbage]), { piece: () => 1 + r(700), end: true });
    try {
      const c = await collect(srv.url, 64 * 1024);
      await waitFor(() => c.messages.length >= 1, { what: `the valid message of case ${seed}` });
      assert.deepEqual(c.messages[0], { jsonrpc: '2.0', method: 'first' });
      // Whatever the garbage was, the transport ends with a reason: at the garbage, or at the
      // server's FIN after it (so every byte of it was read by then).
      const closed = await waitFor(() => c.closed(), { what: `the end of case ${seed}` });
      assert.ok(closed.reason.length > 0, `case ${seed}: a reason`);
      c.t.close();
    } finally {
      srv.close();
    }
  }
});
