// Turns raw per-target samples into the result document (JSON), the console table and
// the goal verdicts. Ratios are ours/reference on the raw values; "speedup" is the same
// ratio turned so that > 1 always means ours is better.
import { median, percentile } from './stats';
import type { BenchConfig, MetricDef } from './scenarios';

export type TargetName = 'ours' | 'reference' | 'inProcess' | 'bareWs' | 'barePipe';
export const TARGETS: TargetName[] = ['ours', 'reference', 'inProcess', 'bareWs', 'barePipe'];

export interface Outcome {
  status: 'ok' | 'stalled' | 'error' | 'n/a';
  value: number | null;
  detail?: string;
  samples: number;
}

export interface MetricResult extends MetricDef {
  ours: Outcome;
  reference: Outcome;
  inProcess: Outcome;
  /**
   * Ceilings of the stream scenario (bench/bare-clients.ts): a plain `ws` server+client with one
   * binary message per pipe read, and a Node process reading the producer's pipe and discarding it.
   */
  bareWs?: Outcome;
  barePipe?: Outcome;
  /** ours / reference on the raw values. */
  ratio: number | null;
  /** > 1 means ours is better. */
  speedup: number | null;
  goal?: { text: string; met: boolean };
}

/** Server process CPU time per round of a scenario: efficiency that survives a noisy machine. */
export interface ServerCpu {
  scenario: string;
  title: string;
  oursMs: number | null;
  referenceMs: number | null;
  /** Resident memory after the scenario (MiB). */
  oursRssMiB?: number | null;
  referenceRssMiB?: number | null;
  /** Resident memory 5 s after the scenario's last round (MiB): what stays held once the work is done. */
  oursRssLaterMiB?: number | null;
  referenceRssLaterMiB?: number | null;
  /** bench/bare-ws-server.mjs, when the scenario measured the bare ceilings. */
  bareWsMs?: number | null;
}

export interface BenchResult {
  date: string;
  machine: { nproc: number; cpu: string; node: string; platform: string };
  command: string;
  config: BenchConfig;
  clients: { websocket: string; inProcess: string };
  durationSeconds: number;
  metrics: MetricResult[];
  serverCpu?: ServerCpu[];
}

export function outcome(samples: number[], m: MetricDef, failure?: { status: 'stalled' | 'error'; detail: string }): Outcome {
  if (failure) return { status: failure.status, value: null, detail: failure.detail, samples: samples.length };
  if (samples.length === 0) return { status: 'n/a', value: null, samples: 0 };
  const value = m.reduce === 'p99' ? percentile(samples, 99) : m.reduce === 'p50' ? percentile(samples, 50) : median(samples);
  return { status: 'ok', value, samples: samples.length };
}

export function judge(m: MetricDef, ours: Outcome, reference: Outcome, inProcess: Outcome, bare?: { bareWs: Outcome; barePipe: Outcome }): MetricResult {
  const ok = (o: Outcome) => o.status === 'ok' && o.value !== null;
  const ratio = ok(ours) && ok(reference) ? ours.value! / reference.value! : null;
  const speedup = ratio === null ? null : m.better === 'lower' ? 1 / ratio : ratio;
  const r: MetricResult = { ...m, ours, reference, inProcess, ...bare, ratio, speedup };
  const parts: string[] = [];
  let met = true;
  if (m.minSpeedup !== undefined) {
    parts.push(m.minSpeedup === 1 ? '≥ reference' : `≥${m.minSpeedup}× reference`);
    // A stalled/failed reference counts as beaten by a run of ours that completed.
    if (!ok(ours) || reference.status === 'n/a') met = false;
    else if (ok(reference)) met &&= speedup! >= m.minSpeedup;
  }
  if (m.inProcessMax !== undefined) {
    parts.push(`in-process ≤ ${m.inProcessMax} ${m.unit}`);
    met &&= ok(inProcess) && inProcess.value! <= m.inProcessMax;
  }
  if (m.inProcessMin !== undefined) {
    parts.push(`in-process ≥ ${m.inProcessMin} ${m.unit}`);
    met &&= ok(inProcess) && inProcess.value! >= m.inProcessMin;
  }
  if (parts.length) r.goal = { text: parts.join(', '), met };
  return r;
}

function fmtNum(v: number): string {
  if (v >= 1000) return Math.round(v).toLocaleString('en-US');
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

export function fmtOutcome(o: Outcome, unit: string): string {
  if (o.status === 'ok' && o.value !== null) return `${fmtNum(o.value)} ${unit}`;
  return o.status === 'n/a' ? '—' : o.status;
}

const fmtRatio = (x: number | null) => (x === null ? '—' : `${x.toFixed(2)}`);
const fmtSpeedup = (x: number | null) => (x === null ? '—' : `${x.toFixed(2)}×`);

/** Rows for both the console and docs/performance.md (markdown). */
export function tableRows(result: BenchResult): string[][] {
  // The ceiling columns only when a scenario measured them (stdout streaming).
  const bare = result.metrics.some((m) => m.bareWs || m.barePipe);
  const head = ['metric', 'ours (ws)', 'reference (ws)', 'ours/ref', 'ours better by', 'in-process', ...(bare ? ['bare ws', 'bare pipe'] : []), 'goal', 'met'];
  const none: Outcome = { status: 'n/a', value: null, samples: 0 };
  const rows = result.metrics.map((m) => [
    m.label,
    fmtOutcome(m.ours, m.unit),
    fmtOutcome(m.reference, m.unit),
    fmtRatio(m.ratio),
    fmtSpeedup(m.speedup),
    fmtOutcome(m.inProcess, m.unit),
    ...(bare ? [fmtOutcome(m.bareWs ?? none, m.unit), fmtOutcome(m.barePipe ?? none, m.unit)] : []),
    m.goal?.text ?? '',
    m.goal ? (m.goal.met ? 'yes' : 'NO') : '',
  ]);
  return [head, ...rows];
}

export function consoleTable(rows: string[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => [...r[c]].length)));
  const line = (r: string[]) => r.map((cell, c) => cell + ' '.repeat(widths[c] - [...cell].length)).join('  ');
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

export function markdownTable(rows: string[][]): string {
  const line = (r: string[]) => `| ${r.join(' | ')} |`;
  return [line(rows[0]), line(rows[0].map(() => '---')), ...rows.slice(1).map(line)].join('\n');
}

export function failures(result: BenchResult): string[] {
  const out: string[] = [];
  for (const m of result.metrics) {
    for (const t of TARGETS) {
      const o = m[t];
      if (!o) continue;
      if ((o.status === 'error' || o.status === 'stalled') && o.detail) out.push(`${m.label} / ${t}: ${o.status}: ${o.detail}`);
    }
  }
  return [...new Set(out)];
}

function ratio(a: number | null | undefined, b: number | null | undefined): string {
  return typeof a === 'number' && typeof b === 'number' && b > 0 && !Number.isNaN(a) ? (a / b).toFixed(2) : '—';
}

export function cpuRows(result: BenchResult): string[][] {
  const f = (v: number | null) => (v === null ? '—' : `${v.toFixed(0)} ms`);
  const mib = (v: number | null | undefined) => (v === null || v === undefined || Number.isNaN(v) ? '—' : `${v.toFixed(0)} MiB`);
  const bare = (result.serverCpu ?? []).some((c) => c.bareWsMs !== undefined && c.bareWsMs !== null);
  const rows = (result.serverCpu ?? []).map((c) => [
    c.title,
    f(c.oursMs),
    f(c.referenceMs),
    c.oursMs !== null && c.referenceMs !== null && c.referenceMs > 0 ? (c.oursMs / c.referenceMs).toFixed(2) : '—',
    ...(bare ? [f(c.bareWsMs ?? null)] : []),
    mib(c.oursRssMiB),
    mib(c.referenceRssMiB),
    ratio(c.oursRssMiB, c.referenceRssMiB),
    mib(c.oursRssLaterMiB),
    mib(c.referenceRssLaterMiB),
  ]);
  return [['server CPU time per round (user+sys, /proc)', 'ours', 'reference', 'ours/ref', ...(bare ? ['bare ws'] : []), 'ours RSS after', 'ref RSS after', 'RSS ours/ref', 'ours RSS 5 s later', 'ref RSS 5 s later'], ...rows];
}
