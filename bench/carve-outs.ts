// The engine's carve-out scan (src/server/sandbox/carve-outs.ts) on a workspace of 50 000 files
// and 200 nested repositories (`git init`, so each `.git` is a real one): its cost cold (the first
// sandboxed start in a server process) and cached (every later start), and what it adds to a real
// sandboxed start (bwrap, `true`; later starts enter the mounts prepared once,
// src/server/sandbox/prepared-namespace.ts) against the same start in an empty workspace; and, for
// comparison, a fresh bwrap with all the mounts. The reference has
// no such scan (its sandbox does not protect nested repositories), so there is no column for it.
// Run: `npm run build && node bench/carve-outs.mjs`.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { managedSandbox, workspaceWriteEntries } from '../src/protocol/codex-sandbox';
import { ExecServer } from '../src/server/exec-server';
import type { NotificationSink } from '../src/server/api';
import { forgetTurnScans, scanCarveOuts, withCarveOuts } from '../src/server/sandbox/carve-outs';
import { parseSandbox, type ManagedSandboxProfile } from '../src/server/sandbox/profile';
import { resolveProfile } from '../src/server/sandbox/resolve';
import { sandboxBackend } from '../src/server/sandbox/backend';
import { preparedNamespaceSettings } from '../src/server/sandbox/prepared-namespace';

const FILES = 50_000;
const REPOS = 200;
const ROUNDS = 20;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function makeWorkspace(root: string, files: number, repos: number): void {
  fs.mkdirSync(root, { recursive: true });
  const dirs = 250;
  for (let d = 0; d < dirs; d++) {
    const dir = path.join(root, `pkg${d}`, 'src');
    fs.mkdirSync(dir, { recursive: true });
    for (let f = 0; f < files / dirs; f++) fs.writeFileSync(path.join(dir, `f${f}.ts`), 'x');
  }
  for (let r = 0; r < repos; r++) {
    const res = spawnSync('git', ['init', '-q', path.join(root, `pkg${r}`)]);
    if (res.status !== 0) throw new Error(`git init failed: ${res.stderr}`);
  }
}

function profileFor(root: string): ManagedSandboxProfile {
  const sb = managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: pathToFileURL(root).href });
  return resolveProfile(parseSandbox(sb, { cwd: root, tmpDir: os.tmpdir() }) as ManagedSandboxProfile);
}

/** Wall time per start, and the engine's own CPU time per start (this process: user + system). */
async function sandboxedStarts(root: string): Promise<{ times: number[]; cpuMs: number }> {
  const server = new ExecServer({ log: () => {} });
  let wake = () => {};
  const closed = new Set<string>();
  const sink: NotificationSink = {
    notify(method, params) {
      if (method === 'process/closed') closed.add((params as { processId: string }).processId);
      wake();
    },
  } as NotificationSink;
  const conn = server.connect(sink, { terminateOnClose: true, label: 'bench' });
  await conn.requestUntyped('initialize', { clientName: 'bench' });
  conn.notification('initialized', {});
  const sandbox = managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: pathToFileURL(root).href });
  const times: number[] = [];
  let cpu0 = process.cpuUsage();
  for (let i = 0; i <= ROUNDS; i++) {
    const id = `p${i}`;
    if (i === 1) cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await conn.requestUntyped('process/start', { processId: id, argv: ['true'], cwd: pathToFileURL(root).href, env: { PATH: '/usr/bin:/bin' }, tty: false, sandbox });
    await new Promise<void>((resolve) => {
      wake = () => closed.has(id) && resolve();
      wake();
    });
    if (i > 0) times.push(performance.now() - t0); // the first start pays the cold scan (measured apart)
  }
  const cpu = process.cpuUsage(cpu0);
  await server.shutdown();
  return { times, cpuMs: (cpu.user + cpu.system) / 1000 / ROUNDS };
}

/**
 * bubblewrap alone: the argv the engine builds for `root`, run directly (its mounts' cost, no
 * engine); `keep`: only the first that many carve-out mounts (`--ro-bind-try`) of it.
 */
async function bwrapOnly(root: string, keep = Infinity): Promise<number> {
  const backend = await sandboxBackend();
  // A fresh bwrap's argv, never a prepared namespace's (src/server/sandbox/prepared-namespace.ts).
  const saved = preparedNamespaceSettings.minMounts;
  preparedNamespaceSettings.minMounts = Number.MAX_SAFE_INTEGER;
  const req = backend.wrap(profileFor(root), { argv: ['true'], cwd: root, env: { PATH: '/usr/bin:/bin' }, pipeStdin: false, rows: 24, cols: 80 });
  preparedNamespaceSettings.minMounts = saved;
  const argv: string[] = [];
  let kept = 0;
  for (let i = 0; i < req.argv.length; i++) {
    if (req.argv[i] === '--ro-bind-try' && kept++ >= keep) i += 2;
    else argv.push(req.argv[i]);
  }
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    const r = spawnSync(argv[0], argv.slice(1), { cwd: root, env: req.env, stdio: 'ignore' });
    if (r.status !== 0) throw new Error(`bwrap failed: ${r.status}`);
    times.push(performance.now() - t0);
  }
  return median(times);
}

export async function main(): Promise<number> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'es-bench-carve-'));
  try {
    const big = path.join(base, 'big');
    const empty = path.join(base, 'empty');
    fs.mkdirSync(empty);
    makeWorkspace(big, FILES, REPOS);
    const prof = profileFor(big);
    let t0 = performance.now();
    const first = withCarveOuts(prof);
    const cold = performance.now() - t0;
    // Each round as a later start sees it: the scans of one turn are memoized, so forget them first.
    const cached: number[] = [];
    const scanOnly: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      forgetTurnScans();
      t0 = performance.now();
      scanCarveOuts(big);
      scanOnly.push(performance.now() - t0);
      forgetTurnScans();
      t0 = performance.now();
      withCarveOuts(prof);
      cached.push(performance.now() - t0);
    }
    const carved = first.profile.readOnlyCarveouts.length;
    const startsEmpty = await sandboxedStarts(empty);
    const startsBig = await sandboxedStarts(big);
    console.log(`workspace: ${FILES} files, ${REPOS} nested repositories; ${carved} read-only carve-outs (complete: ${first.complete})`);
    console.log(`scan cold (first start of a server): ${cold.toFixed(1)} ms`);
    console.log(`scan cached (later starts): median ${median(scanOnly).toFixed(1)} ms; with the profile built from it: median ${median(cached).toFixed(1)} ms, max ${Math.max(...cached).toFixed(1)} ms over ${ROUNDS}`);
    const [be, bb] = [await bwrapOnly(empty), await bwrapOnly(big)];
    console.log(`bubblewrap alone (the same argv, spawned directly): empty median ${be.toFixed(1)} ms; this workspace median ${bb.toFixed(1)} ms (added: ${(bb - be).toFixed(1)} ms)`);
    // Each bind makes bubblewrap re-read /proc/self/mountinfo, which grows by one line per
    // mount: the cost grows with the square of the carve-outs (the floor of this goal).
    const scale: string[] = [];
    for (const k of [0, 50, 100, 200]) scale.push(`${k}: ${(await bwrapOnly(big, k)).toFixed(1)} ms`);
    console.log(`bubblewrap alone with the first N carve-out mounts of this workspace: ${scale.join('; ')}`);
    const [e, b] = [median(startsEmpty.times), median(startsBig.times)];
    console.log(`sandboxed start of \`true\`: empty workspace median ${e.toFixed(1)} ms; this workspace median ${b.toFixed(1)} ms (added: ${(b - e).toFixed(1)} ms)`);
    console.log(`engine CPU per start (this process, user + system): empty ${startsEmpty.cpuMs.toFixed(1)} ms; this workspace ${startsBig.cpuMs.toFixed(1)} ms (added: ${(startsBig.cpuMs - startsEmpty.cpuMs).toFixed(1)} ms)`);
    return 0;
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}
