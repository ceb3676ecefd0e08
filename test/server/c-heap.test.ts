// The C heap's release (src/server/c-heap.ts, native/malloc-release.c): glibc keeps freed blocks
// for reuse, and pages in the middle of its heap go back to the kernel only by malloc_trim(3).
// The CLI's idle collector trims on every look, so a server that freed such memory (buffers of a
// burst, V8's compiler zones) does not hold it for as long as it runs.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { cHeap } from '../../src/server/c-heap';
import { exposedGc, idleCollectorStats, startIdleCollector, youngGenerationBytes } from '../../src/server/idle-gc';
import { waitFor } from '../support/wait';

const linuxGlibc = process.platform === 'linux' && (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime !== undefined;

/** RssAnon of this process (KiB → bytes): the C heap's pages, without the binary's. */
function rssAnon(): number {
  return Number(/^RssAnon:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;
}

test('npm run build gives a Linux glibc machine the C heap module, and it loads', { skip: !linuxGlibc && 'glibc only' }, () => {
  const heap = cHeap();
  assert.ok(heap, 'dist/native/malloc-release-linux-<arch>.node is built by npm run build (C compiler + Node headers) and loads');
  assert.equal(heap.configure(), true);
  assert.equal(typeof heap.trim(), 'boolean');
});

test('memory freed in the middle of the C heap goes back at the idle collector\'s next look', { skip: !linuxGlibc && 'glibc only' }, async (t) => {
  const gc = exposedGc();
  assert.ok(gc, 'a collector');
  // 48 MiB of 16 KiB buffers from malloc (below glibc's mmap threshold: inside its heap), one in
  // 64 kept: the heap's top stays in use, so freeing the rest returns nothing without a trim.
  const blocks: (Buffer | undefined)[] = [];
  for (let i = 0; i < 3072; i++) blocks.push(Buffer.allocUnsafeSlow(16 * 1024).fill(i & 0xff));
  for (let i = 0; i < blocks.length; i++) if (i % 64 !== 63) blocks[i] = undefined;
  // Still resident after the collection (V8's sweeper frees the backing stores meanwhile: glibc
  // keeps them), until a trim; the collector trims on every look.
  gc();
  const held = rssAnon();
  const trims0 = idleCollectorStats.trims;
  const stop = startIdleCollector({ intervalMs: 100 });
  t.after(stop);
  await waitFor(() => idleCollectorStats.trims > trims0, { what: 'a look with a trim', timeout: 5_000, interval: 20 });
  const released = () => rssAnon() < held - 32 * 1024 * 1024;
  await waitFor(released, { what: 'the C heap\'s free pages to go', timeout: 3_000, interval: 20, detail: () => `RssAnon ${held >> 20} → ${rssAnon() >> 20} MiB` });
  assert.equal(blocks.filter(Boolean).length, 48);
});

test('lowMemory() shrinks a young generation a burst grew to its least, at once (the CLI\'s release at start)', { skip: !linuxGlibc && 'glibc only' }, () => {
  const heap = cHeap();
  assert.ok(heap?.lowMemory, 'the module has lowMemory');
  // Objects that survive young collections grow the young generation (V8 counts what survives).
  let keep: object[] = [];
  for (let i = 0; i < 400_000; i++) keep.push({ i, s: `x${i}` });
  const grown = youngGenerationBytes();
  assert.ok(grown >= 8 * 1024 * 1024, `grown to ${grown >> 20} MiB`);
  keep = [];
  assert.equal(keep.length, 0);
  assert.equal(heap.lowMemory(), true);
  assert.ok(youngGenerationBytes() <= 1024 * 1024, `after lowMemory: ${youngGenerationBytes() / (1024 * 1024)} MiB (was ${grown >> 20})`);
});
