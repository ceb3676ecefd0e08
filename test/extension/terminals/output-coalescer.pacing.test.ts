// OutputCoalescer's rate budget (maxCharsPerSecond): on a manual clock, the characters written by
// any moment never exceed one write's worth plus the rate times the time passed, a late timer
// does not lower the rate, nothing is lost or reordered (also with multi-byte characters cut
// across chunks and writes), every input byte is reported once, and the queue holds only what
// the budget has not let through yet. Pacing to the renderer: writes stop while too much is not
// yet confirmed by the terminal's answers to the probes, resume on answers, and never deadlock.
// Behaviour on a manual clock, no timing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OutputCoalescer, RENDERER_PROBE, RENDERER_REPLY, type CoalescerClock } from '../../../src/extension/terminals/output-coalescer';
import { VtState } from '../../../src/extension/terminals/vt-state';

/** A clock that moves only when told to, running the timers that are due in order. */
class ManualClock implements CoalescerClock {
  t = 1_000;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private nextId = 1;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.timers.delete(h as number);
  }
  get pending(): number {
    return this.timers.size;
  }
  /** Moves time forward by `ms`, firing due timers (each at its due time, or `late` ms after it). */
  advance(ms: number, late = 0): void {
    const end = this.t + ms;
    for (;;) {
      let due: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at + late <= end && (!due || e[1].at < due[1].at)) due = e;
      if (!due) break;
      this.timers.delete(due[0]);
      this.t = Math.max(this.t, due[1].at + late);
      due[1].fn();
    }
    this.t = end;
  }
}

function paced(clock: ManualClock, opts: { perSecond: number; slice: number; intervalMs: number }) {
  const writes: { at: number; text: string }[] = [];
  let acked = 0;
  const c = new OutputCoalescer((text) => writes.push({ at: clock.now(), text }), {
    clock,
    intervalMs: opts.intervalMs,
    maxCharsPerFlush: opts.slice,
    maxCharsPerSecond: opts.perSecond,
    onFlushed: (b) => (acked += b),
  });
  return { c, writes, acked: () => acked, text: () => writes.map((w) => w.text).join('') };
}

test('coalescer pacing: written characters never exceed one write plus rate × time, and all arrive in order', () => {
  const clock = new ManualClock();
  const start = clock.t;
  const p = paced(clock, { perSecond: 100_000, slice: 1000, intervalMs: 2 }); // 100 characters per ms
  let input = '';
  for (let i = 0; i < 2000; i++) input += `${i}\n`;
  for (let i = 0; i < input.length; i += 777) p.c.push(Buffer.from(input.slice(i, i + 777)));
  for (let i = 0; i < 400 && p.c.pendingChars > 0; i++) clock.advance(1);
  assert.equal(p.c.pendingChars, 0, 'everything written');
  assert.equal(p.text(), input, 'nothing lost, nothing reordered');
  assert.equal(p.acked(), input.length, 'every input byte reported once');
  let total = 0;
  for (const w of p.writes) {
    assert.ok(w.text.length <= 1000, `a write of ${w.text.length} characters is above the slice`);
    total += w.text.length;
    assert.ok(total <= 1000 + (w.at - start) * 100, `${total} characters by ${w.at - start} ms`);
  }
  // And the budget is used: the whole input took about input / rate, not much longer.
  const took = p.writes.at(-1)!.at - start;
  assert.ok(took <= Math.ceil((input.length - 1000) / 100) + 2 * 2 + 2, `took ${took} ms for ${input.length} characters`);
});

test('coalescer pacing: late timers do not lower the rate (the budget refills by the time that passed)', () => {
  const clock = new ManualClock();
  const p = paced(clock, { perSecond: 100_000, slice: 1000, intervalMs: 2 });
  p.c.push(Buffer.from('x'.repeat(50_000)));
  // Every timer fires 8 ms late: each write then takes a full slice (the budget caps at one write).
  for (let i = 0; i < 100 && p.c.pendingChars > 0; i++) clock.advance(10, 8);
  assert.equal(p.c.pendingChars, 0);
  assert.equal(p.text().length, 50_000);
  const full = p.writes.filter((w) => w.text.length === 1000).length;
  assert.ok(full >= p.writes.length - 1, `${full} of ${p.writes.length} writes were full slices`);
});

test('coalescer pacing: the queue holds only what the budget has not let through; multi-byte characters stay whole', () => {
  const clock = new ManualClock();
  const p = paced(clock, { perSecond: 10_000, slice: 7, intervalMs: 1 }); // 10 characters per ms, odd slice
  const input = 'a€😀b'.repeat(300); // 1-, 3- and 4-byte UTF-8 characters, a surrogate pair in UTF-16
  const bytes = Buffer.from(input);
  for (let i = 0; i < bytes.length; i += 5) p.c.push(bytes.subarray(i, i + 5)); // cuts characters across chunks
  assert.ok(p.c.pendingChars > 0 && p.writes.length === 0, 'nothing written before the first timer');
  let last = p.c.pendingChars;
  for (let i = 0; i < 2000 && p.c.pendingChars > 0; i++) {
    clock.advance(1);
    assert.ok(p.c.pendingChars <= last, 'the queue only shrinks when nothing is pushed');
    last = p.c.pendingChars;
  }
  assert.equal(p.c.pendingChars, 0);
  assert.equal(p.text(), input);
  for (const w of p.writes) {
    const first = w.text.charCodeAt(0);
    assert.ok(!(first >= 0xdc00 && first <= 0xdfff), 'no write starts with the second half of a surrogate pair');
  }
  assert.equal(p.acked(), bytes.length);
  assert.equal(clock.pending, 0, 'no timer left once drained');
});

test('coalescer pacing: an idle terminal writes its first text one interval after it arrives, end() drains, dispose() stops', async () => {
  const clock = new ManualClock();
  const p = paced(clock, { perSecond: 1000, slice: 100, intervalMs: 5 }); // 1 character per ms
  clock.advance(10_000); // a long idle time does not save up more than one write
  p.c.push(Buffer.from('y'.repeat(250)));
  clock.advance(5);
  assert.deepEqual(p.writes.map((w) => w.text.length), [100], 'one full write after one interval');
  clock.advance(50);
  assert.equal(p.text().length, 100, 'the budget refills at 1 character per ms: not yet a second full write');
  clock.advance(60);
  assert.equal(p.text().length, 200);
  const ended = p.c.end();
  clock.advance(200);
  await ended;
  assert.equal(p.text(), 'y'.repeat(250));
  p.c.push(Buffer.from('after end'));
  clock.advance(1000);
  assert.equal(p.text().length, 250, 'nothing is written after end()');

  const q = paced(clock, { perSecond: 1000, slice: 100, intervalMs: 5 });
  q.c.push(Buffer.from('z'.repeat(500)));
  clock.advance(5);
  q.c.dispose();
  clock.advance(10_000);
  assert.equal(q.text().length, 100, 'dispose() stops the writes');
  assert.equal(clock.pending, 0);
});

// Pacing to the renderer: each write carries a DSR request; the terminal's answers (input) confirm it.
function rendererPaced(clock: ManualClock, renderer = { highChars: 100, lowChars: 20, replyTimeoutMs: 500 }) {
  const writes: string[] = [];
  let acked = 0;
  const c = new OutputCoalescer((t) => writes.push(t), { clock, intervalMs: 1, maxCharsPerFlush: 30, renderer, onFlushed: (b) => (acked += b) });
  const shown = () => writes.join('').split(RENDERER_PROBE).join('');
  const probes = () => writes.filter((w) => w.endsWith(RENDERER_PROBE)).length;
  return { c, writes, shown, probes, acked: () => acked };
}

test('renderer pacing: writes stop above the high watermark until the renderer answers, then resume; bytes count once answered; all text in order', () => {
  const clock = new ManualClock();
  const p = rendererPaced(clock);
  const input = Array.from({ length: 100 }, (_, i) => `line ${i}\n`).join(''); // 790 characters
  p.c.push(Buffer.from(input));
  clock.advance(100); // well below the reply timeout
  assert.ok(p.writes.every((w) => w.endsWith(RENDERER_PROBE)), 'every write ends with a probe');
  assert.equal(p.writes.length, 4, 'stopped after the write that crossed 100 unconfirmed characters (4 × 30)');
  assert.equal(p.c.unconfirmedChars, 120);
  assert.equal(p.acked(), 0, 'written is not consumed: nothing reported before an answer');
  // Two answers: 60 still unconfirmed, above the low watermark (20): still stopped.
  assert.equal(p.c.takeRendererReplies(RENDERER_REPLY + RENDERER_REPLY), '');
  assert.equal(p.acked(), 0, 'the first two writes were parts of one chunk still being written');
  clock.advance(100);
  assert.equal(p.writes.length, 4);
  // The other two: resume at once.
  assert.equal(p.c.takeRendererReplies(RENDERER_REPLY + RENDERER_REPLY), '');
  clock.advance(0);
  assert.equal(p.writes.length, 5, 'resumed without waiting for a timer interval');
  // A renderer that answers everything it is sent: everything arrives, in order, every byte reported once.
  for (let i = 0; i < 1000 && (p.c.pendingChars > 0 || p.c.unconfirmedChars > 0); i++) {
    p.c.takeRendererReplies(RENDERER_REPLY.repeat(p.probes()));
    clock.advance(1);
  }
  assert.equal(p.c.pendingChars, 0);
  assert.equal(p.shown(), input);
  assert.equal(p.acked(), input.length);
});

test('renderer pacing: only as many replies as probes are outstanding are taken; other input passes unchanged', () => {
  const clock = new ManualClock();
  const p = rendererPaced(clock);
  assert.equal(p.c.takeRendererReplies(`a${RENDERER_REPLY}b`), `a${RENDERER_REPLY}b`, 'no probe outstanding: a child’s own reply is left alone');
  p.c.push(Buffer.from('x'.repeat(50)));
  clock.advance(5); // two writes (30 + 20), two probes
  assert.equal(p.writes.length, 2);
  // Typed keys around the replies, and a third reply (a child's own DSR request) that is not ours.
  assert.equal(p.c.takeRendererReplies(`ls${RENDERER_REPLY}\r${RENDERER_REPLY}q${RENDERER_REPLY}`), `ls\rq${RENDERER_REPLY}`);
  assert.equal(p.c.unconfirmedChars, 0);
  assert.equal(p.acked(), 50);
});

test('renderer pacing: a terminal that does not answer gets everything after the reply timeout, and an answer resumes the pacing', () => {
  const clock = new ManualClock();
  const p = rendererPaced(clock);
  for (let i = 0; i < 100; i++) p.c.push(Buffer.from('y'.repeat(10)));
  clock.advance(100);
  assert.equal(p.writes.length, 4, 'stopped, waiting for answers');
  clock.advance(400);
  assert.equal(p.acked(), 0);
  clock.advance(1); // the reply timeout, counted from the first unanswered write (at 1 ms)
  assert.ok(p.acked() >= 120, `the unanswered writes count as consumed (the process is not stopped for good): ${p.acked()}`);
  for (let i = 0; i < 100 && p.c.pendingChars > 0; i++) clock.advance(1);
  assert.equal(p.c.pendingChars, 0, 'everything written without any answer');
  assert.equal(p.shown(), 'y'.repeat(1000));
  assert.equal(p.acked(), 1000);
  assert.ok(p.writes.every((w) => w.endsWith(RENDERER_PROBE)), 'still probing');
  // Late answers to every probe are taken out of the input, a further reply is not.
  const n = p.probes();
  assert.equal(p.c.takeRendererReplies(RENDERER_REPLY.repeat(n + 1)), RENDERER_REPLY);
  // Answering again: the next output is paced again.
  p.c.push(Buffer.from('w'.repeat(1000)));
  clock.advance(100);
  assert.equal(p.writes.length, n + 4, 'stopped at the watermark again');
  assert.equal(p.acked(), 1000);
});

test('renderer pacing: a terminal that answered but falls silent is written to again after the timeout (no deadlock)', () => {
  const clock = new ManualClock();
  const p = rendererPaced(clock);
  p.c.push(Buffer.from('z'.repeat(1000)));
  clock.advance(10);
  p.c.takeRendererReplies(RENDERER_REPLY); // it answers once (90 still unconfirmed: still stopped)...
  const stalled = p.writes.length;
  clock.advance(499); // the timeout counts from the last answer
  assert.equal(p.writes.length, stalled, 'still waiting before the timeout');
  clock.advance(1);
  assert.ok(p.writes.length > stalled, 'writes again after the timeout');
  for (let i = 0; i < 100 && p.c.pendingChars > 0; i++) clock.advance(500);
  assert.equal(p.shown(), 'z'.repeat(1000));
  assert.equal(p.acked(), 1000);
});

// A probe dropped inside a child's escape sequence would abort it (the rest printed as text):
// writes are cut at arbitrary places, so the probe goes out only where the parser is at ground.
test('renderer pacing: no probe lands inside an escape sequence cut by a write slice; bytes still confirmed once', () => {
  const clock = new ManualClock();
  const p = rendererPaced(clock, { highChars: 1_000_000, lowChars: 20, replyTimeoutMs: 500 });
  // Colours, a title (OSC … BEL), a hyperlink (OSC … ST), a DCS string, an 8-bit CSI: every 30-character slice cuts some of them.
  const unit = '\x1b[1;31mred\x1b[0m \x1b]0;a title here\x07\x1b]8;;https://example.com/x\x1b\\link\x1b]8;;\x1b\\ \x1bP1$r0m\x1b\\ \u009b32mgreen\u009b0m\r\n';
  const input = unit.repeat(40);
  p.c.push(Buffer.from(input));
  for (let i = 0; i < 200; i++) {
    clock.advance(2);
    p.c.takeRendererReplies(RENDERER_REPLY.repeat(10)); // answer whatever is outstanding
  }
  assert.equal(p.shown(), input, 'all text, in order, without probes');
  assert.ok(p.writes.length > 40, 'the input went out in many slices');
  assert.ok(p.probes() > 0, 'probes still went out');
  // Every probe sits where the text before it leaves a terminal parser at ground.
  const vt = new VtState();
  for (const w of p.writes) {
    const text = w.endsWith(RENDERER_PROBE) ? w.slice(0, -RENDERER_PROBE.length) : w;
    vt.feed(text);
    if (w.endsWith(RENDERER_PROBE)) assert.ok(vt.ground, `probe after ${JSON.stringify(text.slice(-12))}, inside a sequence`);
  }
  assert.equal(p.acked(), Buffer.byteLength(input), 'every byte confirmed exactly once');
  assert.equal(p.c.unconfirmedChars, 0);
});

test('vt state: ground only outside ESC, CSI, OSC (BEL or ST), DCS/APC (ST only), 8-bit CSI; CAN cancels', () => {
  const at = (...parts: string[]) => {
    const vt = new VtState();
    for (const part of parts) vt.feed(part);
    return vt.ground;
  };
  assert.equal(at('plain text'), true);
  assert.equal(at('\x1b'), false);
  assert.equal(at('\x1b[1;3'), false);
  assert.equal(at('\x1b[1;3', '1m'), true);
  assert.equal(at('\x1b]0;title'), false);
  assert.equal(at('\x1b]0;title\x07'), true);
  assert.equal(at('\x1b]8;;u\x1b'), false);
  assert.equal(at('\x1b]8;;u\x1b', '\\'), true);
  assert.equal(at('\x1bPq#0\x07more'), false, 'BEL does not end a DCS');
  assert.equal(at('\x1bPq#0\x1b\\'), true);
  assert.equal(at('\x1b_apc\x1b\\'), true);
  assert.equal(at('\x1b(B'), true, 'ESC with an intermediate and a final');
  assert.equal(at('\x1b('), false);
  assert.equal(at('\u009b3'), false);
  assert.equal(at('\u009b31m'), true);
  assert.equal(at('\x1b[31', '\x18'), true, 'CAN cancels');
  assert.equal(at('\x1b]0;t\x1b[2J'), true, 'ESC inside OSC starts a new sequence');
});
