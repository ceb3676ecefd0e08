import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyedOrder } from '../../src/server/ordering';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('KeyedOrder: writers on one key run in arrival order, other keys run concurrently', async () => {
  const o = new KeyedOrder();
  const log: string[] = [];
  const slow = o.run('a', 'write', async () => {
    await tick(50);
    log.push('a1');
  });
  const next = o.run('a', 'write', () => log.push('a2'));
  const other = o.run('b', 'write', () => log.push('b1'));
  await Promise.all([slow, next, other]);
  assert.deepEqual(log, ['b1', 'a1', 'a2']);
  assert.equal(o.size, 0, 'state is dropped once idle');
});

test('KeyedOrder: readers share, a writer waits for earlier readers, free never blocks others', async () => {
  const o = new KeyedOrder();
  const log: string[] = [];
  const r1 = o.run('k', 'read', async () => {
    await tick(40);
    log.push('r1');
  });
  const r2 = o.run('k', 'read', () => log.push('r2'));
  const free = o.run('k', 'free', async () => {
    await tick(80);
    log.push('free');
  });
  const w = o.run('k', 'write', () => log.push('w'));
  const r3 = o.run('k', 'read', () => log.push('r3'));
  await Promise.all([r1, r2, free, w, r3]);
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
