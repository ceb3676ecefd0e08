// A sandboxed start's latency (docs/performance.md, "Sandboxed start"): process/start of
// `/bin/true` under a managed workspace-write sandbox, from the request to process/closed, through
// dist/cli.js over stdio; pipes and a PTY, without carve-outs (the workspace alone is writable and
// holds no repository) and with them (/tmp writable, REPOS repositories in it: each `.git` is a
// read-only carve-out, src/server/sandbox/carve-outs.ts). Every agent command is sandboxed, so
// this is the floor of every command's latency. The same starts unsandboxed show what the sandbox
// adds, and a PTY's own cost apart from it.
// Usage: npm run build && node bench/sandbox-start.mjs [--rounds=N] [--repos=N] [--baseline-cli=PATH]
// [--cli=NAME=PATH ...] (older builds of dist/cli.js, started alongside: each round runs every case
// on every target, one after the other, the order turned round every round, so the machine's load
// drifts alike for all). Prints the median (and quartiles) per case and target, and the median of
// the per-round difference to the baseline.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { StdioServer } from './stdio-server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const arg = (k, d) => process.argv.find((a) => a.startsWith(`--${k}=`))?.split('=')[1] ?? d;
const rounds = Number(arg('rounds', 40));
const REPOS = Number(arg('repos', 10));

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'es-bench-start-'));
const work = path.join(base, 'work');
fs.mkdirSync(work);
for (let r = 0; r < REPOS; r++) {
  const res = spawnSync('git', ['init', '-q', path.join(base, `repo${r}`)]);
  if (res.status !== 0) throw new Error(`git init failed: ${res.stderr}`);
}
const carved = spawnSync('find', ['/tmp', '-xdev', '-name', '.git'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).length;
const entry = (kind, access) => ({ path: { type: 'special', value: { kind } }, access });
const protectedEntry = (subpath) => ({ path: { type: 'special', value: { kind: 'project_roots', subpath } }, access: 'read', missing_path_behavior: 'skip' });
const sandboxOf = (slashTmp) => ({
  permissions: {
    type: 'managed',
    file_system: { type: 'restricted', entries: [entry('root', 'read'), entry('project_roots', 'write'), ...(slashTmp ? [entry('slash_tmp', 'write'), entry('tmpdir', 'write')] : []), ...['.git', '.agents', '.codex', '.aws'].map(protectedEntry)] },
    network: 'restricted',
  },
  cwd: pathToFileURL(work).href, workspaceRoots: [pathToFileURL(work).href], windowsSandboxLevel: 'disabled', windowsSandboxProxySettingsMode: 'reconcile', useLegacyLandlock: false,
});
const cases = [];
// Unsandboxed too: what the sandbox adds is the difference (and a PTY's own cost shows apart).
for (const tty of [false, true]) cases.push({ name: `${tty ? 'pty ' : 'pipe'} unsandboxed`, tty, sandbox: undefined });
for (const carve of [false, true]) for (const tty of [false, true]) cases.push({ name: `${tty ? 'pty ' : 'pipe'} ${carve ? `/tmp writable (${carved} .git)` : 'no carve-outs'}`, tty, sandbox: sandboxOf(carve) });

const targets = [{ name: 'ours', cmd: [process.execPath, path.join(root, 'dist/cli.js'), '--listen', 'stdio'] }];
const baseline = arg('baseline-cli');
if (baseline) targets.push({ name: 'baseline', cmd: [process.execPath, path.resolve(baseline), '--listen', 'stdio'] });
// More builds to compare, each `--cli=NAME=PATH`.
for (const a of process.argv.filter((x) => x.startsWith('--cli='))) {
  const [name, file] = a.slice('--cli='.length).split(/=(.*)/s);
  targets.push({ name, cmd: [process.execPath, path.resolve(file), '--listen', 'stdio'] });
}
for (const t of targets) {
  t.server = new StdioServer(t.cmd);
  await t.server.init('bench-sandbox-start');
}
const results = {};
let n = 0;
const load0 = os.loadavg()[0];
try {
  // Round 0 warms each server up (its first carve-out scan, the first PTY): not counted.
  for (let r = 0; r <= rounds; r++) {
    // Alternate which target goes first.
    const order = r % 2 ? [...targets].reverse() : targets;
    for (const c of cases) {
      for (const t of order) {
        const processId = `s${++n}`;
        const { out, ms } = await t.server.run({ processId, argv: ['/bin/true'], cwd: pathToFileURL(work).href, env: { PATH: '/usr/bin:/bin' }, tty: c.tty, ...(c.sandbox ? { sandbox: c.sandbox } : {}) });
        if (out) throw new Error(`${processId} printed ${JSON.stringify(out.slice(0, 300))}`);
        if (r > 0) ((results[c.name] ??= {})[t.name] ??= []).push(ms);
      }
    }
  }
} finally {
  for (const t of targets) t.server.stop();
  fs.rmSync(base, { recursive: true, force: true });
}
const q = (xs, f) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * f)];
console.log(`/bin/true (sandboxed, and unsandboxed), start to process/closed, ${rounds} rounds; load ${load0.toFixed(2)} -> ${os.loadavg()[0].toFixed(2)}`);
for (const [c, byTarget] of Object.entries(results)) {
  const cells = targets.map(({ name: t }) => `${t} ${q(byTarget[t], 0.5).toFixed(1)} ms (${q(byTarget[t], 0.25).toFixed(1)}-${q(byTarget[t], 0.75).toFixed(1)})`);
  const diff = byTarget.baseline
    ? `; minus baseline per round: ${targets.filter(({ name }) => name !== 'baseline').map(({ name: t }) => `${t} ${q(byTarget[t].map((x, i) => x - byTarget.baseline[i]), 0.5).toFixed(1)} ms`).join(', ')}`
    : '';
  console.log(`${c.padEnd(30)} ${cells.join('  ')}${diff}`);
}
