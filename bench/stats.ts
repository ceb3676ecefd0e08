// Small statistics helpers for the benchmark (nearest-rank percentiles, medians).

export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export const median = (samples: number[]) => percentile(samples, 50);

/** Monotonic clock in milliseconds with sub-microsecond resolution. */
export const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

export const MiB = 1024 * 1024;
