// The idle collector (src/server/idle-gc.ts): memory that became garbage while the server was
// busy goes back once it idles, instead of staying resident until something allocates again;
// a busy server is left to V8's own scheduling.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { idleCollectorStats, startIdleCollector } from '../../src/server/idle-gc';
import { sleep, waitFor } from '../support/wait';

test('the idle collector collects once the loop idles with the resident set grown, not while it is busy', async (t) => {
  const stop = startIdleCollector({ intervalMs: 100 });
  t.after(stop);
  const runs0 = idleCollectorStats.collections;
  // ~48 MiB of strings, garbage at once.
  let keep: string[] | undefined = [];
  for (let i = 0; i < 48; i++) keep.push(Buffer.alloc(1024 * 1024, 65 + (i % 26)).toString('latin1') + String(i));
  assert.equal(keep.length, 48);
  keep = undefined;
  const grown = process.memoryUsage.rss();
  // Busy for 600 ms (the loop never idles for a whole interval): no collection of ours.
  const until = performance.now() + 600;
  await new Promise<void>((resolve) => {
    const spin = () => {
      const t0 = performance.now();
      while (performance.now() - t0 < 20) {
        /* busy */
      }
      if (performance.now() < until) setImmediate(spin);
      else resolve();
    };
    spin();
  });
  assert.equal(idleCollectorStats.collections, runs0, 'no collection while the loop is busy');
  // Idle: within a few intervals it collects, and the resident set shrinks.
  await waitFor(() => idleCollectorStats.collections > runs0, { what: 'an idle collection', timeout: 5_000, interval: 50 });
  await sleep(50); // a moment for the freed pages to be unmapped before reading the RSS
  const after = process.memoryUsage.rss();
  assert.ok(after < grown - 16 * 1024 * 1024, `rss ${grown >> 20} → ${after >> 20} MiB`);
});
