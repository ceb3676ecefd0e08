// Bundles one TypeScript benchmark entry (importing src/) with esbuild into out/bench-bundle/ and
// runs its exported main(repo): the shared start of every `bench/*.mjs` entry.
import * as esbuild from 'esbuild';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Builds bench/<entry>.ts into out/bench-bundle/<name>.cjs and returns main(repo)'s exit code. */
export async function runBundled(entry, name) {
  const outfile = path.join(repo, 'out', 'bench-bundle', `${name}.cjs`);
  await esbuild.build({
    entryPoints: [path.join(repo, 'bench', `${entry}.ts`)],
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
  return main(repo);
}
