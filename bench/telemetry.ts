// Telemetry overhead (`npm run bench`, scenario id `telemetry`): the same workloads against
// our CLI with telemetry off (the default), on (every request and process traced: parent-based
// sampling at 100 %, exported over OTLP/HTTP protobuf to a local sink, plus the Prometheus
// endpoint) and on with the sampler at 1 % (parentbased_traceidratio 0.01, metrics for every
// request), alternating which runs first each round. Optional `--telemetry-baseline=PATH`: a CLI build
// from before telemetry existed, to show that "off" costs nothing. The "on" server is checked
// to have really exported spans and counted every request (a silently broken exporter would
// look free).
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { NOOP_SERVER_TELEMETRY, type ServerTelemetry } from '../src/telemetry/api';
import { telemetryConfig, type TelemetryFlags } from '../src/telemetry/config';
import { startServerTelemetry } from '../src/telemetry/otel';
import type { BenchClient } from './bench-client';
import type { Fixtures } from './fixtures';
import type { BenchConfig } from './scenarios';
import { startServer, type ServerCommand, type ServerUnderTest } from './servers';
import { nowMs, percentile } from './stats';

type Mode = 'baseline' | 'off' | 'on' | 'on1';

export interface TelemetryRow {
  metric: string;
  unit: string;
  better: 'lower' | 'higher';
  baseline: number | null;
  off: number;
  on: number;
  /** On with the sampler at 1 %. */
  on1: number;
  /**
   * 90 % intervals of the costs (on vs off, 1 % vs off, as fractions: 0.03 = 3 % dearer), from
   * resampling the rounds: the per-process spread (±5 % of CPU between two identical servers
   * here) is larger than the goals, and the point estimate alone cannot say which side of a
   * goal a cost is on.
   */
  onCost: CostEstimate;
  on1Cost: CostEstimate;
}
export interface CostEstimate {
  cost: number;
  low: number;
  high: number;
}
export interface TelemetryBenchResult {
  rows: TelemetryRow[];
  /** Rounds run (each: every mode once, on a fresh server). */
  rounds: number;
  /** OTLP export requests (and bytes) the sink received from the "on" servers. */
  exportRequests: number;
  exportBytes: number;
  /** Requests the "on" servers' Prometheus endpoints counted, and requests sent to them. */
  requestsCounted: number;
  requestsSent: number;
  /** Requests sent to the "on" servers at 100 % (one span each, plus a process span per spawn), and spans they dropped (queue full; their shutdown log). */
  requestsSentOn: number;
  spansDropped: number;
  /** The hooks alone, in the benchmark's process: CPU ns per request (median of the blocks). */
  hookNs: { off: number; on: number; on1: number };
  /** Side by side (sideBySide): groups of fresh servers and slices per group, whether they ran pinned to a CPU, and the cost of a second "off" server against the first (the measure's own spread). */
  sideBySide?: { groups: number; slicesPerGroup: number; pinned: boolean; control: CostEstimate };
}

/**
 * An OTLP/HTTP sink in a process of its own: accepts export requests, counts them and their
 * bytes (GET /stats). In the benchmark's own process it answered an export only when the client
 * had taken in a whole pipelined burst, so the server's exports took ~100 ms each and most
 * spans of a burst were dropped as the queue filled: "on" looked cheaper than a server whose
 * collector keeps up.
 */
async function otlpSink(): Promise<{ url: string; stats: () => Promise<{ requests: number; bytes: number }>; close(): Promise<void> }> {
  const code = `
    let requests = 0, bytes = 0;
    const server = require('node:http').createServer((req, res) => {
      if (req.method === 'GET') return res.end(JSON.stringify({ requests, bytes }));
      req.on('data', (c) => (bytes += c.length));
      req.on('end', () => { requests++; res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end(); });
    });
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));
    process.stdin.on('end', () => process.exit(0)).resume();`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.setEncoding('utf8').once('data', (d: string) => resolve(Number(d.trim())));
    child.once('exit', (c) => reject(new Error(`the OTLP sink exited (${c})`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    stats: async () => (await (await fetch(`${url}/stats`)).json()) as { requests: number; bytes: number },
    close: () =>
      new Promise<void>((r) => {
        child.once('exit', () => r());
        child.stdin.end();
      }),
  };
}

/**
 * CPU time of every live thread of `pid` in ms, from /proc/<pid>/task/<tid>/schedstat (time on a
 * CPU in nanoseconds): /proc/<pid>/stat counts in 10 ms ticks, too coarse for a warmed server's
 * ~15 µs a request, and 1 % of a fresh server's window. The server's threads (V8's compiler and
 * collector helpers, libuv's pool) live as long as it does, so none is lost between readings.
 */
function threadCpuMs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return ns / 1e6;
}

/** The same server command run on one CPU (`taskset -c` execs the server: its pid is the one reported). */
function onCpu(c: ServerCommand, cpu: number): ServerCommand {
  return { ...c, command: 'taskset', args: ['-c', String(cpu), c.command, ...c.args] };
}

interface Samples {
  rttUs: number[];
  pipelinedPerSec: number[];
  spawnMs: number[];
  cpuMsPer1k: number[];
  /** The same measure once the server answered WARM_REQUESTS (the code of both modes optimized). */
  warmCpuMsPer1k: number[];
  /** Round trips (µs) of the 1000 sequential requests in that warmed measure. */
  warmRttUs: number[];
}

/** Requests a server has answered before the warmed CPU row is measured (a server that has run a while). */
const WARM_REQUESTS = 30_000;
/** Rounds of the telemetry table at least (each alternates off, 100 % and 1 %), whatever --rounds says. */
const TELEMETRY_MIN_ROUNDS = 9;

async function workload(client: BenchClient, pid: number, cfg: BenchConfig, fx: Fixtures, s: Samples): Promise<number> {
  let sent = 0;
  const rtt = cfg.quick ? 500 : 3000;
  for (let i = 0; i < Math.min(200, rtt); i++) await client.stat(fx.smallFile); // warm-up
  sent += Math.min(200, rtt);
  const cpu0 = threadCpuMs(pid);
  for (let i = 0; i < rtt; i++) {
    const t0 = nowMs();
    await client.stat(fx.smallFile);
    s.rttUs.push((nowMs() - t0) * 1000);
  }
  sent += rtt;
  const batch = 2000;
  for (let r = 0; r < (cfg.quick ? 2 : 5); r++) {
    const t0 = nowMs();
    await client.statPipelined(fx.smallFile, batch);
    s.pipelinedPerSec.push(batch / ((nowMs() - t0) / 1000));
    sent += batch;
  }
  s.cpuMsPer1k.push(((threadCpuMs(pid) - cpu0) / (sent - Math.min(200, rtt))) * 1000);
  // A fresh server's first requests also pay for compiling the code they run (V8's compiler
  // threads count in the process's CPU), more of it with telemetry on; the warmed row measures
  // the same mix again after WARM_REQUESTS, as a server that has been up a while pays it.
  if (!cfg.quick) {
    while (sent < WARM_REQUESTS) {
      await client.statPipelined(fx.smallFile, batch);
      sent += batch;
    }
    const cpu1 = threadCpuMs(pid);
    let measured = 0;
    for (let i = 0; i < 1000; i++) {
      const t0 = nowMs();
      await client.stat(fx.smallFile);
      s.warmRttUs.push((nowMs() - t0) * 1000);
    }
    measured += 1000;
    for (let r = 0; r < 10; r++) await client.statPipelined(fx.smallFile, batch);
    measured += 10 * batch;
    sent += measured;
    s.warmCpuMsPer1k.push(((threadCpuMs(pid) - cpu1) / measured) * 1000);
  }
  for (let i = 0; i < (cfg.quick ? 10 : 40); i++) {
    const t0 = nowMs();
    const code = await client.runToExit(['true'], fx.root);
    if (code !== 0) throw new Error(`true exited ${code}`);
    s.spawnMs.push(nowMs() - t0);
    sent++;
  }
  return sent;
}

/** Groups of the side-by-side measure: each starts its four servers afresh. */
const SIDE_BY_SIDE_GROUPS = 10;
/** Slices per group (each: every server of the group once, in a rotating order). */
const SIDE_BY_SIDE_SLICES = 6;
/** The side-by-side servers: "control" is a second "off" server. */
type SideBySideServer = 'off' | 'control' | 'on' | 'on1';
/** CPU ms per 1000 requests by server: group g's median slice at [g] (a group's servers ran side by side). */
type SideBySideSamples = Record<SideBySideServer, number[]>;

/**
 * Server CPU per 1000 requests of servers up at the same time: an "off", a second "off" (the
 * control), a 100 % and a 1 % server, each warmed with WARM_REQUESTS, then measured in slices
 * (1 000 sequential and 5 × 2 000 pipelined requests) that go round them in a rotating order.
 * Side by side: the rounds above start a fresh server per mode minutes apart, and this VM's speed
 * moves by more than the goals between them; slices taken back to back see the same machine.
 * In groups of fresh servers: a process keeps its own speed for its whole life, and two
 * identical "off" servers differed by −6 to +5 % (once −16 %) from one pair of processes to the
 * next, however many slices a pair ran (docs/performance.md, "The 1 % server over pairs of fresh
 * servers"). Where `taskset` and two CPUs are there, the servers run on the last CPU and this
 * process on the first: no server is moved between CPUs or shares one with its client.
 */
async function sideBySide(
  start: (mode: 'off' | 'on' | 'on1', cpu: number | undefined) => Promise<ServerUnderTest>,
  connect: (url: string) => Promise<BenchClient>,
  fx: Fixtures,
  log: (m: string) => void,
): Promise<{ per1k: SideBySideSamples; pinned: boolean }> {
  const names: readonly SideBySideServer[] = ['off', 'control', 'on', 'on1'];
  const per1k: SideBySideSamples = { off: [], control: [], on: [], on1: [] };
  const cpus = availableParallelism();
  const pinned = cpus >= 2 && spawnSync('taskset', ['-acp', '0', String(process.pid)], { stdio: 'ignore' }).status === 0;
  try {
    for (let g = 0; g < SIDE_BY_SIDE_GROUPS; g++) {
      const servers: ServerUnderTest[] = [];
      const clients: BenchClient[] = [];
      try {
        // Started in a rotating order too: no mode is always its group's first process.
        for (let k = 0; k < names.length; k++) {
          const i = (g + k) % names.length;
          servers[i] = await start(names[i] === 'control' ? 'off' : (names[i] as 'off' | 'on' | 'on1'), pinned ? cpus - 1 : undefined);
        }
        for (const s of servers) clients.push(await connect(s.url));
        const batch = 2000;
        for (const c of clients) for (let sent = 0; sent < WARM_REQUESTS; sent += batch) await c.statPipelined(fx.smallFile, batch);
        const slices: number[][] = names.map(() => []);
        for (let slice = 0; slice < SIDE_BY_SIDE_SLICES; slice++) {
          for (let k = 0; k < names.length; k++) {
            const i = (slice + k) % names.length;
            const cpu0 = threadCpuMs(servers[i].pid);
            for (let r = 0; r < 1000; r++) await clients[i].stat(fx.smallFile);
            for (let r = 0; r < 5; r++) await clients[i].statPipelined(fx.smallFile, batch);
            slices[i].push(((threadCpuMs(servers[i].pid) - cpu0) / (1000 + 5 * batch)) * 1000);
          }
        }
        names.forEach((n, i) => per1k[n].push(percentile(slices[i], 50)));
        log(`  telemetry side by side: group ${g + 1}/${SIDE_BY_SIDE_GROUPS} done`);
      } finally {
        for (const c of clients) await c.close().catch(() => undefined);
        for (const s of servers) if (s) await s.stop();
      }
    }
  } finally {
    if (pinned) spawnSync('taskset', ['-acp', `0-${cpus - 1}`, String(process.pid)], { stdio: 'ignore' });
  }
  return { per1k, pinned };
}

/** Requests per block of the hook measurement, and blocks per mode (alternating). */
const HOOK_REQUESTS = 100_000;
const HOOK_BLOCKS = 7;

/**
 * What the telemetry hooks themselves cost per request, measured in this process where the
 * servers' spread is not in the way: the server's own request()/end() pair (a span when sampled,
 * its export to the sink, the metric), as the RPC connection calls it, for each mode. The CPU is
 * the whole process's (the export's socket work included), in blocks that alternate between the
 * modes; every 500 requests the loop yields, so exports go out as they would between a server's
 * reads and no span is dropped for a full queue.
 */
async function hookCost(sinkUrl: string): Promise<{ off: number; on: number; on1: number }> {
  const flags = (sampler: TelemetryFlags): TelemetryFlags => ({ otlpEndpoint: sinkUrl, otlpProtocol: 'http/protobuf', prometheus: '127.0.0.1:0', ...sampler });
  const tel: Record<'off' | 'on' | 'on1', ServerTelemetry> = {
    off: NOOP_SERVER_TELEMETRY,
    on: await startServerTelemetry(telemetryConfig({}, flags({ sampler: 'parentbased_always_on' }))),
    on1: await startServerTelemetry(telemetryConfig({}, flags({ sampler: 'parentbased_traceidratio', samplerArg: '0.01' }))),
  };
  const ns: Record<'off' | 'on' | 'on1', number[]> = { off: [], on: [], on1: [] };
  let id = 0;
  try {
    for (let b = 0; b < HOOK_BLOCKS; b++) {
      for (const mode of b % 2 === 0 ? (['off', 'on', 'on1'] as const) : (['on1', 'on', 'off'] as const)) {
        const t = tel[mode];
        const c0 = process.cpuUsage();
        for (let i = 0; i < HOOK_REQUESTS; i++) {
          t.request('fs/getMetadata', ++id, undefined).end();
          if (i % 500 === 499) await new Promise((r) => setImmediate(r));
        }
        const c = process.cpuUsage(c0);
        ns[mode].push(((c.user + c.system) * 1000) / HOOK_REQUESTS);
      }
    }
  } finally {
    await tel.on.shutdown();
    await tel.on1.shutdown();
  }
  return { off: percentile(ns.off, 50), on: percentile(ns.on, 50), on1: percentile(ns.on1, 50) };
}

export async function telemetryOverhead(
  repo: string,
  cfg: BenchConfig,
  fx: Fixtures,
  connect: (url: string) => Promise<BenchClient>,
  /** nodeFlags: `--ours-node-flags` (e.g. --cpu-prof), given to every server of this table too. */
  opts: { baselineCli?: string; nodeFlags?: string[]; log: (m: string) => void },
): Promise<TelemetryBenchResult> {
  const sink = await otlpSink();
  const cli = path.join(repo, 'dist', 'cli.js');
  const command = (mode: Mode): ServerCommand => {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OTEL_')) env[k] = v;
    const base = ['--listen', 'ws://127.0.0.1:0'];
    const flags = opts.nodeFlags ?? [];
    if (mode === 'baseline') return { name: 'ours', command: process.execPath, args: [...flags, opts.baselineCli!, ...base], env };
    if (mode === 'off') return { name: 'ours', command: process.execPath, args: [...flags, cli, ...base], env };
    const sampling = mode === 'on' ? ['--trace-sampler', 'parentbased_always_on'] : ['--trace-sampler', 'parentbased_traceidratio', '--trace-sampler-arg', '0.01'];
    return {
      name: 'ours',
      command: process.execPath,
      args: [...flags, cli, ...base, '--otlp-endpoint', sink.url, '--otlp-protocol', 'http/protobuf', ...sampling, '--prometheus', '127.0.0.1:0'],
      env,
    };
  };
  const modes: Mode[] = opts.baselineCli ? ['baseline', 'off', 'on', 'on1'] : ['off', 'on', 'on1'];
  // The goals are a few per cent apart; with the bench's 3 rounds the load moved a column by more
  // than that (1 % dearer than 100 % in one run), with 9 two runs agreed within 1-2 points.
  const rounds = Math.max(cfg.rounds, TELEMETRY_MIN_ROUNDS);
  // One Samples per mode and round: the rounds are resampled for the cost intervals, each
  // resample taking the same rounds of every mode (a round's modes ran minutes apart at most).
  const samples = new Map<Mode, Samples[]>(modes.map((m) => [m, []]));
  const newSamples = (): Samples => ({ rttUs: [], pipelinedPerSec: [], spawnMs: [], cpuMsPer1k: [], warmCpuMsPer1k: [], warmRttUs: [] });
  let requestsSent = 0;
  let requestsCounted = 0;
  let requestsSentOn = 0;
  let exportRequests = 0;
  let exportBytes = 0;
  let spansDropped = 0;
  let hookNs = { off: 0, on: 0, on1: 0 };
  let side: { per1k: SideBySideSamples; pinned: boolean } | undefined;
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? modes : [...modes].reverse();
      for (const mode of order) {
        const server: ServerUnderTest = await startServer(command(mode));
        let client: BenchClient | undefined;
        try {
          client = await connect(server.url);
          const roundSamples = newSamples();
          const sent = await workload(client, server.pid, cfg, fx, roundSamples);
          samples.get(mode)!.push(roundSamples);
          if (mode === 'on') requestsSentOn += sent;
          if (mode === 'on' || mode === 'on1') {
            requestsSent += sent;
            requestsCounted += await scrapeRequests(server);
          }
        } finally {
          await client?.close().catch(() => undefined);
          await server.stop(); // SIGTERM: the "on" server flushes its spans here
        }
        if (mode === 'on') {
          const m = /traces: (\d+) spans dropped/.exec(server.stderr());
          spansDropped += m ? Number(m[1]) : 0;
        }
      }
      opts.log(`  telemetry round ${round + 1}/${rounds} done`);
    }
    if (!cfg.quick) {
      opts.log(`  telemetry side by side (${SIDE_BY_SIDE_GROUPS} groups of four fresh servers)…`);
      side = await sideBySide((m, cpu) => startServer(cpu === undefined ? command(m) : onCpu(command(m), cpu)), connect, fx, opts.log);
    }
    const st = await sink.stats();
    exportRequests = st.requests;
    exportBytes = st.bytes;
    hookNs = await hookCost(sink.url);
  } finally {
    await sink.close();
  }
  const row = (metric: string, unit: string, better: 'lower' | 'higher', field: keyof Samples, p: number): TelemetryRow => {
    // The p-th percentile of the given rounds' samples of `field` pooled (a p50 of all their round
    // trips, a median of their CPU readings); only that field is pooled, 400 times per cost.
    const of = (m: Mode, picked: number[]) => {
      const all = samples.get(m)!;
      const pooled: number[] = [];
      for (const i of picked) for (const v of all[i][field]) pooled.push(v);
      return percentile(pooled, p);
    };
    const everyRound = samples.get('off')!.map((_, i) => i);
    const off = of('off', everyRound);
    const on = of('on', everyRound);
    const on1 = of('on1', everyRound);
    const cost = (a: number, b: number) => relativeCost(a, b, better);
    return {
      metric,
      unit,
      better,
      baseline: opts.baselineCli ? of('baseline', everyRound) : null,
      off,
      on,
      on1,
      onCost: { cost: cost(off, on), ...resampledInterval(everyRound.length, (picked) => cost(of('off', picked), of('on', picked))) },
      on1Cost: { cost: cost(off, on1), ...resampledInterval(everyRound.length, (picked) => cost(of('off', picked), of('on1', picked))) },
    };
  };
  // The side-by-side groups: a cost is the median over the groups of a server's cost against its
  // group's "off" server, and its interval comes from resampling the groups.
  const sideCosts = (s: SideBySideSamples) => {
    const of = (m: SideBySideServer, picked: number[]) => percentile(picked.map((i) => s[m][i]), 50);
    const every = s.off.map((_, i) => i);
    const costOf = (m: Exclude<SideBySideServer, 'off'>, picked: number[]) => percentile(picked.map((i) => relativeCost(s.off[i], s[m][i], 'lower')), 50);
    const estimate = (m: Exclude<SideBySideServer, 'off'>): CostEstimate => ({ cost: costOf(m, every), ...resampledInterval(every.length, (picked) => costOf(m, picked)) });
    return { of, every, estimate };
  };
  const sideRow = (s: SideBySideSamples): TelemetryRow => {
    const { of, every, estimate } = sideCosts(s);
    return {
      metric: `server CPU per 1000 requests, after ${WARM_REQUESTS / 1000}k, side by side`,
      unit: 'ms',
      better: 'lower',
      baseline: null,
      off: of('off', every),
      on: of('on', every),
      on1: of('on1', every),
      onCost: estimate('on'),
      on1Cost: estimate('on1'),
    };
  };
  return {
    ...(side ? { sideBySide: { groups: side.per1k.off.length, slicesPerGroup: SIDE_BY_SIDE_SLICES, pinned: side.pinned, control: sideCosts(side.per1k).estimate('control') } } : {}),
    rounds,
    rows: [
      row('fs/getMetadata round trip p50', 'µs', 'lower', 'rttUs', 50),
      row('fs/getMetadata round trip p99', 'µs', 'lower', 'rttUs', 99),
      row('pipelined fs/getMetadata (2000 at once)', 'req/s', 'higher', 'pipelinedPerSec', 50),
      row('server CPU per 1000 requests', 'ms', 'lower', 'cpuMsPer1k', 50),
      ...(cfg.quick ? [] : [row(`server CPU per 1000 requests, after ${WARM_REQUESTS / 1000}k`, 'ms', 'lower', 'warmCpuMsPer1k', 50)]),
      // A server that has been up a while: its code optimized, in both modes.
      ...(cfg.quick ? [] : [row(`fs/getMetadata round trip p50, after ${WARM_REQUESTS / 1000}k`, 'µs', 'lower', 'warmRttUs', 50)]),
      row('process start → exit (`true`) p50', 'ms', 'lower', 'spawnMs', 50),
      ...(side ? [sideRow(side.per1k)] : []),
    ],
    exportRequests,
    exportBytes,
    requestsCounted,
    requestsSent,
    requestsSentOn,
    spansDropped,
    hookNs,
  };

  /** Requests the "on" server's Prometheus endpoint counted (its URL is in its log). */
  async function scrapeRequests(server: ServerUnderTest): Promise<number> {
    const url = /Prometheus endpoint (http:\/\/\S+)/.exec(server.stderr())?.[1];
    if (!url) throw new Error(`no Prometheus endpoint in the log: ${server.stderr()}`);
    const text = await (await fetch(url)).text();
    let n = 0;
    for (const line of text.split('\n')) {
      const m = /^exec_server_requests_total\{[^}]*\} (\d+)/.exec(line);
      if (m) n += Number(m[1]);
    }
    return n;
  }
}

/** How much dearer `b` is than `a` (a fraction: 0.03 = 3 % dearer), for a metric where lower or higher is better. */
const relativeCost = (a: number, b: number, better: 'lower' | 'higher') => (better === 'lower' ? (b - a) / a : (a - b) / a);
const signed = (f: number) => `${f >= 0 ? '+' : ''}${(f * 100).toFixed(1)}%`;

/**
 * The 5th and 95th percentiles of `statistic` over resamples of `n` rounds drawn with
 * replacement (a percentile bootstrap). Deterministic: the same samples give the same interval.
 */
function resampledInterval(n: number, statistic: (picked: number[]) => number, resamples = 400): { low: number; high: number } {
  let seed = 0x9e3779b9;
  const random = () => {
    // xorshift32: reproducible intervals from run to run of the same numbers
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 0x1_0000_0000;
  };
  const values: number[] = [];
  for (let r = 0; r < resamples; r++) {
    const picked = Array.from({ length: n }, () => Math.floor(random() * n));
    values.push(statistic(picked));
  }
  return { low: percentile(values, 5), high: percentile(values, 95) };
}

export function telemetryTable(r: TelemetryBenchResult): string {
  const hasBase = r.rows.some((x) => x.baseline !== null);
  const fmt = (v: number | null) => (v === null ? '' : v >= 100 ? v.toFixed(0) : v.toFixed(2));
  const us = (ns: number) => `${(ns / 1000).toFixed(2)} µs`;
  const warm = r.rows.find((x) => x.metric.startsWith('server CPU per 1000 requests, after'));
  // ms per 1000 requests = µs per request.
  const share = (ns: number) => `${((ns / 1000 / warm!.off) * 100).toFixed(1)} %`;
  const interval = (c: CostEstimate) => `(${signed(c.low)} to ${signed(c.high)})`;
  const head = ['metric', 'unit', ...(hasBase ? ['before telemetry', 'off vs before'] : []), 'off', 'on (traces 100 % + metrics)', 'on vs off (cost)', 'on, traces 1 %', '1 % vs off (cost)'];
  const rows = r.rows.map((x) => [
    x.metric,
    x.unit,
    ...(hasBase ? [fmt(x.baseline), signed(relativeCost(x.baseline!, x.off, x.better))] : []),
    fmt(x.off),
    fmt(x.on),
    `${signed(x.onCost.cost)} ${interval(x.onCost)}`,
    fmt(x.on1),
    `${signed(x.on1Cost.cost)} ${interval(x.on1Cost)}`,
  ]);
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((c) => `| ${c.join(' | ')} |`)];
  lines.push(
    '',
    `The hooks alone (this process, ${HOOK_BLOCKS} alternating blocks of ${HOOK_REQUESTS / 1000}k requests, the export to the sink included): off ${us(r.hookNs.off)}, 100 % ${us(r.hookNs.on)}, 1 % ${us(r.hookNs.on1)} per request${warm ? `, i.e. ${share(r.hookNs.on - r.hookNs.off)} and ${share(r.hookNs.on1 - r.hookNs.off)} of the "off" server's CPU per request after ${WARM_REQUESTS / 1000}k` : ''}.`,
    `Costs in brackets: the 90 % interval from resampling the ${r.rounds} rounds (each resample takes the same rounds of every mode)${r.sideBySide ? `; for the side-by-side row, from resampling its ${r.sideBySide.groups} groups (each: four fresh servers up at once${r.sideBySide.pinned ? ' on one CPU, their client on another' : ''}, ${r.sideBySide.slicesPerGroup} slices going round them in a rotating order; a server's median slice against its group's "off" server's). Two identical "off" servers side by side differ by ${signed(r.sideBySide.control.cost)} ${interval(r.sideBySide.control)}: the measure's own spread` : ''}.`,
    `"on" (both samplers): their Prometheus endpoints counted ${r.requestsCounted} requests (the workload sent at least ${r.requestsSent}); ${r.exportRequests} OTLP exports (${(r.exportBytes / 1024).toFixed(0)} KiB of spans) received by the sink; at 100 %, ${r.spansDropped} spans dropped (queue full) of ${r.requestsSentOn} requests.`,
  );
  return lines.join('\n');
}
