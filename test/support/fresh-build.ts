// Rebuilds dist/cli.js when any file under src/ is newer than it, so these tests always run
// the CLI built from the tree under test (not a stale bundle). Safe while other test files run:
// esbuild.mjs renames each finished bundle over the old one, so a CLI started during the rebuild
// loads either the old or the new bundle, never a truncated one.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { cliPath, repoRoot } from './cli-servers';

function newestMtime(dir: string): number {
  let newest = 0;
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = statSync(p);
    newest = Math.max(newest, st.isDirectory() ? newestMtime(p) : st.mtimeMs);
  }
  return newest;
}

export function ensureFreshBuild(): void {
  let built = 0;
  try {
    built = statSync(cliPath).mtimeMs;
  } catch {
    // not built yet
  }
  if (built > newestMtime(path.join(repoRoot, 'src'))) return;
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'esbuild.mjs')], { cwd: repoRoot, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`build failed: ${r.stderr}`);
}
