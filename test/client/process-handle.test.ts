// ClientProcess ordering: out-of-order and duplicated events are delivered in seq order,
// exactly once; catch-up reads after a reconnect merge with live events; lost output fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ClientProcess, type ProcessEvent, type ProcessOps } from '../../src/client/process-handle';
import type { ProcessReadResult } from '../../src/protocol/types';

const ops: ProcessOps = {
  write: async () => 'accepted',
  resize: async () => false,
  closeStdin: async () => false,
  interrupt: async () => {},
  terminate: async () => false,
};

function record(p: ClientProcess) {
  const log: string[] = [];
  p.onOutput((e) => log.push(`o${e.seq}:${Buffer.from(e.data).toString()}`));
  p.onExit((e) => log.push(`exit:${e.exitCode}`));
  p.onClose((e) => log.push(e.error ? `closed!${e.error}` : 'closed'));
  return log;
}
const tick = () => new Promise((r) => setImmediate(r));
const out = (seq: number): ProcessEvent => ({ kind: 'output', seq, stream: 'stdout', data: Buffer.from(`c${seq}`) });

test('process handle: any permutation with duplicates is delivered in seq order exactly once', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 30 }),
      fc.array(fc.nat(), { maxLength: 20 }),
      fc.func(fc.integer()),
      async (n, dupIdx, order) => {
        const events: ProcessEvent[] = [];
        for (let s = 1; s <= n; s++) events.push(out(s));
        events.push({ kind: 'exited', seq: n + 1, exitCode: 3 }, { kind: 'closed', seq: n + 2 });
        const withDups = [...events, ...dupIdx.map((i) => events[i % events.length])];
        const shuffled = withDups.map((e, i) => ({ e, k: order(i) * 1000 + i })).sort((a, b) => a.k - b.k).map((x) => x.e);
        const p = new ClientProcess('p', ops);
        const log = record(p);
        p.release();
        await tick();
        for (const e of shuffled) p.deliver(e);
        const expected = [...Array.from({ length: n }, (_, i) => `o${i + 1}:c${i + 1}`), 'exit:3', 'closed'];
        assert.deepEqual(log, expected);
        assert.equal(await p.exited, 3);
      },
    ),
    { numRuns: 200 },
  );
});

test('process handle: events before release are held, then delivered to listeners attached late', async () => {
  const p = new ClientProcess('p', ops);
  p.deliver(out(1));
  p.deliver({ kind: 'exited', seq: 2, exitCode: 0 });
  p.release();
  const log = record(p); // attached after release(), before the next macrotask
  p.deliver({ kind: 'closed', seq: 3 });
  await p.closed;
  assert.deepEqual(log, ['o1:c1', 'exit:0', 'closed']);
});

const read = (chunks: number[], nextSeq: number, state: Partial<ProcessReadResult> = {}): ProcessReadResult => ({
  chunks: chunks.map((seq) => ({ seq, stream: 'stdout' as const, chunk: Buffer.from(`c${seq}`).toString('base64') })),
  nextSeq,
  exited: false,
  exitCode: null,
  closed: false,
  failure: null,
  sandboxDenied: false,
  ...state,
});

test('process handle: catch-up merges with live events that raced it, and synthesizes a missed exit/close', async () => {
  const p = new ClientProcess('p', ops);
  const log = record(p);
  p.release();
  await tick();
  p.deliver(out(1));
  p.deliver(out(2));
  // Disconnected: 3 (output), 4 (exit), 5 (output), 6 (closed) missed; 5 also arrives live on the new connection.
  p.deliver(out(5));
  assert.equal(p.catchUp([read([3], 4), read([5], 6, { exited: true, exitCode: 2, closed: true })]), true);
  await p.closed;
  assert.deepEqual(log, ['o1:c1', 'o2:c2', 'o3:c3', 'o5:c5', 'exit:2', 'closed']);
});

test('process handle: output evicted while disconnected fails that process alone', async () => {
  const p = new ClientProcess('p', ops);
  const log = record(p);
  p.release();
  await tick();
  p.deliver(out(1));
  assert.equal(p.catchUp([read([7, 8], 9)]), false); // 2..6 are gone
  await p.closed;
  await assert.rejects(p.exited, /lost while reconnecting/);
  assert.equal(log.at(-1)?.startsWith('closed!'), true);
  assert.deepEqual(log.slice(0, 3), ['o1:c1', 'o7:c7', 'o8:c8']);
});

test('process handle: a catch-up of more chunks than a call can take as arguments merges them all', async () => {
  const p = new ClientProcess('p', ops);
  let count = 0;
  let lastSeq = 0;
  p.onOutput((e) => {
    count++;
    lastSeq = e.seq;
  });
  p.release();
  await tick();
  const n = 300_000; // more seqs than Math.max(...seqs) accepts
  const seqs = Array.from({ length: n }, (_, i) => i + 1);
  assert.equal(p.catchUp([read(seqs, n + 1)]), true);
  assert.equal(count, n);
  assert.equal(lastSeq, n);
  assert.equal(p.lastSeq, n);
});
