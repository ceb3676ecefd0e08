// The output coalescer (src/extension/terminals/output-coalescer.ts) on its own: UTF-8 across
// chunk boundaries, bounded writes, LF to CRLF.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CoalescerClock, lfToCrlf, OutputCoalescer } from '../../../src/extension/terminals/output-coalescer';

const enc = new TextEncoder();

function collector(opts: ConstructorParameters<typeof OutputCoalescer>[1] = {}, onPressure?: (c: boolean) => void) {
  const writes: string[] = [];
  const c = new OutputCoalescer((t) => writes.push(t), { intervalMs: 1, ...opts }, onPressure);
  return { c, writes, text: () => writes.join('') };
}

describe('output coalescer', () => {
  it('keeps multi-byte characters intact whatever the chunk boundaries', async () => {
    const sample = 'héllo wörld — 日本語 😀🎉 ok\n';
    const bytes = enc.encode(sample.repeat(50));
    for (const size of [1, 2, 3, 5, 7]) {
      const { c, text } = collector();
      for (let i = 0; i < bytes.length; i += size) c.push(bytes.subarray(i, i + size));
      await c.end();
      assert.equal(text(), sample.repeat(50), `chunk size ${size}`);
      assert.ok(!text().includes('\ufffd'));
    }
  });

  it('coalesces many small chunks into few writes, each bounded, dropping nothing', async () => {
    const { c, writes, text } = collector({ maxCharsPerFlush: 1000, intervalMs: 5 });
    const line = enc.encode('0123456789');
    for (let i = 0; i < 10_000; i++) c.push(line);
    await c.end();
    assert.equal(text().length, 100_000);
    assert.equal(text(), '0123456789'.repeat(10_000));
    assert.ok(writes.every((w) => w.length <= 1000), 'no write above the bound');
    assert.ok(writes.length >= 100 && writes.length < 10_000, `coalesced into ${writes.length} writes`);
  });

  it('never splits a surrogate pair across two writes', async () => {
    const { c, writes, text } = collector({ maxCharsPerFlush: 3 });
    c.push(enc.encode('a😀😀b😀'));
    await c.end();
    assert.equal(text(), 'a😀😀b😀');
    for (const w of writes) {
      const last = w.charCodeAt(w.length - 1);
      assert.ok(!(last >= 0xd800 && last <= 0xdbff), `write ${JSON.stringify(w)} ends with a high surrogate`);
    }
  });

  it('reports pressure above the high-water mark and relief once drained', async () => {
    const events: boolean[] = [];
    const { c, text } = collector({ maxCharsPerFlush: 100, highWaterChars: 1000 }, (p) => events.push(p));
    c.push(enc.encode('x'.repeat(5000)));
    assert.deepEqual(events, [true]);
    await c.end();
    assert.deepEqual(events, [true, false]);
    assert.equal(text().length, 5000);
  });

  it('an incomplete trailing character becomes U+FFFD at the end; text messages do not cut characters', async () => {
    const { c, text } = collector();
    const euro = enc.encode('€'); // 3 bytes
    c.push(euro.subarray(0, 2));
    c.pushText('[msg]');
    await c.end();
    assert.equal(text(), '[msg]\ufffd', 'the partial character waits for its rest, then becomes U+FFFD');
    const d = collector();
    d.c.push(euro.subarray(0, 1));
    d.c.push(euro.subarray(1));
    d.c.pushText('!');
    await d.c.end();
    assert.equal(d.text(), '€!');
  });

  it('dispose drops the queue and resolves waiters; pushes after end are ignored', async () => {
    // Real timers, counted: a write comes at once or from a pending timer, so none pending means none to come.
    const pending = new Set<unknown>();
    const clock: CoalescerClock = {
      now: () => Date.now(),
      setTimeout: (fn, ms) => {
        const h = setTimeout(() => {
          pending.delete(h);
          fn();
        }, ms);
        pending.add(h);
        return h;
      },
      clearTimeout: (h) => {
        pending.delete(h);
        clearTimeout(h as ReturnType<typeof setTimeout>);
      },
    };
    const { c, writes } = collector({ intervalMs: 50, clock });
    c.push(enc.encode('never shown'));
    assert.ok(pending.size > 0, 'the first write waits for a timer');
    const drained = c.drained();
    c.dispose();
    await drained;
    c.push(enc.encode('late'));
    assert.equal(pending.size, 0, 'no timer left to write anything');
    assert.equal(c.pendingChars, 0);
    assert.deepEqual(writes, []);
  });

  it('lfToCrlf converts bare LF and keeps CRLF', () => {
    assert.equal(lfToCrlf('a\nb\r\nc'), 'a\r\nb\r\nc');
  });
});
