// Emitter: a listener that throws is reported to the error handler and delivery goes on.
// Before, the exception was rethrown on a microtask: an uncaught exception that ended the
// process (and left a CLI's children orphaned). node:test fails a test on an uncaught error.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Emitter, onListenerError, setListenerErrorHandler } from '../../src/rpc/event';

test('a throwing listener is logged, the others still get the event, nothing is thrown later', async () => {
  const previous = onListenerError;
  const reported: unknown[] = [];
  setListenerErrorHandler((e) => reported.push(e));
  const uncaught: unknown[] = [];
  const onUncaught = (e: unknown) => uncaught.push(e);
  process.on('uncaughtException', onUncaught);
  try {
    const em = new Emitter<number>();
    const seen: number[] = [];
    em.event(() => {
      throw new Error('boom');
    });
    em.event((n) => seen.push(n));
    em.fire(1);
    em.fire(2);
    // The old rethrow was queued as a microtask: every microtask runs before the next macrotask.
    await new Promise<void>((r) => setImmediate(r));
    assert.deepEqual(seen, [1, 2]);
    assert.equal(reported.length, 2);
    assert.match(String(reported[0]), /boom/);
    assert.deepEqual(uncaught, []);
  } finally {
    process.off('uncaughtException', onUncaught);
    setListenerErrorHandler(previous);
  }
});

test('an error handler that throws itself does not break delivery', () => {
  const previous = onListenerError;
  setListenerErrorHandler(() => {
    throw new Error('handler broken');
  });
  try {
    const em = new Emitter<string>();
    const seen: string[] = [];
    em.event(() => {
      throw new Error('x');
    });
    em.event((s) => seen.push(s));
    em.fire('a');
    assert.deepEqual(seen, ['a']);
  } finally {
    setListenerErrorHandler(previous);
  }
});
