// Gives memory back after a burst of work. V8 collects when it allocates, so a server that
// answered a 100 MiB fs/readFile (the file's Buffer, its base64 string, the frame) or streamed
// output and then went quiet kept all of it resident: nothing allocated any more, so nothing
// was collected (measured: 400–500 MiB RSS for as long as the server idled). Once a second this
// looks at the event loop: when the last second was idle and the resident set is well above
// what it was after the previous collection, it runs one full collection. Busy servers are left
// alone (V8's own scheduling is better there), and an idle one is checked, not collected.
// V8 keeps its young generation at the size the burst grew it to (16 MiB here after a stream,
// from 4 MiB at start) until a collection finds the allocation rate of the last ~5 s low: so
// when the server stays idle for that long, one more collection gives that back too.
// Only for a process that is a server of its own (the CLI); the VS Code extension host has
// other tenants and its own memory policy.
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { dropFreeBlocks } from './process/read-blocks';

export interface IdleCollectorOptions {
  /** How often to look (ms). */
  intervalMs?: number;
  /** Event-loop utilization below which the last interval counts as idle. */
  idleUtilization?: number;
  /** Growth of the resident set since the last collection that is worth a collection (bytes). */
  growthBytes?: number;
  /**
   * Idle time after which one more collection lets V8 shrink a grown young generation (ms).
   * V8 shrinks it in a collection when the allocation rate it measured over the last 5 s is low,
   * so this is a little over 5 s of quiet since the last collection.
   */
  youngReleaseMs?: number;
}

/** Collections the idle collector ran (tests: that it runs when idle, and not while busy). */
export const idleCollectorStats = { collections: 0, youngReleases: 0 };

/** Committed bytes of V8's young generation (new space). */
export function youngGenerationBytes(): number {
  for (const s of v8.getHeapSpaceStatistics()) if (s.space_name === 'new_space') return s.space_size;
  return 0;
}

/** A full-collection function, or undefined when this runtime does not give one. */
function fullGc(): (() => void) | undefined {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (typeof existing === 'function') return existing;
  try {
    // --expose-gc takes effect for contexts created afterwards: a new context's `gc` is the
    // collector of the whole isolate. The main context's globals are left as they were.
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as unknown;
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}

/** Starts the idle collector; returns its stop function (a no-op when no collector is available). */
export function startIdleCollector(o: IdleCollectorOptions = {}): () => void {
  const gc = fullGc();
  if (!gc) return () => {};
  const intervalMs = o.intervalMs ?? 1000;
  const idleUtilization = o.idleUtilization ?? 0.05;
  const growth = o.growthBytes ?? 16 * 1024 * 1024;
  const youngAfter = o.youngReleaseMs ?? 5_500;
  let baseline = process.memoryUsage.rss();
  let last = performance.eventLoopUtilization();
  // The young generation's size at start: what a release brings it back to.
  const youngFloor = youngGenerationBytes();
  // Since when the loop has been quiet with nothing collected (a release waits for youngAfter of it).
  let quietSince = performance.now();
  // Releases tried in this quiet stretch: at most two (if V8 keeps the space, it stays kept).
  let youngTries = 0;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    const t = performance.now();
    if (utilization >= idleUtilization) {
      quietSince = t;
      youngTries = 0;
      return;
    }
    const rss = process.memoryUsage.rss();
    if (rss < baseline) baseline = rss;
    if (rss - baseline >= growth) {
      // The read blocks kept for reuse (up to 16 MiB) go too: an idle server is not streaming.
      dropFreeBlocks();
      gc();
      idleCollectorStats.collections++;
      baseline = process.memoryUsage.rss();
      quietSince = performance.now();
      return;
    }
    if (youngTries < 2 && t - quietSince >= youngAfter && youngGenerationBytes() > youngFloor) {
      youngTries++;
      gc();
      idleCollectorStats.youngReleases++;
      baseline = Math.min(baseline, process.memoryUsage.rss());
      quietSince = performance.now();
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
