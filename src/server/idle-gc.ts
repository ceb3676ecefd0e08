// Gives memory back after a burst of work. V8 collects when it allocates, so a server that
// answered a 100 MiB fs/readFile (the file's Buffer, its base64 string, the frame) or streamed
// output and then went quiet kept all of it resident: nothing allocated any more, so nothing
// was collected (measured: 400–500 MiB RSS for as long as the server idled). Once a second this
// looks at the event loop: when the last second was idle and the resident set is 16 MiB or more
// above what it was after the previous collection (or memory outside the heap 4 MiB), it runs one
// full collection. Busy servers are left
// alone (V8's own scheduling is better there), and an idle one is checked, not collected.
// V8 also keeps its young generation at the size a burst grew it to (up to 32 MiB from 1–4 MiB)
// until a collection finds the allocation rate low, and it judges that rate over its last ten
// collections or 5 s: left to itself an idle server shrinks it ~6 s after the work, and
// every young collection of the burst still counts against it. So after a full collection and
// one more quiet look, the collector runs ten young collections of the near-empty young
// generation (each a record of almost no allocation, which pushes the burst's records out) and
// a full one, in which V8 shrinks it (docs/performance.md, memory): once the loop has been quiet
// for three looks, not sooner, as a burst that follows pays for growing it again. The end of a
// large upload is the exception (uploadEnded): its release comes once the loop has been quiet for
// 200 ms, as an upload's regrowth costs little.
// The C heap is trimmed on every look, busy or not (./c-heap.ts: glibc otherwise keeps what V8's
// compiler threads and large blocks freed; a trim costs 5-110 us here). Its cap on arenas is set
// by the CLI's first module (../cli/heap-first.ts), before the threads it bounds get theirs.
// What starting took is given back once, when the CLI has announced its listener
// (releaseStartHeap; measured: RSS right after the bench's round trips ~2.5 MiB lower).
// Only for a process that is a server of its own (the CLI); the VS Code extension host has
// other tenants and its own memory policy.
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { cHeap, type CHeap } from './c-heap';
import { dropFreeBlocks } from './process/read-blocks';
import { onLargeUploadEnded } from './upload-end';

export interface IdleCollectorOptions {
  /** How often to look (ms). */
  intervalMs?: number;
  /** Event-loop utilization below which the last interval counts as idle. */
  idleUtilization?: number;
  /** Growth of the resident set since the last collection that is worth a collection (bytes). */
  growthBytes?: number;
  /** Growth of memory outside V8's heap (`external`: array buffers) since the last collection that is worth one (bytes). */
  externalGrowthBytes?: number;
  /** The young generation's committed size at rest (bytes): above it, a quiet server gives the rest back. */
  youngRestBytes?: number;
  /** The C heap's controls (default: the native module's, when built; null: none). */
  cHeap?: CHeap | null;
}

/**
 * Collections the idle collector ran (tests: that it runs when idle, and not while busy); large
 * uploads' ends it heard of, and their quiet checks done (whatever they decided).
 */
export const idleCollectorStats = { looks: 0, collections: 0, youngReleases: 0, trims: 0, uploadEnds: 0, uploadChecks: 0 };

/** Committed bytes of V8's young generation (new space). */
export function youngGenerationBytes(): number {
  for (const s of v8.getHeapSpaceStatistics()) if (s.space_name === 'new_space') return s.space_size;
  return 0;
}

/** V8's collector from --expose-gc: a full collection, or a young one with `{ type: 'minor' }`. */
type Gc = (options?: { type: 'minor' }) => void;

/** After a full collection, when what it freed has left the array buffers' count (ms). */
const SWEPT_MS = 20;

/**
 * Growth of the resident set since the last collection (or the start's release) after which a
 * quiet server with a young generation at rest runs one full collection: below the 16 MiB that
 * make a collection worth it at any look, as it runs only once per quiet stretch.
 */
const SETTLE_BYTES = 4 * 1024 * 1024;

/** Young collections that fill V8's record of recent collections (ten entries in V8 11). */
const YOUNG_RECORDS = 10;

/**
 * Quiet looks in a row before the young generation is given back. A burst after a release pays
 * for growing it again (promotions while it is small): released after two looks, the bench's
 * JSON stream, whose rounds come ~2 s apart, took 388 ms of server CPU a round against 327
 * without the release (one run each, load ~11). Three still give it back before the bench's
 * 5 s sample. Half a second after any burst that kept the loop busy for a whole look was tried
 * too and taken back: fs/writeBlock's RSS right after went from 1.3 to 0.95 of the reference, but
 * the bursts that followed such releases paid for growing it again (docs/performance.md).
 */
const RELEASE_AFTER_LOOKS = 3;

/**
 * An upload of at least LARGE_UPLOAD_BYTES (./upload-end.ts: a replace stream's blocks, fs/open +
 * fs/writeBlock + fs/close) asks, when it ends, for the young generation back as soon as the loop
 * is quiet, not three looks later: such a stream grows it to 16 MiB (64 blocks of 64 KiB in flight
 * survive V8's young collections and it grows by what survives), and the server held ~16 MiB more
 * than it needed for the seconds until the looks' release (the bench's fs/writeBlock: 72-77 MiB
 * right after against the reference's 57-61). A stream's few survivors per block make its
 * regrowth cheap, unlike the bursts of output and requests for which the looks wait
 * (RELEASE_AFTER_LOOKS). This is how long the loop must have been quiet after the end (ms).
 */
const UPLOAD_QUIET_MS = 200;

/** The collector, or undefined when this runtime does not give one. */
export function exposedGc(): Gc | undefined {
  const existing = (globalThis as { gc?: Gc }).gc;
  if (typeof existing === 'function') return existing;
  try {
    // --expose-gc takes effect for contexts created afterwards: a new context's `gc` is the
    // collector of the whole isolate. The main context's globals are left as they were.
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as unknown;
    return typeof gc === 'function' ? (gc as Gc) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The young generation shrunk to its least, whatever V8 makes of the recent allocation rate:
 * Node's low-memory notification (./c-heap.ts). A minor collection first: V8 counts what
 * survived since it last grew the young generation, a release leaves that count, and with it
 * still above the new size the next collection would grow it straight back. False where the
 * native module has no notification to call.
 */
function releaseByNotification(heap: CHeap | undefined, gc: Gc | undefined): boolean {
  if (!heap?.lowMemory) return false;
  gc?.({ type: 'minor' });
  return heap.lowMemory();
}

/**
 * Gives back, once and at once, what starting took: V8 grows its young generation from 1 to 4
 * MiB while the bundle loads (the modules' objects survive its first young collections), and a
 * server kept it through its first clients' work, as no quiet look had come yet. ~20-40 ms, so
 * the CLI calls it once its listener is announced. False where the native module is missing.
 */
export function releaseStartHeap(): boolean {
  return releaseByNotification(cHeap(), exposedGc());
}

/** Starts the idle collector; returns its stop function (a no-op when no collector is available). */
export function startIdleCollector(o: IdleCollectorOptions = {}): () => void {
  const heap = o.cHeap === undefined ? cHeap() : (o.cHeap ?? undefined);
  const gc = exposedGc();
  if (!gc && !heap) return () => {};
  const intervalMs = o.intervalMs ?? 1000;
  const idleUtilization = o.idleUtilization ?? 0.05;
  const growth = o.growthBytes ?? 16 * 1024 * 1024;
  // Memory outside the heap is collected at less: 15 fs/readBlock answers of 1 MiB, garbage once
  // sent, stayed below the 16 MiB of RSS until something allocated again. Not all growth at 8 MiB:
  // a server with telemetry on crossed it with heap it still used and collected in idle seconds
  // between the bench's windows; the few per cent of CPU per request that seemed to cost were
  // later found inside the spread between identical servers (docs/performance.md, telemetry).
  // At 8 MiB, the last six or seven 1 MiB blocks of a read (what the collector had not reached
  // when it ended) stayed, and the server idled 9–12 MiB above its rest; with the ~4 MiB of code
  // pages the optimizing compiler leaves, about 4 remain for garbage within 10 of rest.
  const externalGrowth = o.externalGrowthBytes ?? 4 * 1024 * 1024;
  // V8 11 shrinks the young generation back to 1–2 MiB. Not 1: a client's few thousand
  // sequential requests leave it at 2 MiB, and given back, the next burst paid for growing it
  // again (the bench's 500 pipelined requests at half their rate, for 2–3 MiB of RSS:
  // docs/performance.md, "Memory after the work: the idle collector").
  const youngRest = o.youngRestBytes ?? 2 * 1024 * 1024;
  // What the resident set and the memory outside the heap were after the last collection (or lower since).
  // `arrayBuffers` too: `external` counts the buffers a collection freed until a later one
  // finishes sweeping them (seconds, in an idle server), so a baseline read after a collection
  // was as high as the garbage just collected; the array buffers' count drops within ms.
  let { rss: baseline, external: externalBaseline, arrayBuffers: buffersBaseline } = process.memoryUsage();
  let last = performance.eventLoopUtilization();
  // Quiet looks in a row, and whether a full collection ran among them (the release follows one).
  let quietLooks = 0;
  let collected = false;
  // The release was tried in this quiet stretch: once (if V8 keeps the space, it stays kept).
  let youngTried = false;
  const lowerBaselines = (m: NodeJS.MemoryUsage) => {
    if (m.rss < baseline) baseline = m.rss;
    if (m.external < externalBaseline) externalBaseline = m.external;
    if (m.arrayBuffers < buffersBaseline) buffersBaseline = m.arrayBuffers;
  };
  const full = (gc: Gc) => {
    gc();
    idleCollectorStats.collections++;
    ({ rss: baseline, external: externalBaseline, arrayBuffers: buffersBaseline } = process.memoryUsage());
    collected = true;
    // What a collection frees leaves the counts only once swept: the array buffers within a few
    // ms (read right after it, the baseline held the garbage just collected, and 5 MiB of the
    // next round of a read stayed below it), `external` not before the next collection.
    setTimeout(() => lowerBaselines(process.memoryUsage()), SWEPT_MS).unref();
  };
  const timer = setInterval(() => {
    idleCollectorStats.looks++;
    if (gc) look(gc);
    if (heap) {
      heap.trim();
      idleCollectorStats.trims++;
    }
    // The next window starts after this look's own collections: a full one takes 30-60 ms here,
    // which made the next second "busy" (> 5 %) and put the release off by a look each time.
    last = performance.eventLoopUtilization();
  }, intervalMs);
  const look = (gc: Gc) => {
    const utilization = performance.eventLoopUtilization(performance.eventLoopUtilization(), last).utilization;
    if (utilization >= idleUtilization) {
      quietLooks = 0;
      collected = false;
      youngTried = false;
      return;
    }
    quietLooks++;
    // Lowered at quiet looks only: a busy one's reading may hold the garbage of the work going on.
    const m = process.memoryUsage();
    lowerBaselines(m);
    if (m.rss - baseline >= growth || m.external - externalBaseline >= externalGrowth || m.arrayBuffers - buffersBaseline >= externalGrowth) {
      // The read blocks kept for reuse (up to 16 MiB) go too: an idle server is not streaming.
      dropFreeBlocks();
      full(gc);
      return;
    }
    if (youngTried || quietLooks < RELEASE_AFTER_LOOKS - 1) return;
    if (youngGenerationBytes() <= youngRest) {
      // The young generation is at rest already (the start's release; work that never grew it):
      // one full collection still gives back what the work left in the old generation.
      if (!collected && m.rss - baseline >= SETTLE_BYTES) full(gc);
      return;
    }
    // First a full collection, then, a quiet look later, the release (measured on Node 20: the
    // release right after the burst, without that full collection between, left the space as it was).
    if (!collected) return full(gc);
    if (quietLooks < RELEASE_AFTER_LOOKS) return;
    youngTried = true;
    // Quiet for three looks: the free read blocks go as well (mapped, so their pages with them).
    releaseYoung(gc);
  };
  const releaseYoung = (gc: Gc) => {
    dropFreeBlocks();
    // The notification's collections compact the old generation too (measured after 16 000
    // requests and 64 processes: 53.4-53.5 MiB 5 s later, against 54.1-54.9 with the young
    // collections and the full one below, what a Node without the module gets).
    if (!releaseByNotification(heap, gc)) {
      for (let i = 0; i < YOUNG_RECORDS; i++) gc({ type: 'minor' });
      gc();
    }
    idleCollectorStats.youngReleases++;
    baseline = Math.min(baseline, process.memoryUsage.rss());
  };
  // A large upload ended: once the loop has been quiet for UPLOAD_QUIET_MS, the young generation
  // goes back at once (its stream's read slabs with it). A loop busy then (the next upload, other
  // work) is left to the looks.
  let uploadCheck: NodeJS.Timeout | undefined;
  const uploadCheckLater = () => {
    if (uploadCheck || !gc) return;
    idleCollectorStats.uploadEnds++;
    const from = performance.eventLoopUtilization();
    uploadCheck = setTimeout(() => {
      uploadCheck = undefined;
      idleCollectorStats.uploadChecks++;
      if (performance.eventLoopUtilization(performance.eventLoopUtilization(), from).utilization >= idleUtilization) return;
      if (youngGenerationBytes() <= youngRest) return;
      releaseYoung(gc);
      // As after a look's own collections: the next look's window starts after this release's.
      last = performance.eventLoopUtilization();
    }, UPLOAD_QUIET_MS);
    uploadCheck.unref();
  };
  const stopUploads = onLargeUploadEnded(uploadCheckLater);
  timer.unref();
  return () => {
    clearInterval(timer);
    if (uploadCheck) clearTimeout(uploadCheck);
    stopUploads();
  };
}
