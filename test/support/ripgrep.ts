// ripgrep for the search tests: the one on PATH, else the one the reference codex ships
// (installed by npm test's install stage), so the rg paths are tested on a fresh machine too.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { referenceCodexBinary } from './codex/codex-app-server';

const repoRoot = path.resolve(__dirname, '../../..');

export function findRg(): string {
  const onPath = spawnSync('sh', ['-c', 'command -v rg'], { encoding: 'utf8' }).stdout.trim();
  if (onPath) return onPath;
  const bundled = path.join(path.dirname(referenceCodexBinary(repoRoot)), '..', 'codex-path', 'rg');
  if (!existsSync(bundled)) throw new Error(`no ripgrep: not on PATH and not at ${bundled}`);
  return bundled;
}
