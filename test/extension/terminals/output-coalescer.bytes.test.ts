// OutputCoalescer's byte accounting (what ExecTerminal acknowledges): the bytes of a chunk are
// reported once its text is fully written — not when only part of it was, never twice, a
// character split across chunks counted once, messages (pushText) counting nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OutputCoalescer } from '../../../src/extension/terminals/output-coalescer';

test('coalescer: onFlushed reports input bytes once their text is fully written', async () => {
  const flushed: number[] = [];
  let written = '';
  const c = new OutputCoalescer((t) => (written += t), { intervalMs: 1, maxCharsPerFlush: 4, onFlushed: (b) => flushed.push(b) });
  const euro = Buffer.from('€'); // 3 bytes, 1 character
  c.push(Buffer.from('ab'));
  c.push(euro.subarray(0, 2)); // held by the decoder: no text yet
  c.push(Buffer.concat([euro.subarray(2), Buffer.from('cdefgh')]));
  c.pushText('[msg]');
  await c.end();
  assert.equal(written, 'ab€cdefgh[msg]');
  const total = flushed.reduce((a, b) => a + b, 0);
  assert.equal(total, 2 + 3 + 6, 'every input byte once, none for the message');
  // First write 'ab€c' (4 chars): 'ab' done (2); '€cdefgh' only partly written → not yet reported.
  assert.equal(flushed[0], 2);
});

test('coalescer: a trailing incomplete character is reported when the stream ends', async () => {
  const flushed: number[] = [];
  const c = new OutputCoalescer(() => {}, { intervalMs: 1, onFlushed: (b) => flushed.push(b) });
  c.push(Buffer.from([0x41, 0xe2, 0x82])); // 'A' + 2 of the 3 bytes of '€'
  await c.end();
  assert.equal(flushed.reduce((a, b) => a + b, 0), 3);
});
