// Attacks (docs/security.md, "Managed sandbox") by a sandboxed command that runs unasked on what did NOT exist when its
// sandbox started, so no read-only carve-out covers it: a new nested repository (`git init sub`,
// then `core.fsmonitor` in its config), a new directory holding a gitfile that names a gitdir
// the command prepared elsewhere, a repository made under another name and renamed to `.git`,
// a new top-level `.vscode/` (tasks that run on folder open), a new `*.code-workspace`. Code
// planted there runs OUTSIDE the sandbox as soon as git looks (VS Code's Git extension opens a
// repository that appears in the workspace by itself, ~0.5 s after its file watcher saw it,
// and runs `git status`). The victim here is exactly that: `git status` on the host, run
// while the command is still alive, 0.5 s after the command says it planted everything.
// Real bwrap, Codex's own workspace-write sandbox.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { forgetTurnScans, scanCarveOuts } from '../../../src/server/sandbox/carve-outs';
import { guardSandbox, guardTiming } from '../../../src/server/sandbox/plant-guard';
import { serverWithTmpDir, startParams, uri, type Client } from '../../support/server';
import { tempDir } from '../../support/tmp';
import { waitFor } from '../../support/wait';

let c: Client;
let dir: string;
let close: () => Promise<void>;

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
});
after(() => close());

const git = (cwd: string, ...args: string[]) => spawnSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CEILING_DIRECTORIES: path.dirname(cwd) } });

function workspace(name: string): { W: string; O: string } {
  const W = path.join(dir, name, 'work');
  const O = path.join(dir, name, 'outside');
  fs.mkdirSync(W, { recursive: true });
  fs.mkdirSync(O, { recursive: true });
  assert.equal(git(W, 'init', '-q').status, 0);
  fs.writeFileSync(path.join(W, 'README'), 'hello\n');
  return { W, O };
}

const sandboxFor = (W: string) => managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W) });

/** Each plant: the script that makes it, and the protected entry it leaves in the workspace. */
function plants(O: string): { tag: string; script: string; entry: string; repo?: string }[] {
  const hook = (tag: string) => `touch ${O}/PWNED-${tag}`;
  return [
    // A new nested repository with an fsmonitor hook.
    { tag: 'nested', entry: 'sub/.git', repo: 'sub', script: `git init -q sub && printf '[core]\\n\\tfsmonitor = "${hook('nested')}"\\n' >> sub/.git/config` },
    // A gitfile in a new directory, naming a gitdir prepared under a harmless name.
    {
      tag: 'gitfile',
      entry: 'wt/.git',
      repo: 'wt',
      script: `git init -q --bare prep/gd && printf '[core]\\n\\tbare = false\\n\\tfsmonitor = "${hook('gitfile')}"\\n' >> prep/gd/config && mkdir -p wt && echo "gitdir: $PWD/prep/gd" > wt/.git`,
    },
    // A repository made under a harmless name (`ren/x`), renamed to `ren/.git` in one step.
    { tag: 'rename', entry: 'ren/.git', repo: 'ren', script: `git init -q --bare ren/x && printf '[core]\\n\\tbare = false\\n\\tfsmonitor = "${hook('rename')}"\\n' >> ren/x/config && mv ren/x ren/.git` },
    // The workspace had no .vscode: tasks that run when the folder opens.
    { tag: 'vscode', entry: '.vscode', script: `mkdir -p .vscode && echo '{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"${hook('task')}","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json` },
    // A new workspace file.
    { tag: 'workspace', entry: 'evil.code-workspace', script: `echo '{"folders":[{"path":"."}],"settings":{"git.path":"/tmp/evil"}}' > evil.code-workspace` },
  ];
}

const env = (O: string) => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: O });

for (const i of [0, 1, 2, 3, 4]) {
  const tag = plants('/x')[i].tag;
  test(`sandboxed attack (${tag}): ${tag === 'vscode' ? 'a new .vscode' : tag === 'workspace' ? 'a new *.code-workspace' : 'a new .git'} planted by an unasked command is moved aside at once, the command stopped, and no code of it runs outside the sandbox`, async () => {
    const { W, O } = workspace(`plant-${tag}`);
    const plant = plants(O)[i];
    const id = `plant-${tag}`;
    const script = ['set +e', `echo ordinary > ordinary.txt`, plant.script, 'echo planted', 'sleep 8', 'echo survived'].join('\n');
    const t0 = Date.now();
    await c.call('process/start', startParams(id, ['/bin/bash', '-c', script], { cwd: uri(W), sandbox: sandboxFor(W), env: env(O) }));
    // The victim: what VS Code's Git extension does 0.5 s after a repository appears.
    const victim = () => {
      if (plant.repo && fs.existsSync(path.join(W, plant.repo))) git(path.join(W, plant.repo), 'status', '--porcelain');
    };
    let planted = false;
    await waitFor(() => (planted = /planted/.test(c.sink.outputText(id))) || c.sink.closed(id), { timeout: 30_000, what: 'the planting to finish' });
    if (planted) {
      await new Promise((r) => setTimeout(r, 500)); // the Git extension's debounce
      victim();
    }
    await c.sink.waitFor(() => c.sink.closed(id), 40_000, `${id} closed`);
    victim(); // and once more after it is gone
    const pwned = fs.readdirSync(O).filter((n) => n.startsWith('PWNED'));
    assert.deepEqual(pwned, [], `code planted by the sandboxed command ran outside it: ${pwned.join(', ')}`);
    assert.ok(!fs.existsSync(path.join(W, plant.entry)), `${plant.entry} is still in the workspace`);
    assert.ok(fs.existsSync(path.join(W, `${plant.entry}.exec-server-quarantine`)), 'it was moved aside, not deleted');
    const out = c.sink.outputText(id);
    assert.doesNotMatch(out, /survived/, 'the command that planted it was stopped');
    assert.ok(Date.now() - t0 < 7_000, 'stopped well before its sleep ended');
    const exited = c.sink.forProcess(id).find((e) => e.method === 'process/exited');
    assert.equal(exited?.params.sandboxDenied, true, 'its exit says the sandbox stopped it');
    assert.ok(out.includes(`created ${path.join(W, plant.entry)}`), `the command (and the agent reading it) is told why:\n${out}`);
    assert.equal(fs.readFileSync(path.join(W, 'ordinary.txt'), 'utf8'), 'ordinary\n', 'ordinary writes before it were kept');
  });
}

test('sandboxed attack: a command that re-creates .git as fast as it can after each quarantine is stopped at the first one', async () => {
  const { W, O } = workspace('loop');
  const id = 'plant2';
  const script = [
    `for i in $(seq 1 300); do git init -q loop 2>/dev/null; printf '[core]\\n\\tfsmonitor = "touch ${O}/PWNED-loop"\\n' >> loop/.git/config 2>/dev/null; done`,
    'echo survived',
  ].join('\n');
  await c.call('process/start', startParams(id, ['/bin/bash', '-c', script], { cwd: uri(W), sandbox: sandboxFor(W), env: env(O) }));
  await c.sink.waitFor(() => c.sink.closed(id), 60_000, `${id} closed`);
  git(path.join(W, 'loop'), 'status', '--porcelain');
  assert.ok(!fs.existsSync(path.join(W, 'loop', '.git')), 'loop/.git is still there');
  assert.doesNotMatch(c.sink.outputText(id), /survived/);
  assert.deepEqual(fs.readdirSync(O).filter((n) => n.startsWith('PWNED')), []);
});

test('an ordinary sandboxed command (build output, new directories) is not stopped, and what the user creates while no sandbox runs is left alone', async () => {
  const { W } = workspace('plain');
  const id = 'plain1';
  await c.call('process/start', startParams(id, ['/bin/bash', '-c', 'mkdir -p build/obj && echo x > build/obj/a.o && echo gitignore > .gitignore && echo done'], { cwd: uri(W), sandbox: sandboxFor(W) }));
  await c.sink.waitFor(() => c.sink.closed(id), 30_000, `${id} closed`);
  assert.match(c.sink.outputText(id), /done/);
  const exited = c.sink.forProcess(id).find((e) => e.method === 'process/exited');
  assert.equal(exited?.params.exitCode, 0);
  assert.equal(exited?.params.sandboxDenied, false);
  // The user, not a sandbox: kept. The guard (lingering on these directories, this process)
  // hears of both in the same inotify read as this test's own watches; a move it would make
  // then is done one turn later (its flush is a setImmediate).
  const seen = new Set<string>();
  const watches = [fs.watch(W, (_e, n) => n && seen.add(String(n))), fs.watch(path.join(W, 'build'), (_e, n) => n && seen.add(`build/${n}`))];
  try {
    fs.mkdirSync(path.join(W, '.vscode'));
    assert.equal(git(path.join(W, 'build'), 'init', '-q').status, 0);
    await waitFor(() => seen.has('.vscode') && seen.has('build/.git'), { what: 'the watch events of .vscode and build/.git' });
  } finally {
    for (const w of watches) w.close();
  }
  for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r));
  assert.ok(fs.existsSync(path.join(W, '.vscode')) && fs.existsSync(path.join(W, 'build', '.git')), 'left alone while no sandbox runs');
  // The next sandboxed command here is the guard's next look (its start scans the root, its end
  // looks again): what the guard would take for a plant is moved by the time it closed.
  await c.call('process/start', startParams('plain2', ['/bin/bash', '-c', 'echo again'], { cwd: uri(W), sandbox: sandboxFor(W) }));
  await c.sink.waitFor(() => c.sink.closed('plain2'), 30_000, 'plain2 closed');
  assert.equal(c.sink.forProcess('plain2').find((e) => e.method === 'process/exited')?.params.sandboxDenied, false, 'the next command was not stopped for them');
  assert.ok(fs.existsSync(path.join(W, '.vscode')));
  assert.ok(fs.existsSync(path.join(W, 'build', '.git')));
  assert.deepEqual([...fs.readdirSync(W), ...fs.readdirSync(path.join(W, 'build'))].filter((n) => n.includes('quarantine')), [], 'nothing was moved aside');
});

test('sandboxed attack: an existing nested repository moved away and a new .git planted at its old path is still caught (known by identity, not by path)', async () => {
  const { W, O } = workspace('swap');
  fs.mkdirSync(path.join(W, 'vendor', 'sub'), { recursive: true });
  assert.equal(git(path.join(W, 'vendor', 'sub'), 'init', '-q').status, 0);
  const id = 'swap1';
  const script = [
    'set +e',
    'mv vendor/sub vendor/old; mkdir -p vendor/sub',
    `git init -q --bare vendor/x && printf '[core]\\n\\tbare = false\\n\\tfsmonitor = "touch ${O}/PWNED-swap"\\n' >> vendor/x/config && mv vendor/x vendor/sub/.git`,
    'echo planted',
    'sleep 8',
    'echo survived',
  ].join('\n');
  await c.call('process/start', startParams(id, ['/bin/bash', '-c', script], { cwd: uri(W), sandbox: sandboxFor(W), env: env(O) }));
  await waitFor(() => /planted/.test(c.sink.outputText(id)) || c.sink.closed(id), { timeout: 30_000, what: 'the planting to finish' });
  await new Promise((r) => setTimeout(r, 500)); // the Git extension's debounce
  git(path.join(W, 'vendor', 'sub'), 'status', '--porcelain');
  await c.sink.waitFor(() => c.sink.closed(id), 40_000, `${id} closed`);
  git(path.join(W, 'vendor', 'sub'), 'status', '--porcelain');
  assert.deepEqual(fs.readdirSync(O).filter((n) => n.startsWith('PWNED')), []);
  assert.doesNotMatch(c.sink.outputText(id), /survived/);
});

/** A guard lease on `W` whose rescans run every `rescanMs` (the guard reads it when the lease starts); records what it moved. */
function guardWithRescan(W: string, rescanMs: number) {
  const moved = new Set<string>();
  const before = guardTiming.rescanMs;
  guardTiming.rescanMs = rescanMs;
  const lease = guardSandbox([W], (p) => {
    for (const x of p) moved.add(x.path);
  });
  guardTiming.rescanMs = before;
  return { lease, moved };
}

test('attack on the watch itself: a .git written into a directory the moment it is made (600 times, at random delays) is caught by the watch alone, not left to the next full rescan', async () => {
  // The window: the guard reads a new directory, then adds its watch; a name made in between
  // raises no event. Measured on the old code: 4 to 9 of 300 waited for the 2 s rescan (the Git
  // extension runs git 500 ms after a repository appears). The rescan is off here, so what the
  // events miss is never moved (a latency bound would follow the machine's load instead).
  const { W } = workspace('watch-race');
  const { lease, moved } = guardWithRescan(W, 3_600_000);
  const N = 600;
  const maker = `const fs = require('fs');
    const spin = (ns) => { const until = process.hrtime.bigint() + BigInt(ns); while (process.hrtime.bigint() < until); };
    for (let i = 0; i < ${N}; i++) {
      const d = ${JSON.stringify(W)} + '/d' + i;
      fs.mkdirSync(d);
      spin(Math.floor(Math.random() * 400000));
      fs.writeFileSync(d + '/.git', 'gitdir: /nowhere\\n');
      spin(2000000);
    }`;
  try {
    const child = spawn(process.execPath, ['-e', maker], { stdio: ['ignore', 'ignore', 'inherit'] });
    const code = await new Promise((r) => child.on('exit', r));
    assert.equal(code, 0);
    const left = () => Array.from({ length: N }, (_, i) => i).filter((i) => !moved.has(path.join(W, `d${i}`, '.git')));
    await waitFor(() => left().length === 0, { timeout: 10_000, what: 'every planted .git to be moved by its event', detail: () => `not moved: d${left().join(', d')}` });
  } finally {
    lease.release();
  }
});

test('incomplete first scan: an existing .git below where the first scan stopped is not taken for a plant when a later scan gets there; one made during the sandbox still is', async () => {
  // The first scan of a sandbox's root stops at a bound (under load, its 2 s; here, more than
  // 4 096 carve-outs): what it did not read is not known. A later, warmer scan that got further
  // found the user's own repository "new": moved it aside and stopped the sandbox (the old code).
  // Under the home directory, not /tmp: every other test's sandbox that writes /tmp would get
  // these 4 400 folders as carve-outs (seconds of bubblewrap setup each, on this machine).
  const W = path.join(tempDir('es-plant-incomplete-', { parent: os.homedir() }), 'work');
  const N = 4_400;
  for (let i = 0; i < N; i++) fs.mkdirSync(path.join(W, `s${i}`, '.vscode'), { recursive: true });
  forgetTurnScans();
  const first = scanCarveOuts(W);
  assert.equal(first.complete, false, 'the scan stops at its carve-out bound');
  const visited = new Set(first.dirs);
  const unread = Array.from({ length: N }, (_, i) => path.join(W, `s${i}`)).filter((d) => !visited.has(d));
  assert.ok(unread.length >= 2, `${unread.length} directories left unread`);
  const mine = path.join(unread[0], '.git'); // the user's, from before any sandbox
  fs.mkdirSync(mine);
  fs.writeFileSync(path.join(mine, 'HEAD'), 'ref: refs/heads/main\n');
  // The user's repository is from before the sandbox: its ctime well behind the guard's start (the guard allows the coarse clock 50 ms).
  await waitFor(() => Date.now() - fs.lstatSync(mine).ctimeMs > 200, { what: "the user's .git to be older than the guard's ctime slack" });
  const { lease, moved } = guardWithRescan(W, 200);
  try {
    assert.equal(lease.complete, false);
    const planted = path.join(unread[1], '.git'); // a plant where the first scan never looked
    fs.mkdirSync(planted);
    // The user tidies up: the next scan is no longer stopped by the bound and reads everything.
    for (const d of [...visited].filter((d) => d !== W).slice(0, 400)) fs.rmdirSync(path.join(d, '.vscode'));
    await waitFor(() => moved.has(planted), { timeout: 10_000, what: 'the .git made during the sandbox to be moved aside' });
    assert.ok(!moved.has(mine), 'the existing .git was taken for a plant');
    assert.ok(fs.existsSync(path.join(mine, 'HEAD')), 'the existing .git is where it was');
  } finally {
    lease.release();
  }
  assert.ok(!moved.has(mine) && fs.existsSync(mine), 'nor by the last look');
});

test('inode reuse: a .git made right after a known entry was removed (the filesystem hands out the freed inode number again) is still taken for a plant', async () => {
  const W = path.join(dir, 'inode-reuse', 'work');
  for (let i = 0; i < 20; i++) fs.mkdirSync(path.join(W, `k${i}`, '.vscode'), { recursive: true });
  fs.mkdirSync(path.join(W, 'new'));
  const moved = new Set<string>();
  const lease = guardSandbox([W], (p) => {
    for (const x of p) moved.add(x.path);
  });
  const reused: string[] = [];
  try {
    assert.equal(lease.complete, true);
    for (let i = 0; i < 20; i++) {
      // The user removes a known .vscode; a .git appears in the same moment (a sandbox's plant).
      const gone = path.join(W, `k${i}`, '.vscode');
      const planted = path.join(W, 'new', `r${i}`, '.git');
      fs.mkdirSync(path.dirname(planted));
      const ino = fs.lstatSync(gone).ino;
      fs.rmdirSync(gone);
      fs.mkdirSync(planted);
      if (fs.lstatSync(planted).ino === ino) reused.push(planted);
      await waitFor(() => moved.has(planted), { timeout: 10_000, what: `${planted} to be moved aside`, detail: () => `its inode number was the removed entry's: ${reused.includes(planted)} (so far ${reused.length} of ${i + 1})` });
    }
  } finally {
    lease.release();
  }
});
