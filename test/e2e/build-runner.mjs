// Builds the e2e test-runner extension: bundles runner-ext/src (with the suite) by esbuild and
// packages it into its own VSIX, so the product VSIX never contains tests. Also bundles the
// suite alone for @vscode/test-electron / @vscode/test-cli (.vscode-test.mjs).
// Usage: node test/e2e/build-runner.mjs [outDir]  → prints the VSIX path.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const outDir = path.resolve(process.argv[2] ?? path.join(repo, 'out', 'e2e'));
mkdirSync(outDir, { recursive: true });

// Type check the suite and the runner first (esbuild only strips types).
execFileSync(process.execPath, [path.join(repo, 'node_modules/typescript/bin/tsc'), '-p', path.join(here, 'tsconfig.json')],
  { cwd: repo, stdio: ['ignore', 'inherit', 'inherit'] });

const common = {
  bundle: true, platform: 'node', target: 'node20', format: 'cjs', sourcemap: 'inline', logLevel: 'warning',
  // ws's optional native helpers are not installed; ws falls back to JS.
  external: ['vscode', 'bufferutil', 'utf-8-validate'],
};
// Built in a private stage, then renamed into place: e2e runs started at the same time in one
// tree (each builds the runner) never package or install another run's half-written bundle.
const stage = mkdtempSync(path.join(outDir, '.runner-'));
const vsix = path.join(outDir, 'exec-server-e2e-runner.vsix');
try {
  for (const f of ['package.json', 'README.md', '.vscodeignore']) copyFileSync(path.join(here, 'runner-ext', f), path.join(stage, f));
  await esbuild.build({ ...common, entryPoints: [path.join(here, 'runner-ext/src/extension.ts')], outfile: path.join(stage, 'dist/extension.js') });
  execFileSync(process.execPath, [path.join(repo, 'node_modules/@vscode/vsce/vsce'), 'package', '--no-dependencies',
    '--allow-missing-repository', '--skip-license', '-o', path.join(stage, 'runner.vsix')], { cwd: stage, stdio: ['ignore', 'ignore', 'inherit'] });
  // The suite alone (for .vscode-test.mjs), built after packaging so the VSIX does not hold it twice.
  await esbuild.build({ ...common, entryPoints: [path.join(here, 'suite/index.ts')], outfile: path.join(stage, 'suite.js') });
  renameSync(path.join(stage, 'suite.js'), path.join(outDir, 'suite.js'));
  renameSync(path.join(stage, 'runner.vsix'), vsix);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
console.log(vsix);
