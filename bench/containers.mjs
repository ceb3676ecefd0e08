// `npm run bench:containers` entry: bundles bench/containers-main.ts (podman exec stdio vs ssh
// stdio to a local sshd) with esbuild and runs it. Flags: --quick.
import * as esbuild from 'esbuild';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outfile = path.join(repo, 'out', 'bench-bundle', 'containers.cjs');
await esbuild.build({
  entryPoints: [path.join(repo, 'bench', 'containers-main.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: 'linked',
  logLevel: 'warning',
  external: ['node-pty', 'bufferutil', 'utf-8-validate'],
  define: { __EXEC_SERVER_VERSION__: JSON.stringify(JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')).version) },
});
const { main } = createRequire(import.meta.url)(outfile);
process.exitCode = await main(repo);
