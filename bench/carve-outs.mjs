// Bundles and runs bench/carve-outs.ts (the carve-out scan's cost; see that file).
import * as esbuild from 'esbuild';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outfile = path.join(repo, 'out', 'bench-bundle', 'carve-outs.cjs');
await esbuild.build({
  entryPoints: [path.join(repo, 'bench', 'carve-outs.ts')],
  outfile, bundle: true, platform: 'node', target: 'node20', format: 'cjs', sourcemap: 'linked', logLevel: 'warning',
  external: ['node-pty', 'bufferutil', 'utf-8-validate'],
  define: { __EXEC_SERVER_VERSION__: JSON.stringify(JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')).version) },
});
process.exitCode = await createRequire(import.meta.url)(outfile).main();
