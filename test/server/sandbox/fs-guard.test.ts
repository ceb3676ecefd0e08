// fs/* under a managed sandbox (src/server/sandbox/fs-guard.ts), written as the attacks a
// sandboxed agent would try: symlinks out of the writable root (to /, to $HOME, dangling),
// `..` and percent-encoded segments, the protected .git, `none` paths. Errors must have the
// reference's shape (measured: EROFS → -32603, EACCES → -32600, ENOENT → -32004).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { managedSandbox, pathEntry, specialPath, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { after, before, test } from 'node:test';
import { b64, rejectsWith, serverWithTmpDir, uri, unb64, type Client } from '../../support/server';
import { spawnTied } from '../../support/process';

let c: Client;
let dir: string;
let close: () => Promise<void>;
let W: string; // the writable workspace
let O: string; // outside every writable root (also not under a writable /tmp: no slash_tmp rule)
let S: string; // access none

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
  W = path.join(dir, 'work');
  O = path.join(dir, 'outside');
  S = path.join(dir, 'secret');
  for (const d of [W, O, S, path.join(W, '.git'), path.join(W, 'sub')]) fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(O, 'victim.txt'), 'original');
  fs.writeFileSync(path.join(S, 'key'), 'top secret');
  fs.writeFileSync(path.join(W, '.git', 'config'), '[core]');
  fs.symlinkSync('/', path.join(W, 'to-root'));
  fs.symlinkSync(os.homedir(), path.join(W, 'to-home'));
  fs.symlinkSync(O, path.join(W, 'to-outside'));
  fs.symlinkSync(path.join(O, 'created-through-dangling-link'), path.join(W, 'dangling'));
  fs.symlinkSync(S, path.join(W, 'to-secret'));
});
after(() => close());

/** Codex's workspace-write shape, minus /tmp (the test dirs live there), plus a `none` path. */
function sandbox() {
  return managedSandbox({
    entries: [...workspaceWriteEntries({ slashTmp: false, protectedSubpaths: ['.git'] }), pathEntry(uri(S), 'none')],
    cwd: uri(W),
  });
}
const write = (p: string, data = 'pwned') => c.call('fs/writeFile', { path: p, dataBase64: b64(data), sandbox: sandbox() });
const EROFS = 'Read-only file system (os error 30)';
const EACCES = 'Permission denied (os error 13)';

test('sandbox fs: writes inside the workspace work (control)', async () => {
  await write(uri(path.join(W, 'ok.txt')), 'fine');
  assert.equal(fs.readFileSync(path.join(W, 'ok.txt'), 'utf8'), 'fine');
  await c.call('fs/createDirectory', { path: uri(path.join(W, 'a/b/c')), sandbox: sandbox() });
  await c.call('fs/copy', { sourcePath: uri(path.join(W, 'ok.txt')), destinationPath: uri(path.join(W, 'ok2.txt')), recursive: false, sandbox: sandbox() });
  await c.call('fs/rename', { sourcePath: uri(path.join(W, 'ok2.txt')), destinationPath: uri(path.join(W, 'ok3.txt')), sandbox: sandbox() });
  await c.call('fs/remove', { path: uri(path.join(W, 'ok3.txt')), sandbox: sandbox() });
  // Removing a symlink that points outside removes the link, not the target.
  fs.symlinkSync(O, path.join(W, 'rm-me'));
  await c.call('fs/remove', { path: uri(path.join(W, 'rm-me')), sandbox: sandbox() });
  assert.ok(fs.existsSync(path.join(O, 'victim.txt')));
  // Reading outside the writable roots is allowed (root: read).
  assert.equal(unb64((await c.call('fs/readFile', { path: uri(path.join(O, 'victim.txt')), sandbox: sandbox() })).dataBase64), 'original');
});

test('sandbox fs: a write outside the writable roots is refused with the reference\'s EROFS error', async () => {
  await rejectsWith(write(uri(path.join(O, 'victim.txt'))), -32603, EROFS);
  await rejectsWith(c.call('fs/createDirectory', { path: uri(path.join(O, 'newdir')), sandbox: sandbox() }), -32603, EROFS);
  await rejectsWith(c.call('fs/remove', { path: uri(path.join(O, 'victim.txt')), sandbox: sandbox() }), -32603, EROFS);
  await rejectsWith(
    c.call('fs/copy', { sourcePath: uri(path.join(W, '.git', 'config')), destinationPath: uri(path.join(O, 'copy')), recursive: false, sandbox: sandbox() }),
    -32603,
    EROFS,
  );
  await rejectsWith(
    c.call('fs/rename', { sourcePath: uri(path.join(O, 'victim.txt')), destinationPath: uri(path.join(W, 'stolen')), sandbox: sandbox() }),
    -32603,
    EROFS,
  );
  // Below a missing directory: ENOENT, as the reference (its helper fails to open first).
  await rejectsWith(write(uri(path.join(O, 'nodir', 'x'))), -32004, 'No such file or directory (os error 2)');
  assert.equal(fs.readFileSync(path.join(O, 'victim.txt'), 'utf8'), 'original');
  assert.deepEqual(fs.readdirSync(O), ['victim.txt']);
});

test('sandbox fs attack: symlinks inside the workspace to /, $HOME, outside, and a dangling one', async () => {
  await rejectsWith(write(uri(path.join(W, 'to-root', O.slice(1), 'victim.txt'))), -32603, EROFS);
  await rejectsWith(write(uri(path.join(W, 'to-home', '.exec-server-sandbox-pwned'))), -32603, EROFS);
  await rejectsWith(write(uri(path.join(W, 'to-outside', 'victim.txt'))), -32603, EROFS);
  await rejectsWith(write(uri(path.join(W, 'dangling'))), -32603, EROFS);
  await rejectsWith(c.call('fs/createDirectory', { path: uri(path.join(W, 'to-outside', 'd')), sandbox: sandbox() }), -32603, EROFS);
  await rejectsWith(c.call('fs/remove', { path: uri(path.join(W, 'to-outside', 'victim.txt')), sandbox: sandbox() }), -32603, EROFS);
  await rejectsWith(
    c.call('fs/copy', { sourcePath: uri(path.join(W, 'ok.txt')), destinationPath: uri(path.join(W, 'to-outside', 'c')), recursive: false, sandbox: sandbox() }),
    -32603,
    EROFS,
  );
  assert.equal(fs.readFileSync(path.join(O, 'victim.txt'), 'utf8'), 'original');
  assert.equal(fs.existsSync(path.join(O, 'created-through-dangling-link')), false);
  assert.equal(fs.existsSync(path.join(os.homedir(), '.exec-server-sandbox-pwned')), false);
  assert.deepEqual(fs.readdirSync(O), ['victim.txt']);
});

test('sandbox fs attack: `..` and percent-encoded segments cannot climb out', async () => {
  const rel = path.relative(W, path.join(O, 'victim.txt')); // ../outside/victim.txt
  await rejectsWith(write(`${uri(W)}/${rel}`), -32603, EROFS);
  await rejectsWith(write(`${uri(W)}/%2E%2E/outside/victim.txt`), -32603, EROFS);
  await rejectsWith(write(`${uri(W)}/%2e%2e/%2e%2e/${path.basename(dir)}/outside/victim.txt`), -32603, EROFS);
  // An encoded slash is not a separator: refused as an invalid path, nothing written.
  await assert.rejects(write(`${uri(W)}/..%2Foutside%2Fvictim.txt`));
  assert.equal(fs.readFileSync(path.join(O, 'victim.txt'), 'utf8'), 'original');
});

test('sandbox fs: the protected .git stays read-only inside the writable root (also as part of a tree)', async () => {
  await rejectsWith(write(uri(path.join(W, '.git', 'config'))), -32603, EROFS);
  await rejectsWith(write(uri(path.join(W, '.git', 'hooks-pre-commit'))), -32603, EROFS);
  await rejectsWith(c.call('fs/remove', { path: uri(path.join(W, '.git')), sandbox: sandbox() }), -32603, EROFS);
  // Removing or moving a tree that contains .git would take .git with it.
  await rejectsWith(c.call('fs/remove', { path: uri(W), recursive: true, sandbox: sandbox() }), -32603, EROFS);
  await rejectsWith(c.call('fs/rename', { sourcePath: uri(path.join(W, '.git')), destinationPath: uri(path.join(W, 'g2')), sandbox: sandbox() }), -32603, EROFS);
  assert.equal(fs.readFileSync(path.join(W, '.git', 'config'), 'utf8'), '[core]');
});

test('sandbox fs: `none` paths cannot be read, listed, opened or copied — directly or through a link', async () => {
  for (const p of [path.join(S, 'key'), path.join(W, 'to-secret', 'key')]) {
    await rejectsWith(c.call('fs/readFile', { path: uri(p), sandbox: sandbox() }), -32600, EACCES);
    await rejectsWith(c.call('fs/getMetadata', { path: uri(p), sandbox: sandbox() }), -32600, EACCES);
    await rejectsWith(c.call('fs/open', { handleId: 'h1', path: uri(p), sandbox: sandbox() }), -32600, EACCES);
    await rejectsWith(
      c.call('fs/copy', { sourcePath: uri(p), destinationPath: uri(path.join(W, 'leak')), recursive: false, sandbox: sandbox() }),
      -32600,
      EACCES,
    );
  }
  await rejectsWith(c.call('fs/readDirectory', { path: uri(S), sandbox: sandbox() }), -32600, EACCES);
  await rejectsWith(c.call('fs/canonicalize', { path: uri(path.join(S, 'key')), sandbox: sandbox() }), -32600, EACCES);
  await rejectsWith(
    c.call('fs/walk', { path: uri(S), options: { maxDepth: 4, maxDirectories: 10, maxEntries: 10, followDirectorySymlinks: false }, sandbox: sandbox() }),
    -32600,
    EACCES,
  );
  // Copying a tree that contains the secret is a read of it.
  await rejectsWith(c.call('fs/copy', { sourcePath: uri(dir), destinationPath: uri(path.join(W, 'all')), recursive: true, sandbox: sandbox() }), -32600, EACCES);
  assert.equal(fs.existsSync(path.join(W, 'leak')), false);
  assert.equal(fs.existsSync(path.join(W, 'all')), false);
});

test('sandbox fs: read-only profile (Codex default) refuses every write; sandbox null/disabled unchanged', async () => {
  const ro = { ...sandbox(), permissions: { type: 'managed', file_system: { type: 'restricted', entries: [{ path: specialPath('root'), access: 'read' }] }, network: 'restricted' } };
  await rejectsWith(c.call('fs/writeFile', { path: uri(path.join(W, 'ro.txt')), dataBase64: b64('x'), sandbox: ro }), -32603, EROFS);
  assert.equal(fs.existsSync(path.join(W, 'ro.txt')), false);
  await c.call('fs/writeFile', { path: uri(path.join(O, 'free.txt')), dataBase64: b64('x'), sandbox: null });
  await c.call('fs/writeFile', { path: uri(path.join(O, 'free2.txt')), dataBase64: b64('x'), sandbox: { permissions: { type: 'disabled' } } });
  assert.ok(fs.existsSync(path.join(O, 'free.txt')) && fs.existsSync(path.join(O, 'free2.txt')));
  fs.rmSync(path.join(O, 'free.txt'));
  fs.rmSync(path.join(O, 'free2.txt'));
});

test('sandbox fs: policyContext supplies the workspace roots when the sandbox has none (apply_patch shape)', async () => {
  const sb: Record<string, unknown> = { ...sandbox() };
  delete sb.workspaceRoots;
  delete sb.cwd;
  await c.call('fs/writeFile', { path: uri(path.join(W, 'patched.txt')), dataBase64: b64('x'), sandbox: sb, policyContext: { cwd: uri(W), workspaceRoots: [uri(W)] } });
  assert.ok(fs.existsSync(path.join(W, 'patched.txt')));
  await rejectsWith(
    c.call('fs/writeFile', { path: uri(path.join(O, 'x')), dataBase64: b64('x'), sandbox: sb, policyContext: { cwd: uri(W), workspaceRoots: [uri(W)] } }),
    -32603,
    EROFS,
  );
});

test('followSymlinks: false (Codex\'s approved unsandboxed retry) never passes through a link — the reference\'s errors', async () => {
  const F = path.join(dir, 'nofollow');
  fs.mkdirSync(path.join(F, 'real'), { recursive: true });
  fs.symlinkSync(O, path.join(F, 'dirlink'));
  fs.symlinkSync(path.join(O, 'victim.txt'), path.join(F, 'filelink'));
  fs.symlinkSync(path.join(O, 'dangling-target'), path.join(F, 'dangling'));
  const w = (p: string) => c.call('fs/writeFile', { path: uri(p), dataBase64: b64('escaped'), sandbox: null, followSymlinks: false });
  const ENOTDIR = 'Not a directory (os error 20)';
  const ELOOP = 'Symbolic link loop (os error 40)';
  await rejectsWith(w(path.join(F, 'dirlink', 'x')), -32603, ENOTDIR);
  await rejectsWith(w(path.join(F, 'filelink')), -32603, ELOOP);
  await rejectsWith(w(path.join(F, 'dangling')), -32603, ELOOP);
  await rejectsWith(c.call('fs/readFile', { path: uri(path.join(F, 'filelink')), followSymlinks: false }), -32603, ELOOP);
  await rejectsWith(c.call('fs/createDirectory', { path: uri(path.join(F, 'dirlink', 'd')), followSymlinks: false }), -32603, ENOTDIR);
  await rejectsWith(c.call('fs/createDirectory', { path: uri(path.join(F, 'dirlink')), followSymlinks: false }), -32603, ENOTDIR);
  await rejectsWith(c.call('fs/getMetadata', { path: uri(path.join(F, 'dirlink', 'victim.txt')), followSymlinks: false }), -32603, ENOTDIR);
  await rejectsWith(c.call('fs/remove', { path: uri(path.join(F, 'dirlink', 'victim.txt')), recursive: false, followSymlinks: false }), -32603, ENOTDIR);
  await rejectsWith(c.call('fs/remove', { path: uri(path.join(F, 'dirlink')), recursive: false, followSymlinks: false }), -32600, 'path contains a symbolic link');
  await rejectsWith(c.call('fs/remove', { path: uri(path.join(F, 'real')), followSymlinks: false }), -32603, 'recursive no-follow removal is unsupported');
  await w(path.join(F, 'real', 'y'));
  await rejectsWith(c.call('fs/writeFile', { path: uri(path.join(F, 'real', 'z')), dataBase64: '', followSymlinks: 'no' }), -32602, 'invalid type: string "no", expected a boolean');
  assert.equal(fs.readFileSync(path.join(O, 'victim.txt'), 'utf8'), 'original');
  assert.equal(fs.existsSync(path.join(O, 'x')) || fs.existsSync(path.join(O, 'd')) || fs.existsSync(path.join(O, 'dangling-target')), false);
  // Without links it writes as usual; followSymlinks true/null/absent follow them.
  assert.equal(fs.readFileSync(path.join(F, 'real', 'y'), 'utf8'), 'escaped');
  await c.call('fs/writeFile', { path: uri(path.join(F, 'dirlink', 'followed')), dataBase64: b64('ok'), followSymlinks: true });
  assert.ok(fs.existsSync(path.join(O, 'followed')));
  fs.rmSync(path.join(O, 'followed'));
});

test('sandbox fs attack: fs/walk does not list a `none` directory reached inside the tree or through a followed link', async () => {
  const opts = { maxDepth: 4, maxDirectories: 100, maxEntries: 1000, followDirectorySymlinks: true };
  const r = await c.call('fs/walk', { path: uri(dir), options: opts, sandbox: sandbox() });
  const paths: string[] = r.entries.map((e: { path: string }) => e.path);
  assert.ok(!paths.some((p) => p.includes('/secret/key') || p.includes('/to-secret/key')), JSON.stringify(paths));
  assert.ok(paths.includes(uri(path.join(W, 'ok.txt'))));
  const denied = r.errors.filter((e: { message: string }) => e.message === EACCES).map((e: { path: string }) => e.path);
  assert.ok(denied.includes(uri(S)), JSON.stringify(r.errors)); // W/to-secret leads to the same (already visited) directory
  // Walking from the link itself: its target is refused at the root.
  await rejectsWith(c.call('fs/walk', { path: uri(path.join(W, 'to-secret')), options: opts, sandbox: sandbox() }), -32600, EACCES);
  // Without a sandbox the same walk lists the key (the check above is what hides it).
  const free = await c.call('fs/walk', { path: uri(dir), options: opts });
  assert.ok(free.entries.some((e: { path: string }) => e.path.endsWith('/secret/key')));
});

test('sandbox fs attack: a directory swapped for a symlink between check and write never lets a write out (TOCTOU race)', async () => {
  const R = path.join(dir, 'race');
  const target = path.join(dir, 'race-outside');
  fs.mkdirSync(R);
  fs.mkdirSync(target);
  fs.writeFileSync(path.join(target, 'victim.txt'), 'original');
  // A concurrent process flips R/flip between a real directory and a link to the outside.
  const flipper = spawnTied('/bin/sh', ['-c', `cd ${R} && while :; do mkdir flip 2>/dev/null; rm -rf flip; ln -s ${target} flip; rm -f flip; done`], { stdio: 'ignore' });
  const sb = { ...sandbox(), workspaceRoots: [uri(R)] };
  let wrote = 0;
  try {
    for (let i = 0; i < 3000; i++) {
      try {
        await c.call('fs/writeFile', { path: uri(path.join(R, 'flip', 'victim.txt')), dataBase64: b64('pwned'), sandbox: sb });
        wrote++;
      } catch {
        // refused or raced away: fine
      }
    }
  } finally {
    flipper.kill('SIGKILL');
  }
  assert.ok(wrote > 0, 'some writes landed in the real directory (the race was live)');
  assert.equal(fs.readFileSync(path.join(target, 'victim.txt'), 'utf8'), 'original');
  assert.deepEqual(fs.readdirSync(target), ['victim.txt']);
});

test('sandbox fs: a dangling link inside the workspace to a new file inside it is written through (control for the verified write)', async () => {
  fs.symlinkSync(path.join(W, 'created-by-link.txt'), path.join(W, 'inner-dangling'));
  await c.call('fs/writeFile', { path: uri(path.join(W, 'inner-dangling')), dataBase64: b64('through'), sandbox: sandbox() });
  assert.equal(fs.readFileSync(path.join(W, 'created-by-link.txt'), 'utf8'), 'through');
  // Overwrite of an existing file truncates as before.
  await c.call('fs/writeFile', { path: uri(path.join(W, 'created-by-link.txt')), dataBase64: b64('x'), sandbox: sandbox() });
  assert.equal(fs.readFileSync(path.join(W, 'created-by-link.txt'), 'utf8'), 'x');
});
