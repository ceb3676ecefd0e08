// Attack on capabilityRoots/discoverV1 under a managed sandbox (capabilityDiscoverySandbox): a
// process that can write inside the root races the scan to make it read a hidden directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { managedSandbox, pathEntry, specialEntry } from '../../../src/protocol/codex-sandbox';
import { ourServer } from '../../support/reference';
import { exchange, initialized } from '../../support/wire';
import { spawnTied } from '../../support/process';

const cacheDir = process.env.EXEC_SERVER_CACHE ?? path.join(os.homedir(), '.cache', 'exec-server');

test('capabilityRoots/discoverV1 under a sandbox: a directory swapped for a link to a hidden one mid-scan never leaks it', async (t) => {
  // The attacker: a process that can write inside the root flips `skills/flip` between a real
  // directory and a symlink to the hidden `secret` while discovery runs. Judging the path and
  // then reading it would race; judging the opened descriptor cannot.
  const ws = path.join(cacheDir, `caproots-race-${randomBytes(4).toString('hex')}`);
  const secretDir = path.join(ws, 'secret');
  mkdirSync(path.join(secretDir, 's'), { recursive: true });
  writeFileSync(path.join(secretDir, 's', 'SKILL.md'), 'SECRET\n');
  writeFileSync(path.join(secretDir, 'SKILL.md'), 'SECRET\n');
  const root = path.join(ws, 'root');
  const flip = path.join(root, 'skills', 'flip');
  mkdirSync(path.join(flip, 's'), { recursive: true });
  // The decoy has the same names as the hidden directory: a check by path then lands on it.
  writeFileSync(path.join(flip, 's', 'SKILL.md'), 'decoy\n');
  writeFileSync(path.join(flip, 'SKILL.md'), 'decoy\n');
  const u = (p: string) => pathToFileURL(p).href;
  const { permissions } = managedSandbox({ entries: [specialEntry('root', 'read'), pathEntry(u(secretDir), 'none')], cwd: u(root) });
  const sandbox = { permissions, windowsSandboxLevel: 'disabled' };
  // A tight perl loop (a rename is atomic: the name is always the directory or the link; a
  // shell loop of mv processes flips too slowly to hit a path-then-read window).
  const script = 'chdir $ARGV[0] or die; symlink($ARGV[1], "link") or die; while (1) { rename("flip","real"); rename("link","flip"); rename("flip","link"); rename("real","flip"); }';
  const flipper = spawnTied('perl', ['-e', script, path.dirname(flip), secretDir], { stdio: 'ignore' });
  t.after(async () => {
    flipper.kill('SIGKILL');
    if (flipper.exitCode === null && flipper.signalCode === null) await new Promise((r) => flipper.once('exit', r));
    rmSync(ws, { recursive: true, force: true });
  });
  const batches: object[][] = [];
  for (let i = 0; i < 30; i++) batches.push([{ id: 100 + i, method: 'capabilityRoots/discoverV1', params: { roots: Array.from({ length: 8 }, (_, k) => ({ id: `r${k}`, path: u(root), sandbox })) } }]);
  const replies = await exchange(ourServer, [...initialized([]), ...batches]);
  let decoys = 0;
  for (let i = 0; i < 30; i++) {
    const text = JSON.stringify(replies.get(100 + i));
    assert.ok(!text.includes('SECRET'), `round ${i}: the hidden file was answered: ${text.slice(0, 300)}`);
    if (text.includes('decoy')) decoys++;
  }
  assert.ok(decoys > 0, 'the scan did see the real directory in some rounds (the race was live)');
});
