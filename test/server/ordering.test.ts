// src/server/ordering.ts: KeyedOrder, the per-key order of writers and readers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyedOrder } from '../../src/server/ordering';

/** A promise the test settles by hand: the "slow request" is as slow as the test says, not N ms. */
function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

test('KeyedOrder: writers on one key run in arrival order, other keys run concurrently', async () => {
  const o = new KeyedOrder();
  const log: string[] = [];
  const a1 = gate();
  const slow = o.run('a', 'write', async () => {
    await a1.wait;
    log.push('a1');
  });
  const next = o.run('a', 'write', () => log.push('a2'));
  const other = o.run('b', 'write', () => log.push('b1'));
  await other; // key b is not held up by the pending writer on key a
  assert.deepEqual(log, ['b1'], 'a2 waits for a1');
  a1.open();
  await Promise.all([slow, next]);
  assert.deepEqual(log, ['b1', 'a1', 'a2']);
  assert.equal(o.size, 0, 'state is dropped once idle');
});

test('KeyedOrder: readers share, a writer waits for earlier readers, free never blocks others', async () => {
  const o = new KeyedOrder();
  const log: string[] = [];
  const r1Gate = gate();
  const freeGate = gate();
  const r1 = o.run('k', 'read', async () => {
    await r1Gate.wait;
    log.push('r1');
  });
  const r2 = o.run('k', 'read', () => log.push('r2'));
  const free = o.run('k', 'free', async () => {
    await freeGate.wait;
    log.push('free');
  });
  const w = o.run('k', 'write', () => log.push('w'));
  const r3 = o.run('k', 'read', () => log.push('r3'));
  await r2; // readers share the key with the pending r1
  assert.deepEqual(log, ['r2'], 'the writer waits for the earlier reader r1');
  r1Gate.open();
  await Promise.all([r1, w, r3]); // while `free` is still pending: it blocks nobody
  assert.deepEqual(log, ['r2', 'r1', 'w', 'r3']);
  freeGate.open();
  await free;
  assert.deepEqual(log, ['r2', 'r1', 'w', 'r3', 'free']);
});

test('KeyedOrder: a failing request releases the key and propagates its error', async () => {
  const o = new KeyedOrder();
  const bad = o.run('k', 'write', () => {
    throw new Error('boom');
  });
  const good = o.run('k', 'write', () => 'ok');
  await assert.rejects(bad, /boom/);
  assert.equal(await good, 'ok');
  assert.equal(o.size, 0);
});
