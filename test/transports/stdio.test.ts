// src/transports/stdio.ts: newline framing, limits, parse errors, backpressure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { RpcConnection } from '../../src/rpc/connection';
import { StdioTransport } from '../../src/transports/stdio';

function setup(maxLineBytes?: number) {
  const input = new PassThrough();
  const output = new PassThrough();
  const t = new StdioTransport(input, output, { maxLineBytes });
  const messages: unknown[] = [];
  const parseErrors: string[] = [];
  t.onMessage((m) => messages.push(m));
  t.onParseError((e) => parseErrors.push(e));
  return { input, output, t, messages, parseErrors };
}
const tick = () => new Promise((r) => setImmediate(r));

test('stdio: messages split across writes and several per write are framed by newline', async () => {
  const { input, t, messages } = setup();
  input.write('{"id":1,"me');
  input.write('thod":"a"}\n{"id":2,"method":"b"}\n{"id"');
  await tick();
  assert.deepEqual(messages, [{ id: 1, method: 'a' }, { id: 2, method: 'b' }]);
  input.write(':3}\n');
  await tick();
  assert.deepEqual(messages[2], { id: 3 });
  t.close();
});

test('stdio: CRLF line endings and blank lines are tolerated', async () => {
  const { input, t, messages, parseErrors } = setup();
  input.write('{"a":1}\r\n\r\n\n   \n{"b":"x\\r"}\r\n');
  await tick();
  assert.deepEqual(messages, [{ a: 1 }, { b: 'x\r' }]);
  assert.deepEqual(parseErrors, []);
  t.close();
});

test('stdio: a multi-byte UTF-8 character split between chunks survives', async () => {
  const { input, t, messages } = setup();
  const bytes = Buffer.from('{"s":"héllo €"}\n');
  const cut = bytes.indexOf(0xe2) + 1; // inside the 3-byte euro sign
  input.write(bytes.subarray(0, cut));
  input.write(bytes.subarray(cut));
  await tick();
  assert.deepEqual(messages, [{ s: 'héllo €' }]);
  t.close();
});

test('stdio: invalid JSON reports a parse error and the stream keeps working', async () => {
  const { input, t, messages, parseErrors } = setup();
  input.write('not json\n{"ok":true}\n');
  await tick();
  assert.equal(parseErrors.length, 1);
  assert.deepEqual(messages, [{ ok: true }]);
  assert.equal(t.closed, false);
  t.close();
});

test('stdio: a line over the limit closes the transport with a clear reason', async () => {
  const { input, output, t, messages, parseErrors } = setup(64);
  let written = '';
  output.on('data', (d) => (written += d));
  const closed = new Promise<string>((r) => t.onClose((i) => r(i.reason)));
  input.write('{"small":1}\n');
  input.write('x'.repeat(40));
  input.write('y'.repeat(40)); // no newline yet: the pending partial line already exceeds 64 bytes
  const reason = await closed;
  assert.match(reason, /exceeds the limit of 64 bytes/);
  assert.deepEqual(messages, [{ small: 1 }]);
  assert.equal(t.closed, true);
  assert.match(parseErrors.join(), /exceeds the limit of 64 bytes; closing the connection/);
  assert.equal(written, ''); // nothing was sent by the transport itself; RpcConnection answers the parse error
});

test('stdio: over an RpcConnection, an overlong line is answered with an error before the stream ends', async () => {
  const { input, output, t } = setup(32);
  new RpcConnection(t);
  let written = '';
  output.on('data', (d) => (written += d));
  const ended = new Promise((r) => output.on('end', r));
  input.write('{"id":1,"method":"x","params":"' + 'a'.repeat(64) + '"}\n');
  await ended;
  const reply = JSON.parse(written.trim());
  assert.equal(reply.id, null);
  assert.match(reply.error.message, /exceeds the limit of 32 bytes/);
});

test('stdio: send writes one line per message; close ends output; end of input closes non-locally', async () => {
  const { input, output, t } = setup();
  let written = '';
  output.on('data', (d) => (written += d));
  t.send({ id: 1, result: { x: 'a\nb' } });
  t.send({ method: 'n' });
  await tick();
  assert.deepEqual(written.split('\n'), ['{"id":1,"result":{"x":"a\\nb"}}', '{"method":"n"}', '']);
  const info = new Promise<{ local: boolean }>((r) => t.onClose(r));
  input.end();
  assert.equal((await info).local, false);
  t.send({ dropped: true }); // must not throw after close
});

test('stdio: bufferedAmount and onDrain reflect the writable backpressure', async () => {
  const input = new PassThrough();
  const output = new PassThrough({ highWaterMark: 16 });
  const t = new StdioTransport(input, output);
  t.send({ payload: 'z'.repeat(1000) });
  assert.ok(t.bufferedAmount > 16, `bufferedAmount ${t.bufferedAmount}`);
  const drained = new Promise<void>((r) => t.onDrain(() => r()));
  output.resume(); // consume: the writable drains
  await drained;
  assert.equal(t.bufferedAmount, 0);
  t.close();
});

test('stdio: any split of a message stream into chunks yields the same messages (property)', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.jsonValue(), { minLength: 1, maxLength: 20 }),
      fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 50 }),
      fc.boolean(),
      async (values, cuts, crlf) => {
        const { input, t, messages, parseErrors } = setup();
        const objects = values.map((v, i) => ({ id: i, v }));
        const bytes = Buffer.from(objects.map((o) => JSON.stringify(o) + (crlf ? '\r\n' : '\n')).join(''));
        for (let pos = 0, i = 0; pos < bytes.length; i++) {
          const n = cuts[i % cuts.length];
          input.write(bytes.subarray(pos, pos + n));
          pos += n;
        }
        await tick();
        assert.deepEqual(parseErrors, []);
        assert.deepEqual(messages, JSON.parse(JSON.stringify(objects)));
        t.close();
      },
    ),
    { numRuns: 150 },
  );
});

test('stdio: pauseIncoming holds the lines of a chunk already read, and resuming delivers them in order', async () => {
  const { input, t, messages } = setup();
  // Pause at the first message, as a client does when a consumer without flow control falls behind.
  t.onMessage(() => {
    if (messages.length === 1) t.pauseIncoming(true);
  });
  input.write('{"n":1}\n{"n":2}\n{"n":3}\n{"n":');
  await tick();
  await tick();
  assert.deepEqual(messages, [{ n: 1 }], 'nothing past the pause is delivered');
  input.write('4}\n{"n":5}\n');
  await tick();
  assert.deepEqual(messages, [{ n: 1 }]);
  t.pauseIncoming(false);
  assert.deepEqual(messages, [{ n: 1 }], 'resuming delivers later, not inside the caller');
  for (let i = 0; i < 5 && messages.length < 5; i++) await tick();
  assert.deepEqual(messages, [1, 2, 3, 4, 5].map((n) => ({ n })));
  t.close();
});

test('stdio: a pause inside the held lines holds the rest again; an end of input waits for the held lines', async () => {
  const { input, t, messages } = setup();
  const closed = new Promise<void>((r) => t.onClose(() => r()));
  t.onMessage((m) => {
    if ((m as { n: number }).n % 2 === 1) t.pauseIncoming(true);
  });
  input.end('{"n":1}\n{"n":2}\n{"n":3}\n{"n":4}\n{"n":5}\n');
  await tick();
  await tick();
  assert.deepEqual(messages, [{ n: 1 }]);
  assert.equal(t.closed, false, 'the end waits behind the held lines');
  for (const upTo of [3, 5]) {
    t.pauseIncoming(false);
    for (let i = 0; i < 5 && messages.length < upTo; i++) await tick();
    assert.deepEqual(messages, Array.from({ length: upTo }, (_, i) => ({ n: i + 1 })));
    assert.equal(t.closed, false);
  }
  t.pauseIncoming(false);
  await closed;
  assert.deepEqual(messages.length, 5);
});

test('stdio: with messagesPerTurn, a burst of 2 000 lines in one chunk is handed on in slices, in order; a timer set at the first one fires before the burst is done', async () => {
  const input = new PassThrough();
  const output = new PassThrough();
  const limit = 64;
  const t = new StdioTransport(input, output, { messagesPerTurn: limit });
  const seen: number[] = [];
  let atFirstImmediate = -1;
  let atTimer = -1;
  t.onMessage((m) => {
    if (seen.length === 0) {
      setImmediate(() => (atFirstImmediate = seen.length));
      setTimeout(() => (atTimer = seen.length), 0);
    }
    seen.push((m as { id: number }).id);
  });
  input.write(Array.from({ length: 2000 }, (_, i) => `{"id":${i}}\n`).join(''));
  for (let i = 0; i < 200 && seen.length < 2000; i++) await tick();
  assert.equal(seen.length, 2000);
  assert.deepEqual(seen, Array.from({ length: 2000 }, (_, i) => i));
  assert.ok(atFirstImmediate >= 1 && atFirstImmediate <= limit, `lines handed on in the first turn: ${atFirstImmediate}`);
  assert.ok(atTimer >= 1 && atTimer < 2000, `a timer set at the first line fired after ${atTimer} of 2000`);
  t.close();
});

test('stdio: a pause between slices holds the rest until the resume; an end of input after a sliced burst still closes after every line', async () => {
  const input = new PassThrough();
  const output = new PassThrough();
  const t = new StdioTransport(input, output, { messagesPerTurn: 10 });
  const seen: number[] = [];
  const closed = new Promise<void>((r) => t.onClose(() => r()));
  t.onMessage((m) => {
    seen.push((m as { id: number }).id);
    if (seen.length === 15) t.pauseIncoming(true);
  });
  input.end(Array.from({ length: 100 }, (_, i) => `{"id":${i}}\n`).join(''));
  for (let i = 0; i < 20; i++) await tick();
  assert.equal(seen.length, 15, 'held at the pause, across slices');
  assert.equal(t.closed, false);
  t.pauseIncoming(false);
  await closed;
  assert.deepEqual(seen, Array.from({ length: 100 }, (_, i) => i));
});
