// The approval question pacer (src/extension/approval/question-pacer.ts) on a hand-driven clock:
// a burst never shows more than the budget per window, the rest come later in order, and a
// question that stopped mattering while it waited is never shown.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IDLE_REMEMBERED, QuestionPacer, type PacerClock } from '../../../src/extension/approval/question-pacer';

/** A clock whose time moves only when the test says; timers fire as it passes them. */
class ManualClock implements PacerClock {
  t = 0;
  private timers: Array<{ at: number; fn: () => void }> = [];
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    this.timers.push({ at: this.t + ms, fn });
    return undefined;
  }
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = next.at;
      next.fn();
    }
    this.t = end;
  }
  get pendingTimers(): number {
    return this.timers.length;
  }
}

describe('question pacer', () => {
  it('a burst of 7: three at once, then three per window, in order', () => {
    const clock = new ManualClock();
    const pacer = new QuestionPacer(3, 1000, clock, Infinity);
    const shown: Array<[number, number]> = [];
    for (let i = 1; i <= 7; i++) pacer.schedule(() => void shown.push([i, clock.now()]), () => false);
    assert.deepEqual(shown, [[1, 0], [2, 0], [3, 0]]);
    assert.equal(pacer.waiting, 4);
    clock.advance(999);
    assert.equal(shown.length, 3, 'nothing more before the window has passed');
    clock.advance(1);
    assert.deepEqual(shown.slice(3), [[4, 1000], [5, 1000], [6, 1000]]);
    clock.advance(1000);
    assert.deepEqual(shown.slice(6), [[7, 2000]]);
    assert.equal(pacer.waiting, 0);
    // No window ever held more than three shows.
    for (const [, t] of shown) assert.ok(shown.filter(([, u]) => u >= t && u < t + 1000).length <= 3);
  });

  it('a waiting question that settled meanwhile is skipped; the next one takes its turn', () => {
    const clock = new ManualClock();
    const pacer = new QuestionPacer(3, 1000, clock, Infinity);
    const shown: number[] = [];
    const stale = new Set<number>();
    for (let i = 1; i <= 5; i++) pacer.schedule(() => void shown.push(i), () => stale.has(i));
    stale.add(4);
    clock.advance(1000);
    assert.deepEqual(shown, [1, 2, 3, 5]);
  });

  it('spread-out questions are shown at once; one timer at a time while waiting', () => {
    const clock = new ManualClock();
    const pacer = new QuestionPacer(3, 1000, clock, Infinity);
    const shown: number[] = [];
    for (let i = 1; i <= 3; i++) {
      pacer.schedule(() => void shown.push(i), () => false);
      clock.advance(400);
    }
    assert.deepEqual(shown, [1, 2, 3]); // 0, 400, 800: within one window only three
    pacer.schedule(() => void shown.push(4), () => false);
    pacer.schedule(() => void shown.push(5), () => false);
    assert.equal(clock.pendingTimers, 1);
    assert.deepEqual(shown, [1, 2, 3, 4], 'at 1200 the show at 0 has left the window');
    clock.advance(400);
    assert.deepEqual(shown, [1, 2, 3, 4, 5]);
  });

  it('a show that throws does not stop the queue', () => {
    const clock = new ManualClock();
    const pacer = new QuestionPacer(1, 100, clock, Infinity);
    const shown: number[] = [];
    pacer.schedule(() => {
      throw new Error('boom');
    }, () => false);
    pacer.schedule(() => void shown.push(2), () => false);
    clock.advance(100);
    assert.deepEqual(shown, [2]);
  });

  it('at most maxOpen on screen: the next waits until one is answered or stops mattering', async () => {
    const clock = new ManualClock();
    const pacer = new QuestionPacer(3, 1000, clock, 2);
    const shown: number[] = [];
    const answer = new Map<number, () => void>();
    for (let i = 1; i <= 4; i++) {
      pacer.schedule(() => {
        shown.push(i);
        return new Promise<void>((r) => answer.set(i, r));
      }, () => false);
    }
    clock.advance(5000);
    assert.deepEqual(shown, [1, 2], 'two on screen, however long nobody answers');
    answer.get(2)!();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(shown, [1, 2, 3]);
    answer.get(1)!();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(shown, [1, 2, 3, 4]);
  });

  it('round-robin by connection: a flood from one agent does not hold back another agent\'s question', () => {
    const clock = new ManualClock();
    const pacer = new QuestionPacer(1, 100, clock, Infinity);
    const shown: string[] = [];
    for (let i = 1; i <= 6; i++) pacer.schedule(() => void shown.push(`A${i}`), () => false, 'A');
    pacer.schedule(() => void shown.push('B1'), () => false, 'B');
    pacer.schedule(() => void shown.push('B2'), () => false, 'B');
    clock.advance(1000);
    assert.deepEqual(shown, ['A1', 'B1', 'A2', 'B2', 'A3', 'A4', 'A5', 'A6']);
  });

  it('connections that come and go are forgotten: the per-connection memory stays bounded over a long window life', async () => {
    const clock = new ManualClock();
    const pacer = new QuestionPacer(3, 100, clock, Infinity);
    const served = () => (pacer as unknown as { served: Map<string, number> }).served;
    const flush = () => new Promise((r) => setImmediate(r));
    let shownCount = 0;
    // One connection keeps a question on screen all along: it is never forgotten.
    pacer.schedule(() => new Promise<void>(() => undefined), () => false, 'long-lived');
    // 500 connections, each: a question answered on screen, one that stopped mattering while it
    // waited (its connection closed), then one more shown and gone.
    for (let i = 0; i < 500; i++) {
      const key = `agent connection #${i} (127.0.0.1:${10000 + i})`;
      let answer!: () => void;
      let closed = false;
      clock.advance(100);
      pacer.schedule(() => {
        shownCount++;
        return new Promise<void>((r) => (answer = r));
      }, () => false, key);
      pacer.schedule(() => void shownCount++, () => closed, key);
      pacer.schedule(() => void shownCount++, () => closed, key);
      pacer.schedule(() => void shownCount++, () => closed, key); // the window's budget is spent: waits
      closed = true;
      answer();
      await flush();
      clock.advance(100);
      pacer.schedule(() => void shownCount++, () => false, key);
    }
    assert.equal(pacer.waiting, 0);
    assert.equal(shownCount, 500 * 4, 'each connection\'s shown questions, not the closed one\'s');
    assert.ok(served().has('long-lived'), 'the connection with a question on screen is remembered');
    assert.ok(served().size <= IDLE_REMEMBERED + 1, `entries kept: ${served().size} (at most ${IDLE_REMEMBERED} idle connections + the busy one)`);
  });
});
