// `npm run bench` entry: bundles bench/main.ts (TypeScript, importing src/) with esbuild into
// out/bench-bundle/ and runs it. Flags: --quick, --only=rtt,spawn,…, --rounds=N, --pipelined=500,1000, --raw-client, --ws-reader=ws (the client parses frames with ws's receiver, not its own), --no-ours, --no-in-process,
// --no-reference, --ours-node-flags="--cpu-prof --cpu-prof-dir=…", --ours-cli=PATH (a patched build), --ours-args="--max-in-flight 20000", --write-docs, --no-docs,
// --no-telemetry (skip the telemetry off/on overhead), --telemetry-baseline=PATH (a pre-telemetry CLI build as an extra column),
// --no-ceilings (skip the bare ws / bare pipe ceilings of the stream scenario, bench/bare-clients.ts).
import * as esbuild from 'esbuild';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outfile = path.join(repo, 'out', 'bench-bundle', 'main.cjs');
await esbuild.build({
  entryPoints: [path.join(repo, 'bench', 'main.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // Linked, not inline: with its 1.1 MB inline source map in the bundle this process spent about twice
  // the CPU per streamed byte (every client alike: ws, bare ws, bare pipe; measured with and without
  // the map comment), so the client, not the servers, set the stream numbers. The product's own
  // bundles (esbuild.mjs) link their maps too.
  sourcemap: 'linked',
  logLevel: 'warning',
  external: ['node-pty', 'bufferutil', 'utf-8-validate'],
  define: { __EXEC_SERVER_VERSION__: JSON.stringify(JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')).version) },
});
const { main } = createRequire(import.meta.url)(outfile);
process.exitCode = await main(repo);
