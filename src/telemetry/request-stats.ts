// Per-method request statistics kept in memory, without any collector: counts, errors and
// latency percentiles from a log-scale histogram (fixed memory: at most one histogram per
// protocol method + `other`, each a fixed array). The extension's "Show Request Statistics"
// renders them per environment; as a ClientTelemetry it observes every request a client sends.
import { performance } from 'node:perf_hooks';
import type { CallError, ClientCall, ClientTelemetry } from './api';
import { methodLabel } from './methods';

/** Bucket growth factor: a percentile is reported within ~5% of the true value. */
const GROWTH = 1.1;
const MIN_MS = 0.001;
const BUCKETS = Math.ceil(Math.log(3_600_000 / MIN_MS) / Math.log(GROWTH)) + 1;

export interface MethodStats {
  method: string;
  count: number;
  errors: number;
  meanMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

class LatencyHistogram {
  private readonly counts = new Uint32Array(BUCKETS);
  count = 0;
  errors = 0;
  sumMs = 0;
  maxMs = 0;

  record(ms: number, failed: boolean): void {
    const v = Math.max(ms, MIN_MS);
    const i = Math.min(BUCKETS - 1, Math.floor(Math.log(v / MIN_MS) / Math.log(GROWTH)));
    this.counts[i]++;
    this.count++;
    if (failed) this.errors++;
    this.sumMs += ms;
    if (ms > this.maxMs) this.maxMs = ms;
  }

  /** The upper bound of the bucket holding the q-quantile (capped at the maximum seen). */
  quantile(q: number): number {
    if (this.count === 0) return 0;
    const rank = Math.ceil(q * this.count);
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i];
      if (seen >= rank) return Math.min(MIN_MS * GROWTH ** (i + 1), this.maxMs);
    }
    return this.maxMs;
  }
}

export class RequestStats implements ClientTelemetry {
  private readonly methods = new Map<string, LatencyHistogram>();
  /** When the statistics started (or were last reset). */
  since = Date.now();

  constructor(private readonly now: () => number = () => performance.now()) {}

  call(method: string): ClientCall {
    const t0 = this.now();
    let done = false;
    return {
      end: (error?: CallError) => {
        if (done) return;
        done = true;
        this.record(method, this.now() - t0, error !== undefined);
      },
    };
  }

  record(method: string, ms: number, failed: boolean): void {
    const label = methodLabel(method);
    let h = this.methods.get(label);
    if (!h) this.methods.set(label, (h = new LatencyHistogram()));
    h.record(ms, failed);
  }

  /** One row per method seen, most requested first. */
  snapshot(): MethodStats[] {
    return [...this.methods.entries()]
      .map(([method, h]) => ({
        method,
        count: h.count,
        errors: h.errors,
        meanMs: h.sumMs / h.count,
        p50Ms: h.quantile(0.5),
        p90Ms: h.quantile(0.9),
        p99Ms: h.quantile(0.99),
        maxMs: h.maxMs,
      }))
      .sort((a, b) => b.count - a.count || a.method.localeCompare(b.method));
  }

  reset(): void {
    this.methods.clear();
    this.since = Date.now();
  }
}

const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(1) : ms.toFixed(3));

/** A plain-text table (the extension's output channel). */
export function formatStats(title: string, rows: MethodStats[]): string {
  const head = ['method', 'count', 'errors', 'mean ms', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'];
  const body = rows.map((r) => [r.method, String(r.count), String(r.errors), fmt(r.meanMs), fmt(r.p50Ms), fmt(r.p90Ms), fmt(r.p99Ms), fmt(r.maxMs)]);
  if (body.length === 0) return `${title}\n  (no requests yet)\n`;
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => '  ' + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [title, line(head), ...body.map(line), ''].join('\n');
}
