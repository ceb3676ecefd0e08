// The idle collector (src/server/idle-gc.ts): memory that became garbage while the server was
// busy goes back once it idles, instead of staying resident until something allocates again;
// a busy server is left to V8's own scheduling; a young generation grown by a burst goes back too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exposedGc, idleCollectorStats, startIdleCollector, youngGenerationBytes } from '../../src/server/idle-gc';
import { LARGE_UPLOAD_BYTES, uploadEnded } from '../../src/server/upload-end';
import { waitFor } from '../support/wait';

/**
 * Collects what earlier tests dropped, and waits until the memory outside the heap has stopped
 * falling: buffers are freed by a sweeper after the collection, and a collector started while it
 * still ran took the earlier garbage into its baseline (then the drop hid a test's own growth).
 */
async function settledExternal(): Promise<void> {
  exposedGc()?.();
  let last = -1;
  await waitFor(
    () => {
      const now = process.memoryUsage().external;
      const same = now === last;
      last = now;
      return same;
    },
    { what: 'the memory outside the heap to settle', timeout: 5_000, interval: 100 },
  );
}

/** Keeps the event loop busy for `ms`: 20 ms of work per turn, other callbacks between (as a busy server's loop). */
async function busyFor(ms: number): Promise<void> {
  const until = performance.now() + ms;
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
}

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
  await busyFor(600);
  assert.equal(idleCollectorStats.collections, runs0, 'no collection while the loop is busy');
  // Idle: within a few intervals it collects, and the resident set shrinks.
  await waitFor(() => idleCollectorStats.collections > runs0, { what: 'an idle collection', timeout: 5_000, interval: 50 });
  // The freed pages are unmapped shortly after the collection: wait for the resident set to drop.
  const shrunk = () => process.memoryUsage.rss() < grown - 16 * 1024 * 1024;
  await waitFor(shrunk, { what: 'the resident set to shrink', timeout: 5_000, interval: 20, detail: () => `rss ${grown >> 20} → ${process.memoryUsage.rss() >> 20} MiB` });
  assert.ok(shrunk());
});

/** A burst whose objects survive a scavenge or two (as a stream's chunks in flight do): V8 grows the young generation for it. */
function youngBurst(): void {
  let live: object[][] = [];
  for (let r = 0; r < 120; r++) {
    const a: object[] = [];
    for (let i = 0; i < 20_000; i++) a.push({ i, s: `x${i}` });
    live.push(a);
    if (live.length > 4) live = live.slice(1);
  }
  live = [];
}

test('once the server idles, the young generation a burst grew goes back to its size at rest within seconds', async (t) => {
  // Half-second looks, idle below 25 % (not 100 ms, 5 %): on a loaded machine a poll of this
  // test preempted mid-callback made a 100 ms window busy; busy is the first test's subject.
  const stop = startIdleCollector({ intervalMs: 500, idleUtilization: 0.25 });
  t.after(stop);
  const rest = 2 * 1024 * 1024; // the collector's default youngRestBytes
  const releases0 = idleCollectorStats.youngReleases;
  youngBurst();
  const grown = youngGenerationBytes();
  assert.ok(grown > 4 * rest, `the burst grew the young generation (${grown >> 20} MiB)`);
  const quiet = performance.now();
  // V8 on its own shrinks it in a collection after ~5 s of a low allocation rate; the collector
  // gets it back after two quiet looks (a full collection, then the release).
  await waitFor(() => youngGenerationBytes() <= rest, {
    what: 'the young generation back at its size at rest',
    timeout: 30_000,
    interval: 50,
    detail: () => `${grown >> 20} -> ${youngGenerationBytes() >> 20} MiB, releases ${idleCollectorStats.youngReleases - releases0}, full collections ${idleCollectorStats.collections}`,
  });
  const took = performance.now() - quiet;
  assert.ok(idleCollectorStats.youngReleases > releases0);
  assert.ok(took < 4_500, `given back ${Math.round(took)} ms after the burst, before V8's own 5 s`);
});

for (const mib of [12, 6]) {
  test(`garbage outside the heap that would leave the idle server far above its rest is collected too (${mib} MiB of dropped 1 MiB buffers)`, async (t) => {
    // As fs/readBlock's answers leave them: buffers outside the heap, garbage once sent, nothing
    // allocating any more. Under the old 16 MiB threshold 12 stayed until something allocated; under
    // the later 8 MiB one, the 6 that the end of a read left (with the compiler's ~4 MiB of code
    // pages: 10 MiB above rest).
    await settledExternal();
    // Its baseline: the RSS now. Only the garbage may set it off here, not a young generation an
    // earlier test grew.
    const stop = startIdleCollector({ intervalMs: 100, youngRestBytes: Infinity });
    t.after(stop);
    const runs0 = idleCollectorStats.collections;
    // Mapped (resizable) buffers, as the server's read blocks are: fresh pages each, never memory
    // an earlier test freed and the C heap kept (which would not grow the RSS at all).
    const Resizable = ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer;
    let keep: Uint8Array[] | undefined = [];
    for (let i = 0; i < mib; i++) keep.push(new Uint8Array(new Resizable(1024 * 1024, { maxByteLength: 1024 * 1024 })).fill(i + 1));
    assert.equal(keep.length, mib);
    keep = undefined;
    const grown = process.memoryUsage.rss();
    await waitFor(() => idleCollectorStats.collections > runs0, { what: `an idle collection after ${mib} MiB of garbage`, timeout: 10_000, interval: 50, detail: () => `rss ${grown >> 20} MiB` });
    await waitFor(() => process.memoryUsage.rss() < grown - (mib - 2) * 1024 * 1024, { what: 'the buffers to leave the resident set', timeout: 5_000, interval: 20, detail: () => `rss ${grown >> 20} → ${process.memoryUsage.rss() >> 20} MiB` });
  });
}

test('garbage dropped after a collection is collected too, though memory outside the heap still counted what that collection freed', async (t) => {
  // A collection frees buffers, but `external` counts them until a later collection finishes
  // sweeping them: read right after it, the baseline was as high as the garbage just collected,
  // and the next 6 MiB of garbage (the last blocks of a read, after a collection in the pause
  // between two) stayed below it.
  await settledExternal();
  const stop = startIdleCollector({ intervalMs: 100, youngRestBytes: Infinity });
  t.after(stop);
  for (const [round, mib] of [[1, 12], [2, 6]] as const) {
    const runs0 = idleCollectorStats.collections;
    let keep: Buffer[] | undefined = [];
    for (let i = 0; i < mib; i++) keep.push(Buffer.allocUnsafeSlow(1024 * 1024).fill(i + 1));
    assert.equal(keep.length, mib);
    keep = undefined;
    const m = process.memoryUsage();
    await waitFor(() => idleCollectorStats.collections > runs0, {
      what: `collection ${round}, after ${mib} MiB of dropped buffers`,
      timeout: 5_000,
      interval: 50,
      detail: () => `external ${m.external >> 20} → ${process.memoryUsage().external >> 20} MiB, array buffers ${m.arrayBuffers >> 20} → ${process.memoryUsage().arrayBuffers >> 20} MiB`,
    });
    // The next garbage comes after a quiet look, as a server's next work does: not within the
    // 20 ms after the collection in which its baselines are read once the sweep is done (garbage
    // made in those ms counts as rest; an idle server is not working then).
    const looks = idleCollectorStats.looks;
    await waitFor(() => idleCollectorStats.looks > looks, { what: 'a look after the collection', timeout: 5_000, interval: 20 });
  }
});

test('a quiet server whose young generation is already at rest still gets one full collection after work that grew the resident set by a few MiB', async (t) => {
  await settledExternal();
  // The 16 MiB rule out of reach, and every young generation "at rest": only the settling collection can run.
  const stop = startIdleCollector({ intervalMs: 100, growthBytes: 1024 * 1024 * 1024, externalGrowthBytes: 1024 * 1024 * 1024, youngRestBytes: 1024 * 1024 * 1024, cHeap: null });
  t.after(stop);
  // Quiet looks first, so that the baseline is this process at rest.
  const looks0 = idleCollectorStats.looks;
  await waitFor(() => idleCollectorStats.looks >= looks0 + 3, { what: 'three looks', timeout: 5_000, interval: 20 });
  const runs0 = idleCollectorStats.collections;
  // ~8 MiB of strings in the old generation (they outlive young collections), then garbage.
  let keep: string[] | undefined = [];
  for (let i = 0; i < 8; i++) keep.push(Buffer.alloc(1024 * 1024, 97 + i).toString('latin1') + String(i));
  exposedGc()?.({ type: 'minor' });
  exposedGc()?.({ type: 'minor' });
  assert.equal(keep.length, 8);
  keep = undefined;
  await waitFor(() => idleCollectorStats.collections > runs0, { what: 'the settling collection', timeout: 5_000, interval: 50 });
  const runs1 = idleCollectorStats.collections;
  // Once per quiet stretch: five more quiet looks, and no second collection.
  const looks1 = idleCollectorStats.looks;
  await waitFor(() => idleCollectorStats.looks >= looks1 + 5, { what: 'five more looks', timeout: 5_000, interval: 20 });
  assert.equal(idleCollectorStats.collections, runs1);
});

test("a large upload's end gives the young generation back once the loop has been quiet for 200 ms, without waiting for the looks", async (t) => {
  // Looks a minute apart: only the upload's end can release within this test. Quiet below 50 %:
  // the window is 200 ms, and a loaded machine stretches what little this process does in it.
  const stop = startIdleCollector({ intervalMs: 60_000, idleUtilization: 0.5 });
  t.after(stop);
  const rest = 2 * 1024 * 1024;
  const releases0 = idleCollectorStats.youngReleases;
  youngBurst();
  const grown = youngGenerationBytes();
  assert.ok(grown > 4 * rest, `the burst grew the young generation (${grown >> 20} MiB)`);
  const ended = performance.now();
  uploadEnded(LARGE_UPLOAD_BYTES);
  await waitFor(() => youngGenerationBytes() <= rest, {
    what: 'the young generation back at its size at rest',
    timeout: 5_000,
    interval: 20,
    detail: () => `${grown >> 20} -> ${youngGenerationBytes() >> 20} MiB, releases ${idleCollectorStats.youngReleases - releases0}`,
  });
  assert.equal(idleCollectorStats.youngReleases, releases0 + 1);
  assert.ok(performance.now() - ended >= 190, 'not before the loop had been quiet for 200 ms');
});

test('an upload below the threshold, or one whose end the loop is busy after, releases nothing early', async (t) => {
  const stop = startIdleCollector({ intervalMs: 60_000, idleUtilization: 0.5 });
  t.after(stop);
  const releases0 = idleCollectorStats.youngReleases;
  const ends0 = idleCollectorStats.uploadEnds;
  const checks0 = idleCollectorStats.uploadChecks;
  youngBurst();
  const grown = youngGenerationBytes();
  uploadEnded(LARGE_UPLOAD_BYTES - 1);
  assert.equal(idleCollectorStats.uploadEnds, ends0, 'a smaller upload leaves it to the looks');
  // Busy for 400 ms after a large upload's end (the next upload, other work): left to the looks.
  uploadEnded(LARGE_UPLOAD_BYTES);
  assert.equal(idleCollectorStats.uploadEnds, ends0 + 1);
  await busyFor(400);
  await waitFor(() => idleCollectorStats.uploadChecks > checks0, { what: "the upload end's check", timeout: 5_000, interval: 10 });
  assert.equal(idleCollectorStats.youngReleases, releases0, 'no release while the loop was busy');
  assert.ok(youngGenerationBytes() > 2 * 1024 * 1024, `the young generation as the burst left it (${grown >> 20} -> ${youngGenerationBytes() >> 20} MiB)`);
});

test('a stopped collector (and a process that never started one: the extension host) releases nothing at an upload end', async () => {
  const stop = startIdleCollector({ intervalMs: 60_000, youngRestBytes: 0 });
  stop();
  const ends0 = idleCollectorStats.uploadEnds;
  uploadEnded(LARGE_UPLOAD_BYTES);
  assert.equal(idleCollectorStats.uploadEnds, ends0, 'no check scheduled');
});
