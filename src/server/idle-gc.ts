// Gives memory back after a burst of work. V8 collects when it allocates, so a server that
// answered a 100 MiB fs/readFile (the file's Buffer, its base64 string, the frame) or streamed
// output and then went quiet kept all of it resident: nothing allocated any more, so nothing
// was collected (measured: 400–500 MiB RSS for as long as the server idled). Once a second this
// looks at the event loop: when the last second was idle and the resident set is well above
// what it was after the previous collection, it runs one full collection. Busy servers are left
// alone (V8's own scheduling is better there), and an idle one is checked, not collected.
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
}

/** Collections the idle collector ran (tests: that it runs when idle, and not while busy). */
export const idleCollectorStats = { collections: 0 };

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
  let baseline = process.memoryUsage.rss();
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    const rss = process.memoryUsage.rss();
    if (rss < baseline) baseline = rss;
    if (utilization >= idleUtilization || rss - baseline < growth) return;
    // The read blocks kept for reuse (up to 16 MiB) go too: an idle server is not streaming.
    dropFreeBlocks();
    gc();
    idleCollectorStats.collections++;
    baseline = process.memoryUsage.rss();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
