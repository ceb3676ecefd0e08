// Attacks (docs/security.md, "Managed sandbox") on what a sandboxed command that runs unasked (writable roots inside the
// workspace) may write: a nested repository's `.git/config` (`core.fsmonitor` runs as soon as
// git looks there, outside the sandbox: VS Code's Git extension opens nested repositories by
// itself), its hooks, a worktree's gitfile target, the top-level `.git` when the agent's
// sandbox has no carve-outs at all, `.vscode` and `*.code-workspace`, and a file hard-linked to
// one outside the workspace (the bind mount writes through to the other name). Real bwrap;
// the same writes through fs/writeFile with the same managed sandbox.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, pathEntry, specialEntry, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { b64, serverWithTmpDir, startParams, uri, type Client } from '../../support/server';

let c: Client;
let dir: string;
let close: () => Promise<void>;
let W: string;
let O: string;

const git = (cwd: string, ...args: string[]) => {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
};

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
});
after(() => close());

/** A fresh workspace `name` (W) with everything an attacker aims at, and its outside twin (O). */
function workspace(name: string): void {
  W = path.join(dir, name, 'work');
  O = path.join(dir, name, 'outside');
  fs.mkdirSync(O, { recursive: true });
  fs.mkdirSync(path.join(W, 'vendor', 'sub'), { recursive: true });
  git(W, 'init', '-q');
  git(path.join(W, 'vendor', 'sub'), 'init', '-q'); // a nested repository
  fs.mkdirSync(path.join(W, 'meta', 'wt-gitdir'), { recursive: true });
  fs.writeFileSync(path.join(W, 'meta', 'wt-gitdir', 'config'), '[core]\n');
  fs.mkdirSync(path.join(W, 'wt'));
  fs.writeFileSync(path.join(W, 'wt', '.git'), 'gitdir: ../meta/wt-gitdir\n'); // a gitfile
  fs.mkdirSync(path.join(W, '.vscode'));
  fs.writeFileSync(path.join(W, '.vscode', 'settings.json'), '{}\n');
  fs.writeFileSync(path.join(W, 'app.code-workspace'), '{}\n');
  fs.writeFileSync(path.join(O, 'store-file.js'), 'original\n');
  fs.linkSync(path.join(O, 'store-file.js'), path.join(W, 'linked.js')); // as a pnpm store does
}

/** Every write the attacker tries; each line reports `<name> ok` or `<name> failed`. */
const ATTACK = [
  'try() { if eval "$2" 2>/dev/null; then echo "$1 ok"; else echo "$1 failed"; fi; }',
  'try nested-config \'printf "[core]\\n\\tfsmonitor = touch PWNED\\n" >> vendor/sub/.git/config\'',
  'try nested-hook \'echo "touch PWNED" > vendor/sub/.git/hooks/post-checkout\'',
  'try nested-move \'mv vendor/sub/.git vendor/sub/moved\'',
  'try nested-remove \'rm -rf vendor/sub/.git\'',
  'try gitfile \'echo "gitdir: /tmp/evil" > wt/.git\'',
  'try gitfile-target \'echo "[core] fsmonitor = x" >> meta/wt-gitdir/config\'',
  'try top-config \'echo "[core] fsmonitor = x" >> .git/config\'',
  'try vscode \'echo "{\\"x\\":1}" > .vscode/settings.json\'',
  'try vscode-new \'echo "{}" > .vscode/tasks.json\'',
  'try workspace-file \'echo "{}" > app.code-workspace\'',
  'try hardlink \'echo PWNED > linked.js\'',
  'try ordinary \'echo built > out.txt\'',
].join('\n');

function expectHeld(out: string): void {
  for (const name of ['nested-config', 'nested-hook', 'nested-move', 'nested-remove', 'gitfile', 'gitfile-target', 'top-config', 'vscode', 'vscode-new', 'workspace-file', 'hardlink']) {
    assert.match(out, new RegExp(`^${name} failed$`, 'm'), `${name} was written:\n${out}`);
  }
  assert.match(out, /^ordinary ok$/m, 'an ordinary workspace write still works');
  assert.doesNotMatch(fs.readFileSync(path.join(W, 'vendor', 'sub', '.git', 'config'), 'utf8'), /fsmonitor/);
  assert.ok(!fs.existsSync(path.join(W, 'vendor', 'sub', '.git', 'hooks', 'post-checkout')));
  assert.doesNotMatch(fs.readFileSync(path.join(W, 'meta', 'wt-gitdir', 'config'), 'utf8'), /fsmonitor/);
  assert.doesNotMatch(fs.readFileSync(path.join(W, '.git', 'config'), 'utf8'), /fsmonitor/);
  assert.equal(fs.readFileSync(path.join(W, 'wt', '.git'), 'utf8'), 'gitdir: ../meta/wt-gitdir\n');
  assert.equal(fs.readFileSync(path.join(W, '.vscode', 'settings.json'), 'utf8'), '{}\n');
  assert.equal(fs.readFileSync(path.join(O, 'store-file.js'), 'utf8'), 'original\n', 'the file outside the workspace was changed through its hard link');
}

async function run(id: string, sandbox: unknown): Promise<string> {
  await c.call('process/start', startParams(id, ['/bin/bash', '-c', ATTACK], { cwd: uri(W), sandbox }));
  await c.sink.waitFor(() => c.sink.closed(id), 30_000, `${id} closed`);
  return c.sink.outputText(id);
}

test('sandboxed attack: Codex\'s workspace-write sandbox (carve-outs only for <root>/.git) cannot write nested repositories, gitfiles, .vscode, *.code-workspace or hard-linked files', async () => {
  workspace('codex');
  const out = await run('cw1', managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W) }));
  expectHeld(out);
});

test('sandboxed attack: an agent-made sandbox with no carve-outs at all (root read, workspace write) cannot write the top-level .git either', async () => {
  workspace('bare');
  const out = await run('cw2', managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write')], cwd: uri(W) }));
  expectHeld(out);
});

test('sandboxed attack: an agent-made sandbox that denies an ancestor of the workspace (`none` on its parent, the workspace writable below it) does not switch the carve-outs off', async () => {
  workspace('deny-parent');
  // The carve-outs used to be dropped wherever any `none` rule contained them, whatever rule
  // decided there: a `none` on the workspace's parent removed every one of them.
  const out = await run('cw3', managedSandbox({ entries: [specialEntry('root', 'read'), pathEntry(uri(path.dirname(W)), 'none'), specialEntry('project_roots', 'write')], cwd: uri(W) }));
  expectHeld(out);
});

test('attack via fs/writeFile with the same managed sandbox: the same paths are read-only', async () => {
  workspace('fs');
  const sandbox = managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write')], cwd: uri(W) });
  for (const rel of ['vendor/sub/.git/config', 'meta/wt-gitdir/config', '.git/config', '.vscode/settings.json', 'app.code-workspace', 'linked.js']) {
    await assert.rejects(
      c.call('fs/writeFile', { path: path.join(W, rel), dataBase64: b64('PWNED'), sandbox }),
      (e: Error) => /Read-only file system/.test(e.message),
      `${rel} was writable through fs/writeFile`,
    );
  }
  await c.call('fs/writeFile', { path: path.join(W, 'plain.txt'), dataBase64: b64('ok'), sandbox });
  assert.equal(fs.readFileSync(path.join(W, 'plain.txt'), 'utf8'), 'ok');
  assert.equal(fs.readFileSync(path.join(O, 'store-file.js'), 'utf8'), 'original\n');
});
