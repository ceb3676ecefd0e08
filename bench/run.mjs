// `npm run bench` entry: bundles bench/main.ts (TypeScript, importing src/) with esbuild into
// out/bench-bundle/ and runs it. Flags: --quick, --only=rtt,spawn,…, --rounds=N, --pipelined=500,1000, --raw-client, --ws-reader=ws (the client parses frames with ws's receiver, not its own), --no-ours, --no-in-process,
// --no-reference, --ours-node-flags="--cpu-prof --cpu-prof-dir=…", --ours-cli=PATH (a patched build), --ours-args="--max-in-flight 20000", --write-docs, --no-docs,
// --no-telemetry (skip the telemetry off/on overhead), --telemetry-baseline=PATH (a pre-telemetry CLI build as an extra column),
// --no-ceilings (skip the bare ws / bare pipe ceilings of the stream scenario, bench/bare-clients.ts),
// --no-network (skip the managed network proxy download, bench/network-proxy.mjs; --network-baseline-cli=PATH adds an older build),
// --no-relay (skip the agent relay vs direct over an ssh tunnel, bench/relay-main.ts).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { repo, runBundled } from './bundle.mjs';

process.exitCode = await runBundled('main', 'main');
// The managed network proxy runs in sandboxes of its own, after the servers above are gone.
const flag = (k) => process.argv.find((a) => a === `--${k}` || a.startsWith(`--${k}=`))?.split('=').slice(1).join('=');
const only = flag('only')?.split(',');
if (process.exitCode === 0 && flag('no-network') === undefined && (!only || only.includes('network'))) {
  console.log('\nManaged network proxy, 64 MiB download by curl in a managed sandbox (bench/network-proxy.mjs):');
  const baseline = flag('network-baseline-cli');
  const r = spawnSync(process.execPath, [path.join(repo, 'bench', 'network-proxy.mjs'), `--rounds=${flag('quick') !== undefined ? 2 : 5}`, ...(baseline ? [`--baseline-cli=${baseline}`] : [])], { stdio: 'inherit' });
  if (r.status !== 0) process.exitCode = 1;
}
// The agent relay of an ssh environment vs straight to the host's server over an ssh tunnel (a local sshd).
if (process.exitCode === 0 && flag('no-relay') === undefined && (!only || only.includes('relay'))) {
  console.log('\nAgent relay vs direct over an ssh tunnel (bench/relay-main.ts):');
  const r = spawnSync(process.execPath, [path.join(repo, 'bench', 'relay.mjs'), ...(flag('quick') !== undefined ? ['--quick'] : [])], { stdio: 'inherit' });
  if (r.status !== 0) process.exitCode = 1;
}
