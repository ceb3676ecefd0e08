// `npm run bench` (after the engine scenarios; bench/relay.mjs): an agent's commands on an ssh host
// through the extension's agent relay vs straight to the host's exec-server over an ssh tunnel.
// The host is a local sshd (test/support/sshd.ts) whose login runs this repository's CLI; both
// paths reach the SAME detached server that Connect to Host starts (`exec-server --detach`):
//   direct — `ssh -N -L PORT:127.0.0.1:<server port>` and a websocket client with the server's
//            token on it (what pointing Codex at the host's exec-server through a tunnel is);
//   relay  — the agent endpoint of that environment (src/extension/agent/endpoint.ts with
//            relay-targets.ts and ssh/persist.ts sshRelayRoutes: the gate, then `ssh -W` to the
//            detached server), the client on the endpoint's URL with the endpoint's token.
// The same client (this project's ExecServerClient, JSON output as Codex gets it: no binaryOutput)
// measures: command round trip (process/start of `true` until closed), RPC round trip
// (fs/getMetadata /), 64 MiB of process output (`head -c 64M /dev/zero`, every byte counted).
// The gate runs with neverAsk (no question, no sandbox): the relay's own cost is measured, not
// bubblewrap's or a user's. The endpoint runs in a process of its own (as the extension host is
// not the agent's process): in this one its relaying would share a thread with the client's
// decoding. Rounds alternate direct / relay.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { ExecClient } from '../src/client/api';
import { connectWebSocket } from '../src/client/connect';
import { readRunRecord, runPaths } from '../src/cli/detach';
import { AgentEndpoint } from '../src/extension/agent/endpoint';
import { relayTargetOf } from '../src/extension/agent/relay-targets';
import { connectPersistentSsh, ensureDetachedServer, persistentSshSpec, sshRelayRoutes } from '../src/extension/ssh/persist';
import { sshArgv } from '../src/extension/ssh/target';
import { binDir, freePort, startSshd } from '../test/support/sshd';
import { runToEnd } from './run-to-end';
import { median, MiB, nowMs, percentile } from './stats';

const OUTPUT_BYTES = 64 * MiB;

async function tunnel(configFile: string, alias: string, remotePort: number): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn('ssh', ['-F', configFile, '-N', '-o', 'BatchMode=yes', '-o', 'ExitOnForwardFailure=yes', '-L', `${port}:127.0.0.1:${remotePort}`, '--', alias], { stdio: 'ignore' });
  for (let i = 0; i < 200; i++) {
    const up = await new Promise<boolean>((r) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), r(true)));
      s.on('error', () => r(false));
    });
    if (up) return { port, child };
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill();
  throw new Error('the ssh tunnel did not come up');
}

interface Sample {
  cmd: number[];
  rtt: number[];
  rate: number[];
}

async function sampleOnce(c: ExecClient, s: Sample, quick: boolean): Promise<void> {
  for (let i = 0; i < (quick ? 10 : 20); i++) {
    const t = nowMs();
    await runToEnd(c, ['true']);
    s.cmd.push(nowMs() - t);
  }
  for (let i = 0; i < (quick ? 100 : 300); i++) {
    const t = nowMs();
    await c.fs.stat('/');
    s.rtt.push(nowMs() - t);
  }
  const t = nowMs();
  const n = await runToEnd(c, ['head', '-c', String(OUTPUT_BYTES), '/dev/zero']);
  if (n !== OUTPUT_BYTES) throw new Error(`${n} bytes of output arrived, ${OUTPUT_BYTES} expected`);
  s.rate.push(OUTPUT_BYTES / MiB / ((nowMs() - t) / 1000));
}

export async function main(repo: string): Promise<number> {
  const quick = process.argv.includes('--quick');
  const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice(9) ?? (quick ? 2 : 5));
  const work = mkdtempSync(path.join(os.tmpdir(), 'es-bench-relay-'));
  const home = path.join(work, 'home');
  mkdirSync(home, { recursive: true });
  let sshd: Awaited<ReturnType<typeof startSshd>> | undefined;
  let tun: ChildProcess | undefined;
  let endpointProcess: ChildProcess | undefined;
  const clients: ExecClient[] = [];
  try {
    const pathBin = binDir(path.join(work, 'bin'), { 'exec-server': `#!/bin/sh\nexec ${process.execPath} ${path.join(repo, 'dist', 'cli.js')} "$@"\n` });
    sshd = await startSshd([{ alias: 'devbox', env: { HOME: home, PATH: `${pathBin}:/usr/bin:/bin`, PYENV_REHASH_TIMEOUT: '1' } }], { parent: work });
    const config = { name: 'devbox', kind: 'command' as const, command: 'ssh', args: sshArgv({ host: 'devbox' }, { configFile: sshd.configFile }, 'exec-server --listen stdio://', { keepAlive: true }) };
    // direct: the detached server Connect to Host would start, through an ssh tunnel.
    const server = await ensureDetachedServer(persistentSshSpec(config)!);
    const t = await tunnel(sshd.configFile, 'devbox', server.port);
    tun = t.child;
    const direct = await connectWebSocket(`ws://127.0.0.1:${t.port}/`, { clientName: 'bench-direct', token: server.token, binaryOutput: false, ...(process.env.BENCH_RELAY_WINDOW ? { outputWindow: Number(process.env.BENCH_RELAY_WINDOW) } : {}) });
    clients.push(direct);
    // The extension's own connection to that server (ssh -W, as the relay's link): the transport's share.
    const spec = persistentSshSpec(config)!;
    const own = await connectPersistentSsh(spec, { clientName: 'bench-ssh-w', binaryOutput: false, ...(process.env.BENCH_RELAY_WINDOW ? { outputWindow: Number(process.env.BENCH_RELAY_WINDOW) } : {}), fallback: () => Promise.reject(new Error('no fallback in the bench')) });
    clients.push(own);
    // relay: the environment's agent endpoint, in a process of its own (endpointChild).
    const child = spawn(process.execPath, [...(process.env.BENCH_RELAY_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_RELAY_PROF}`] : []), '-e', `require(${JSON.stringify(__filename)}).endpointChild()`], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, BENCH_RELAY_CONFIG: JSON.stringify({ config, home }) } });
    endpointProcess = child;
    const first = await new Promise<string>((resolve, reject) => {
      let buf = '';
      child.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        if (buf.includes('\n')) resolve(buf.slice(0, buf.indexOf('\n')));
      });
      child.once('exit', (code) => reject(new Error(`the endpoint process exited (${code})`)));
    });
    const endpoint = JSON.parse(first) as { url: string; token: string };
    const relay = await connectWebSocket(endpoint.url, { clientName: 'bench-relay', token: endpoint.token, binaryOutput: false, ...(process.env.BENCH_RELAY_WINDOW ? { outputWindow: Number(process.env.BENCH_RELAY_WINDOW) } : {}) });
    clients.push(relay);
    const d: Sample = { cmd: [], rtt: [], rate: [] };
    const r: Sample = { cmd: [], rtt: [], rate: [] };
    const w: Sample = { cmd: [], rtt: [], rate: [] };
    await sampleOnce(own, { cmd: [], rtt: [], rate: [] }, true);
    await sampleOnce(direct, { cmd: [], rtt: [], rate: [] }, true); // warm-up
    await sampleOnce(relay, { cmd: [], rtt: [], rate: [] }, true);
    for (let i = 0; i < rounds; i++) {
      await sampleOnce(direct, d, quick);
      await sampleOnce(relay, r, quick);
      await sampleOnce(own, w, quick);
    }
    const f = (n: number) => n.toFixed(n < 10 ? 2 : 1);
    const row = (label: string, s: Sample) => `| ${label} | ${f(percentile(s.cmd, 50))} / ${f(percentile(s.cmd, 99))} | ${f(percentile(s.rtt, 50))} / ${f(percentile(s.rtt, 99))} | ${f(median(s.rate))} |`;
    console.log(`\nAgent relay vs direct over an ssh tunnel (local sshd, this project's CLI on the host; ${rounds} alternating rounds; 2 cores, shared)\n`);
    console.log('| path | command round trip p50 / p99 (ms) | RPC round trip p50 / p99 (ms) | 64 MiB output (MiB/s, median) |');
    console.log('|---|---|---|---|');
    console.log(row('direct (ssh -L tunnel → detached server)', d));
    console.log(row('relay (agent endpoint → gate → ssh -W → detached server)', r));
    console.log(row('for comparison: the extension\'s own client through ssh -W (no gate, no relay)', w));
    const speed = (a: number[], b: number[]) => median(a) / median(b);
    console.log(`\nrelay / direct: command rate ${f(speed(d.cmd, r.cmd))}x, RPC rate ${f(speed(d.rtt, r.rtt))}x, output ${f(median(r.rate) / median(d.rate))}x (goal >= 0.8x)`);
    return 0;
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    if (endpointProcess && endpointProcess.exitCode === null) {
      const ep = endpointProcess;
      const gone = new Promise((r) => ep.once('exit', r));
      ep.stdin?.end();
      await Promise.race([gone, new Promise((r) => setTimeout(r, 5000))]);
      ep.kill('SIGKILL');
    }
    tun?.kill();
    const rec = readRunRecord(runPaths(home).record);
    if (rec) {
      try {
        process.kill(rec.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
    }
    await sshd?.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** The endpoint process: starts the environment's agent endpoint, prints its URL and token, ends with its stdin. */
export async function endpointChild(): Promise<void> {
  const { config, home } = JSON.parse(process.env.BENCH_RELAY_CONFIG!) as { config: Parameters<typeof relayTargetOf>[0]; home: string };
  const endpoint = await AgentEndpoint.start({
    port: 0,
    relay: relayTargetOf(config, async () => undefined, undefined, sshRelayRoutes()),
    gate: { policy: () => 'neverAsk', sandboxAll: () => false, timeoutMs: () => 20_000, workspaceRoots: () => [home], ask: async () => 'Allow' },
  });
  process.stdout.write(`${JSON.stringify({ url: endpoint.url, token: endpoint.token })}\n`);
  process.stdin.resume();
  process.stdin.once('end', () => void endpoint.stop().finally(() => process.exit(0)));
}
