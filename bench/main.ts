// The benchmark driver (`npm run bench [-- --quick]`): starts our CLI and the reference
// server, runs every scenario against both with the same client, alternating which goes
// first each round, plus our in-process client, then prints a table and writes
// bench/results/latest.json (and, on full runs, docs/bench.json + docs/bench.svg).
import { execSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BenchClient } from './bench-client';
import { prepareFixtures } from './fixtures';
import { consoleTable, cpuRows, failures, judge, markdownTable, outcome, tableRows, type ServerCpu, type BenchResult, type MetricResult, type TargetName } from './report';
import { FULL, QUICK, scenarios, StallError, type BenchConfig, type Samples, type Scenario } from './scenarios';
import { BarePipeBench, BareWsBench } from './bare-clients';
import { bareWsCommand, oursCommand, referenceCommand, startServer, type ServerCommand, type ServerUnderTest } from './servers';
import { renderSvg } from './svg';
import { nowMs } from './stats';
import { createTargetFactory, type TargetFactory } from './targets';
import { telemetryOverhead, telemetryTable } from './telemetry';

interface Target {
  name: TargetName;
  connect(): Promise<BenchClient>;
  /** After a stall: get a fresh server so the next scenario is not measured on a wedged one. */
  recover(): Promise<void>;
  stop(): Promise<void>;
  /** CPU time the server process has used so far (ms), when it is a separate process. */
  cpuMs?(): number;
  /** Resident memory of the server process now (MiB). */
  rssMiB?(): number;
  /** CPU time of the children the server (or this process) has reaped so far (ms): the producers it ran. */
  childCpuMs?(): number;
}

function arg(name: string): string | undefined {
  const a = process.argv.find((x) => x === `--${name}` || x.startsWith(`--${name}=`));
  if (!a) return undefined;
  return a.includes('=') ? a.slice(a.indexOf('=') + 1) : '';
}

async function serverTarget(name: 'ours' | 'reference' | 'bareWs', cmd: ServerCommand, factory: TargetFactory): Promise<Target> {
  let server: ServerUnderTest = await startServer(cmd);
  return {
    name,
    connect: () => (name === 'bareWs' ? BareWsBench.connect(server.url) : factory.websocket(server.url)),
    async recover() {
      await server.stop();
      server = await startServer(cmd);
    },
    stop: () => server.stop(),
    cpuMs: () => processCpuMs(server.pid),
    rssMiB: () => processRssMiB(server.pid),
    childCpuMs: () => processCpuMs(server.pid, true),
  };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StallError(`${what}: no completion within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/**
 * utime + stime of a process (not of its children) from /proc, in ms; with `children`, cutime +
 * cstime instead: the children it has reaped (a shell's own count includes the pipeline it waited for).
 */
function processCpuMs(pid: number, children = false): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields 14 and 15 of stat(5), or 16 and 17 for the reaped children
  const ticks = children ? Number(fields[13]) + Number(fields[14]) : Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLK_TCK;
}
/** VmRSS from /proc/<pid>/status. Spawn cost grows with it (fork copies the page tables). */
function processRssMiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}
const CLK_TCK = (() => {
  try {
    return Number(execSync('getconf CLK_TCK', { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface TargetState {
  samples: Samples;
  /** Server CPU time over the successful rounds (ms) and how many rounds that was. */
  cpuMs: number;
  cpuRounds: number;
  /** Server RSS after the scenario's last round (MiB). */
  rssMiB?: number;
  failure?: { status: 'stalled' | 'error'; detail: string };
}

async function runScenario(s: Scenario, targets: Target[], cfg: BenchConfig, fx: ReturnType<typeof prepareFixtures>): Promise<Map<TargetName, TargetState>> {
  const state = new Map<TargetName, TargetState>(targets.map((t) => [t.name, { samples: {}, cpuMs: 0, cpuRounds: 0 }]));
  const isBare = (t: Target) => t.name === 'bareWs' || t.name === 'barePipe';
  const wanted = targets.filter((t) => (t.name !== 'inProcess' || s.inProcess) && (!isBare(t) || s.ceilings));
  // The servers being compared (ours, the reference) alternate in rounds of their own; the
  // ceilings and the in-process client follow in theirs. Interleaved, every extra target's
  // client work in this process (the in-process server's and the bare pipe reader's 128 MiB of
  // output Buffers per stream round, the plain ws client's copies) left garbage that was
  // collected during the next target's round: ours measured 1,330–1,440 MiB/s that way and
  // 1,450–1,560 without the extra targets, the reference 440–490 and 450–520.
  const extra = (t: Target) => t.name === 'inProcess' || isBare(t);
  const phases = [wanted.filter((t) => !extra(t)), wanted.filter(extra)].filter((p) => p.length > 0);
  const rounds = s.rounds?.(cfg) ?? cfg.rounds;
  const warmup = s.warmupRounds?.(cfg) ?? 0;
  const schedule: { targets: Target[]; measured: boolean }[] = [];
  for (const phase of phases) {
    // Alternate who goes first so neither server always runs on a warmer (or busier) machine.
    for (let round = 0; round < warmup + rounds; round++) schedule.push({ targets: round % 2 === 0 ? phase : [...phase].reverse(), measured: round >= warmup });
  }
  for (const { targets: roundTargets, measured } of schedule) {
    for (const t of roundTargets) {
      const st = state.get(t.name)!;
      if (st.failure) continue; // a stall or a wrong result is final for this scenario
      let client: BenchClient | undefined;
      try {
        client = await withTimeout(t.connect(), 15_000, 'connect');
        const cpu0 = t.cpuMs?.();
        const child0 = t.childCpuMs?.();
        const got = await withTimeout(s.run(client, cfg, fx, { serverRssMiB: t.rssMiB }), s.timeoutMs(cfg), s.title);
        if (!measured) continue; // a warm-up round: verified (s.run throws), not counted
        const cpu1 = t.cpuMs?.();
        const child1 = t.childCpuMs?.();
        for (const [k, v] of Object.entries(got)) (st.samples[k] ??= []).push(...v);
        if (cpu0 !== undefined && cpu1 !== undefined) {
          st.cpuMs += cpu1 - cpu0;
          st.cpuRounds++;
          (st.samples.serverCpuMs ??= []).push(cpu1 - cpu0);
        }
        if (child0 !== undefined && child1 !== undefined) (st.samples.producerCpuMs ??= []).push(child1 - child0);
        st.rssMiB = t.rssMiB?.();
      } catch (e) {
        const detail = e instanceof Error ? e.message : String(e);
        st.failure = { status: e instanceof StallError ? 'stalled' : 'error', detail };
        console.log(`  ${t.name}: ${st.failure.status}: ${detail}`);
      } finally {
        await client?.close().catch(() => undefined);
      }
      if (st.failure?.status === 'stalled') await t.recover();
    }
  }
  return state;
}

function machine(): BenchResult['machine'] {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const cpu = /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
  let nproc = os.cpus().length;
  try {
    nproc = Number(execSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    /* keep os.cpus() */
  }
  return { nproc, cpu, node: process.version, platform: `${os.platform()} ${os.release()}` };
}

export async function main(repo: string): Promise<number> {
  const cfg = { ...(arg('quick') !== undefined ? QUICK : FULL) };
  if (arg('rounds')) cfg.rounds = cfg.streamRounds = Math.max(1, Number(arg('rounds')));
  if (arg('pipelined')) cfg.pipelined = arg('pipelined')!.split(',').map(Number).filter((n) => n > 0);
  const only = arg('only')?.split(',').filter(Boolean);
  const list = scenarios(cfg).filter((s) => !only || only.includes(s.id));
  const oursFlags = (arg('ours-node-flags') ?? '').split(' ').filter(Boolean);
  const frameReader = arg('ws-reader') === 'ws' ? 'ws' : undefined;
  const factory = await createTargetFactory({ raw: arg('raw-client') !== undefined, frameReader, log: (m) => console.log(m) });
  const started = nowMs();

  console.log(`exec-server bench (${cfg.quick ? 'quick' : 'full'}): ${list.map((s) => s.id).join(', ')}`);
  console.log(`preparing fixtures (${cfg.fileBytes / 1048576} MiB file, ${cfg.walkEntries}-entry tree)…`);
  const fx = prepareFixtures(cfg.fileBytes, cfg.walkEntries);

  const targets: Target[] = [];
  const stopAll = () => Promise.all(targets.map((t) => t.stop().catch(() => undefined)));
  process.once('SIGINT', () => void stopAll().then(() => process.exit(130)));
  try {
    if (arg('no-ours') === undefined) targets.push(await serverTarget('ours', oursCommand(repo, oursFlags, arg('ours-cli') || undefined, (arg('ours-args') ?? '').split(' ').filter(Boolean)), factory));
    if (arg('no-reference') === undefined) {
      try {
        targets.push(await serverTarget('reference', referenceCommand(repo), factory));
      } catch (e) {
        // e.g. offline without a cached reference: still measure ours, say why the column is empty
        console.log(`! reference unavailable, measuring ours only: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    const inProcess = arg('no-in-process') === undefined ? factory.inProcess : undefined;
    const ownChildrenCpuMs = () => processCpuMs(process.pid, true);
    if (inProcess) targets.push({ name: 'inProcess', connect: inProcess, recover: async () => undefined, stop: async () => undefined, childCpuMs: ownChildrenCpuMs });
    // The ceilings of the stream scenario (bench/bare-clients.ts), alternated with the servers.
    if (list.some((s) => s.ceilings) && arg('no-ceilings') === undefined) {
      targets.push(await serverTarget('bareWs', bareWsCommand(repo), factory));
      targets.push({ name: 'barePipe', connect: async () => new BarePipeBench(), recover: async () => undefined, stop: async () => undefined, childCpuMs: ownChildrenCpuMs });
    }
    console.log(`clients: websocket = ${factory.websocketKind}; in-process = ${factory.inProcessKind}`);

    const metrics: MetricResult[] = [];
    const serverCpu: ServerCpu[] = [];
    {
      // The idle baseline of the RSS columns: each server started, one connection made and closed.
      const idle = new Map<TargetName, number>();
      for (const t of targets) {
        if ((t.name !== 'ours' && t.name !== 'reference') || !t.rssMiB) continue;
        const c = await withTimeout(t.connect(), 15_000, 'connect');
        await c.close().catch(() => undefined);
      }
      await new Promise((r) => setTimeout(r, 1000));
      for (const t of targets) if ((t.name === 'ours' || t.name === 'reference') && t.rssMiB) idle.set(t.name, t.rssMiB());
      serverCpu.push({ scenario: 'idle', title: 'idle (started, one connection made and closed)', oursMs: null, referenceMs: null, oursRssMiB: idle.get('ours') ?? null, referenceRssMiB: idle.get('reference') ?? null });
    }
    for (const s of list) {
      console.log(`- ${s.title}`);
      const state = await runScenario(s, targets, cfg, fx);
      const perRound = (t: TargetName) => {
        const st = state.get(t);
        return st && st.cpuRounds > 0 && !st.failure ? st.cpuMs / st.cpuRounds : null;
      };
      const rss = (t: TargetName) => state.get(t)?.rssMiB ?? null;
      // What the servers still hold once the work is done: RSS again after 5 s without requests.
      const later = new Map<TargetName, number>();
      if (arg('no-settle') === undefined) {
        await new Promise((r) => setTimeout(r, Number(arg('settle-ms') ?? 5000)));
        for (const t of targets) if ((t.name === 'ours' || t.name === 'reference') && t.rssMiB) later.set(t.name, t.rssMiB());
      }
      serverCpu.push({
        scenario: s.id,
        title: s.title,
        oursMs: perRound('ours'),
        referenceMs: perRound('reference'),
        oursRssMiB: rss('ours'),
        referenceRssMiB: rss('reference'),
        oursRssLaterMiB: later.get('ours') ?? null,
        referenceRssLaterMiB: later.get('reference') ?? null,
        ...(s.ceilings && state.has('bareWs') ? { bareWsMs: perRound('bareWs') } : {}),
      });
      for (const m of s.metrics(cfg)) {
        const o = (t: TargetName) => {
          const st = state.get(t);
          if (!st) return outcome([], m);
          return outcome(st.samples[m.source] ?? [], m, st.failure);
        };
        const bare = s.ceilings && state.has('bareWs') ? { bareWs: o('bareWs'), barePipe: o('barePipe') } : undefined;
        metrics.push(judge(m, o('ours'), o('reference'), o('inProcess'), bare));
      }
    }
    // Telemetry off vs on (bench/telemetry.ts): our CLI only; `--telemetry-baseline=PATH` adds a pre-telemetry build.
    let telemetryMd: string | undefined;
    if ((!only || only.includes('telemetry')) && arg('no-ours') === undefined && arg('no-telemetry') === undefined) {
      console.log('- telemetry overhead: off (default) vs on (traces over OTLP + Prometheus)');
      const tr = await telemetryOverhead(repo, cfg, fx, (url) => factory.websocket(url), { baselineCli: arg('telemetry-baseline') || undefined, nodeFlags: oursFlags, log: (m) => console.log(m) });
      mkdirSync(path.join(repo, 'bench', 'results'), { recursive: true });
      writeFileSync(path.join(repo, 'bench', 'results', 'telemetry.json'), JSON.stringify(tr, null, 2) + '\n');
      telemetryMd = telemetryTable(tr);
    }
    const result: BenchResult = {
      date: new Date().toISOString(),
      machine: machine(),
      command: `npm run bench${cfg.quick ? ' -- --quick' : ''}`,
      config: cfg,
      clients: { websocket: factory.websocketKind, inProcess: factory.inProcessKind },
      durationSeconds: Math.round((nowMs() - started) / 1000),
      metrics,
      serverCpu,
    };
    const rows = tableRows(result);
    console.log('\n' + consoleTable(rows));
    console.log('\n' + consoleTable(cpuRows(result)));
    if (telemetryMd) console.log(`\nTelemetry overhead (our CLI):\n${telemetryMd}`);
    for (const f of failures(result)) console.log(`! ${f}`);
    console.log(`\n${result.machine.nproc} cores, ${result.machine.cpu}, node ${result.machine.node}; ${result.durationSeconds} s`);

    const resultsDir = path.join(repo, 'bench', 'results');
    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(path.join(resultsDir, 'latest.json'), JSON.stringify(result, null, 2) + '\n');
    writeFileSync(path.join(resultsDir, 'latest.svg'), renderSvg(result));
    // docs/performance.md's table is pasted from here.
    writeFileSync(path.join(resultsDir, 'latest.md'), `${markdownTable(rows)}\n\n${markdownTable(cpuRows(result))}\n${telemetryMd ? `\n${telemetryMd}\n` : ''}`);
    const writeDocs = arg('write-docs') !== undefined || (!cfg.quick && !only && arg('no-docs') === undefined);
    if (writeDocs) {
      writeFileSync(path.join(repo, 'docs', 'bench.json'), JSON.stringify(result, null, 2) + '\n');
      writeFileSync(path.join(repo, 'docs', 'bench.svg'), renderSvg(result));
    }
    console.log(`wrote bench/results/latest.json${writeDocs ? ', docs/bench.json, docs/bench.svg' : ''}`);
    // Exit status reports only whether the harness worked; goals are in the table.
    return 0;
  } finally {
    await stopAll();
    await factory.dispose().catch(() => undefined);
  }
}
