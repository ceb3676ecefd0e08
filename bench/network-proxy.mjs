// Managed network proxy throughput (docs/security.md, "Managed network"): a 64 MiB download from a loopback HTTP server by
// curl inside a managed sandbox, through the executor-local proxy (networkProxy, HTTP proxy) and
// directly (network "enabled", no proxy), on our CLI and on the reference, rounds alternating.
// Prints MiB/s per case (median of the rounds) and the proxied/direct ratio (goal: ≥ 0.8), per round
// (proxied over the direct download just before it) and its median. It also measures the CPU of
// every party to a download (curl's from bash's `times` in the sandbox, the origin's and the
// server's from their threads' schedstat) and prints them beside the download's time: on a
// machine with fewer cores than busy parties, the relay's CPU and the extra work it makes the
// others do come out of the same cores.
// Usage: npm run build && node bench/network-proxy.mjs [--rounds=N] [--baseline-cli=PATH] (an older
// build of dist/cli.js as a third target, for a before/after in the same run). `npm run bench` runs it
// last (skip with --no-network; --only=network runs it alone).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { StdioServer } from './stdio-server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.split('=')[1] ?? 5);
const SIZE = 64 * 1024 * 1024;

function findReference() {
  const r = spawnSync(process.execPath, [path.join(root, 'scripts/tools/install.mjs'), '--find', 'reference'], { encoding: 'utf8' });
  const keys = Object.fromEntries(r.stdout.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  if (!keys.REFERENCE) return undefined;
  // The installer leaves CODEX_HOME to its user (test/support/reference.ts makes it too): without
  // it the reference cannot link its sandbox helper and every sandboxed command fails at once.
  mkdirSync(keys.CODEX_HOME, { recursive: true });
  return { cmd: [keys.REFERENCE, 'exec-server', '--listen', 'stdio'], env: { ...process.env, CODEX_HOME: keys.CODEX_HOME } };
}

/**
 * CPU time of a server process so far, in ms: the sum over its threads of the time they ran
 * (schedstat, in ns: the 10 ms ticks of /proc/PID/stat are too coarse for a ~30 ms download).
 * Its children (the sandbox, curl) are not in it. A thread that exited meanwhile is missed;
 * the servers' threads live as long as they do.
 */
function cpuMs(pid) {
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns / 1e6;
}

// The origin runs in a process of its own, so its CPU per download can be read apart from the
// bench's (which parses the servers' output).
const ORIGIN = `
const http = require('http');
const SIZE = ${SIZE}, body = Buffer.alloc(1024 * 1024, 'x');
const origin = http.createServer((req, res) => {
  res.writeHead(200, { 'content-length': SIZE });
  let sent = 0;
  const more = () => {
    while (sent < SIZE) {
      sent += body.length;
      if (!res.write(body)) return void res.once('drain', more);
    }
    res.end();
  };
  more();
});
origin.listen(0, '127.0.0.1', () => process.stdout.write(origin.address().port + '\\n'));
`;
const origin = spawn(process.execPath, ['-e', ORIGIN], { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise((resolve, reject) => {
  origin.stdout.once('data', (d) => resolve(Number(String(d).trim())));
  origin.once('exit', (code) => reject(new Error(`the origin server exited (${code}) before listening`)));
});
const cwd = 'file:///tmp';
const sandbox = {
  permissions: { type: 'managed', file_system: { type: 'restricted', entries: [{ path: { type: 'special', value: { kind: 'root' } }, access: 'read' }] }, network: 'enabled' },
  cwd, workspaceRoots: [cwd], windowsSandboxLevel: 'disabled', windowsSandboxProxySettingsMode: 'reconcile', useLegacyLandlock: false,
};
const proxy = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: false, domains: { localhost: 'allow' } };
// curl runs under a bash of its own whose `times` prints, as its second line, the CPU of its
// reaped children: curl. Not in the command's own bash: children's CPU survives exec, and in a
// proxied sandbox that bash inherits the Node helper that handed the proxy's listeners out
// (reaped while it waits for curl), whose start would count as curl's.
const curl = (extra) => ['/bin/bash', '-c', `/bin/bash -c "curl -s -o /dev/null -w '%{speed_download}\\n' ${extra} http://localhost:${port}/big; times"; true`];
/** Seconds of a `times` field ("0m0.021s"). */
const timesSec = (f) => {
  const m = /^(\d+)m([\d.]+)s$/.exec(f);
  return m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
};

const targets = [{ name: 'ours', cmd: [process.execPath, path.join(root, 'dist/cli.js'), '--listen', 'stdio'], env: process.env }];
const baseline = process.argv.find((a) => a.startsWith('--baseline-cli='))?.split('=')[1];
if (baseline) targets.push({ name: 'baseline', cmd: [process.execPath, path.resolve(baseline), '--listen', 'stdio'], env: process.env });
const ref = findReference();
if (ref) targets.push({ name: 'reference', ...ref });
const results = {};
let n = 0;
for (const t of targets) {
  t.server = new StdioServer(t.cmd, t.env);
  await t.server.init('bench-network');
}
for (let r = 0; r < rounds; r++) {
  for (const t of targets) {
    for (const kind of ['direct', 'proxied']) {
      const params = { processId: `b${++n}`, argv: kind === 'direct' ? curl("--noproxy '*'") : curl(''), cwd, env: { PATH: '/usr/bin:/bin' }, tty: false, sandbox,
        ...(kind === 'proxied' ? { enforceManagedNetwork: true, networkProxy: { proxy } } : {}) };
      results[`${t.name} ${kind}`] ??= [];
      const cpu0 = cpuMs(t.server.child.pid);
      const origin0 = cpuMs(origin.pid);
      const { out } = await t.server.run(params);
      const r = results[`${t.name} ${kind}`];
      (r.cpu ??= []).push(cpuMs(t.server.child.pid) - cpu0);
      (r.originCpu ??= []).push(cpuMs(origin.pid) - origin0);
      const lines = out.trim().split('\n');
      const childrenMs = (line) => {
        const f = (line ?? '').trim().split(/\s+/);
        return (timesSec(f[0]) + timesSec(f[1])) * 1000;
      };
      (r.curlCpu ??= []).push(childrenMs(lines[2]));
      const bps = Number(lines[0]);
      // A download that failed is not a rate: say what the child printed instead of a NaN.
      if (!(bps > 0)) throw new Error(`${t.name} ${kind}: curl printed ${JSON.stringify(out.slice(0, 300))}`);
      results[`${t.name} ${kind}`].push(bps / 1024 / 1024);
    }
  }
}
for (const t of targets) t.server.stop();
origin.kill();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [k, v] of Object.entries(results)) {
  console.log(`${k.padEnd(20)} ${median(v).toFixed(0).padStart(6)} MiB/s  (rounds: ${v.map((x) => x.toFixed(0)).join(' ')}); CPU per download: server ${median(v.cpu).toFixed(0)} ms (rounds: ${v.cpu.map((x) => x.toFixed(0)).join(' ')}), curl ${median(v.curlCpu).toFixed(0)} ms, origin ${median(v.originCpu).toFixed(0)} ms`);
}
// The ratio of each round's proxied download to the direct one just before it (the machine's
// load drifts between rounds; a pair is seconds apart), then the median of those.
for (const t of targets) {
  const d = results[`${t.name} direct`], p = results[`${t.name} proxied`];
  const pairs = p.map((x, i) => x / d[i]);
  console.log(`${t.name}: proxied / direct = ${median(pairs).toFixed(2)} (median of rounds: ${pairs.map((x) => x.toFixed(2)).join(' ')}; of medians ${(median(p) / median(d)).toFixed(2)})`);
  // Where a proxied download's time goes, beside the direct one's: the CPU of each party (curl's
  // and the origin's include their own start and request, outside the transfer's time).
  const ms = (mibs) => (SIZE / 1048576 / mibs) * 1000;
  console.log(`${t.name}: a 64 MiB download took ${ms(median(p)).toFixed(0)} ms proxied, ${ms(median(d)).toFixed(0)} ms direct; CPU proxied: relay (server) ${median(p.cpu).toFixed(0)} ms, curl ${median(p.curlCpu).toFixed(0)} ms, origin ${median(p.originCpu).toFixed(0)} ms; direct: curl ${median(d.curlCpu).toFixed(0)} ms, origin ${median(d.originCpu).toFixed(0)} ms (${os.availableParallelism()} cores)`);
}
