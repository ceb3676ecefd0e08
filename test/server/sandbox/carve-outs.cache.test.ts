// The carve-out scan's per-directory cache (src/server/sandbox/carve-outs.ts) against a `.git`
// planted where the cache does not look: a directory whose mtime was put back after the plant
// (utimes, as a sandboxed command may do; the same as a second write within one clock tick of
// the first, which leaves the mtime as it was) must be read again; and the profile withCarveOuts
// keeps while its scans are the same must not outlive a change. docs/security.md, "Managed sandbox".
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { scanCarveOuts, withCarveOuts } from '../../../src/server/sandbox/carve-outs';
import { parseSandbox, type ManagedSandboxProfile } from '../../../src/server/sandbox/profile';
import { resolveProfile } from '../../../src/server/sandbox/resolve';
import { tempDir } from '../../support/tmp';
import { waitFor } from '../../support/wait';

const root = tempDir('carve-cache-');
after(() => fs.rmSync(root, { recursive: true, force: true }));

/** A scan of the next turn (scans are kept for the turn they ran in). */
const scanLater = () => new Promise<ReturnType<typeof scanCarveOuts>>((r) => setImmediate(() => r(scanCarveOuts(root))));

test('a .git planted in a cached directory whose mtime was put back is still found', async () => {
  const sub = path.join(root, 'sub');
  fs.mkdirSync(sub);
  fs.writeFileSync(path.join(sub, 'file'), 'x');
  const T = 1_700_000_000; // whole seconds: put back exactly
  fs.utimesSync(sub, T, T);
  assert.equal((await scanLater()).paths.includes(path.join(sub, '.git')), false);
  fs.mkdirSync(path.join(sub, '.git'));
  fs.writeFileSync(path.join(sub, '.git', 'config'), '[core]\n\tfsmonitor = "touch /tmp/pwned"\n');
  fs.utimesSync(sub, T, T);
  assert.equal(fs.statSync(sub).mtimeMs, T * 1000, 'the mtime is what the cache saw');
  // Before: the cache trusted the unchanged mtime and inode, and the new .git stayed writable.
  assert.ok((await scanLater()).paths.includes(path.join(sub, '.git')), 'the planted .git is carved out');
});

test('a directory changed within the last 2 s is read at every scan; once settled it comes from the cache', async () => {
  const tree = path.join(root, 'tree');
  for (let i = 0; i < 5; i++) fs.mkdirSync(path.join(tree, `d${i}`), { recursive: true });
  const reads: string[] = [];
  const readdirSync = fs.readdirSync;
  (fs as { readdirSync: unknown }).readdirSync = (p: fs.PathLike, ...rest: unknown[]) => {
    reads.push(String(p));
    return (readdirSync as (...a: unknown[]) => unknown)(p, ...rest);
  };
  try {
    const scanTree = () => new Promise<void>((r) => setImmediate(() => (scanCarveOuts(tree), r())));
    await scanTree();
    reads.length = 0;
    await scanTree();
    // Just made: not trusted yet (a change in the same tick would leave the times as they are).
    assert.equal(reads.length, 6, `every fresh directory read again: ${reads.join(' ')}`);
    const settledAt = Date.now() + 2_100;
    await waitFor(() => Date.now() > settledAt, { what: 'the tree to settle', interval: 100 });
    await scanTree(); // read once more, now settled
    reads.length = 0;
    fs.mkdirSync(path.join(tree, 'd3', '.git'));
    await scanTree();
    assert.deepEqual(reads, [path.join(tree, 'd3')], 'only the changed directory is read');
  } finally {
    (fs as { readdirSync: unknown }).readdirSync = readdirSync;
  }
});

test('withCarveOuts keeps its profile while nothing below the roots changed, and a .git made since is in the next one', async () => {
  const tree = fs.realpathSync(tempDir('carve-memo-'));
  fs.mkdirSync(path.join(tree, 'a', 'b'), { recursive: true });
  fs.mkdirSync(path.join(tree, 'c', '.git'), { recursive: true });
  const sb = managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: pathToFileURL(tree).href });
  const prof = resolveProfile(parseSandbox(sb, { cwd: tree, tmpDir: os.tmpdir() }) as ManagedSandboxProfile);
  const later = () => new Promise<ReturnType<typeof withCarveOuts>>((r) => setImmediate(() => r(withCarveOuts(prof))));
  const settledAt = Date.now() + 2_100;
  await waitFor(() => Date.now() > settledAt, { what: 'the tree to settle', interval: 100 });
  const first = await later();
  const second = await later();
  assert.ok(first.profile.readOnlyCarveouts.includes(path.join(tree, 'c', '.git')));
  assert.equal(second, first, 'the same answer, not built again');
  fs.mkdirSync(path.join(tree, 'a', 'b', '.git'));
  const third = await later();
  assert.notEqual(third, first);
  assert.ok(third.profile.readOnlyCarveouts.includes(path.join(tree, 'a', 'b', '.git')), 'the new .git is carved out');
  fs.rmSync(tree, { recursive: true, force: true });
});
