// Attack (docs/security.md, "Managed sandbox"): a read-only or denied path that goes through a
// symlink lying in a writable place (a `.git` that is a link, in the project root) was enforced
// on the link's target only, so the command replaced the link with a directory of its own (a
// planted `.git`). Now refused as the reference refuses it (measured on 0.169 and 0.171): the
// start succeeds, nothing runs, stderr "error building bubblewrap command: Fatal error: cannot
// enforce sandbox read-only path … because it crosses writable symlink …", exit code 1. Real
// bwrap; a real `.git` directory under the same profiles still runs, read-only, with devices.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, pathEntry, protectedEntry, specialEntry } from '../../../src/protocol/codex-sandbox';
import { serverWithTmpDir, startParams, uri, type Client } from '../../support/server';

let c: Client;
let dir: string;
let close: () => Promise<void>;

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
});
after(() => close());

/** Replaces the `.git` (link or directory) with a directory of its own and plants a hook in it. */
const PLANT = 'rm -rf .git 2>/dev/null; rm -f .git; mkdir .git && echo "touch PWNED" > .git/post-checkout && echo planted; rm -f sub/l; mkdir -p sub/l && echo readable > sub/l/x && echo replaced-denied';

async function run(id: string, cwd: string, sandbox: unknown, script = PLANT): Promise<{ out: string; exitCode: number }> {
  await c.call('process/start', startParams(id, ['/bin/bash', '-c', script], { cwd: uri(cwd), sandbox }));
  await c.sink.waitFor(() => c.sink.closed(id), 30_000, `${id} closed`);
  const exited = c.sink.forProcess(id).find((e) => e.method === 'process/exited');
  return { out: c.sink.outputText(id), exitCode: exited?.params.exitCode };
}

function workspace(name: string): { W: string; target: string } {
  const W = path.join(dir, name, 'work');
  const target = path.join(dir, name, 'gitdir');
  fs.mkdirSync(path.join(W, 'sub'), { recursive: true });
  fs.mkdirSync(path.join(dir, name, 'secret'), { recursive: true });
  fs.mkdirSync(target, { recursive: true });
  fs.writeFileSync(path.join(target, 'config'), '[core]\n');
  fs.symlinkSync(target, path.join(W, '.git'));
  fs.symlinkSync(path.join(dir, name, 'secret'), path.join(W, 'sub', 'l'));
  return { W, target };
}

function expectRefused(W: string, target: string, r: { out: string; exitCode: number }, message: RegExp): void {
  assert.equal(r.exitCode, 1, r.out);
  assert.match(r.out, message);
  assert.doesNotMatch(r.out, /planted|replaced-denied/, 'the command ran');
  assert.equal(fs.readlinkSync(path.join(W, '.git')), target, 'the .git link was replaced');
  assert.ok(!fs.existsSync(path.join(target, 'post-checkout')));
}

test('sandboxed attack: workspace write (root read, project root write, .git read-only as Codex sends) with a symlinked .git is refused, not run with the link replaceable', async () => {
  const { W, target } = workspace('ws');
  const r = await run('ws1', W, managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write'), protectedEntry('.git')], cwd: uri(W) }));
  expectRefused(W, target, r, new RegExp(`^error building bubblewrap command: Fatal error: cannot enforce sandbox read-only path ${path.join(W, '.git')} because it crosses writable symlink ${path.join(W, '.git')}$`, 'm'));
});

test('sandboxed attack: an approved root write with .git read-only and a symlinked .git is refused (it ran and the .git was replaced before)', async () => {
  const { W, target } = workspace('root');
  const r = await run('rw1', W, managedSandbox({ entries: [specialEntry('root', 'write'), protectedEntry('.git')], cwd: uri(W) }));
  expectRefused(W, target, r, /cannot enforce sandbox read-only path .*\/\.git because it crosses writable symlink .*\/\.git$/m);
});

test('sandboxed attack: a denied path reached through a writable symlink is refused (deny-read), not left replaceable by a readable directory', async () => {
  const { W, target } = workspace('deny');
  fs.rmSync(path.join(W, '.git'));
  fs.mkdirSync(path.join(W, '.git')); // not the point here
  const r = await run('dn1', W, managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write'), pathEntry(uri(path.join(W, 'sub', 'l')), 'none')], cwd: uri(W) }));
  assert.equal(r.exitCode, 1, r.out);
  assert.match(r.out, new RegExp(`cannot enforce sandbox deny-read path ${path.join(W, 'sub', 'l')} because it crosses writable symlink ${path.join(W, 'sub', 'l')}$`, 'm'));
  assert.equal(fs.readlinkSync(path.join(W, 'sub', 'l')), path.join(dir, 'deny', 'secret'));
  assert.ok(fs.existsSync(target));
});

test('a real .git directory under an approved root write: runs, the .git stays read-only, standard devices work', async () => {
  const W = path.join(dir, 'plain', 'work');
  fs.mkdirSync(path.join(W, '.git'), { recursive: true });
  fs.writeFileSync(path.join(W, '.git', 'config'), '[core]\n');
  const script = [
    'echo x > /dev/null && echo devnull-ok',
    'test "$(head -c4 /dev/zero | od -An -tx1 | tr -d " ")" = 00000000 && echo zero-ok',
    'test "$(head -c16 /dev/urandom | wc -c)" = 16 && echo urandom-ok',
    'test -c /dev/tty && test -c /dev/full && test -c /dev/random && echo chardevs-ok',
    'echo s > /dev/shm/es-$$ && rm /dev/shm/es-$$ && echo shm-ok',
    'echo "[core] fsmonitor = x" >> .git/config 2>&1',
    'echo built > out.txt && echo write-ok',
  ].join('; ');
  const r = await run('ok1', W, managedSandbox({ entries: [specialEntry('root', 'write'), protectedEntry('.git')], cwd: uri(W) }), script);
  for (const m of ['devnull-ok', 'zero-ok', 'urandom-ok', 'chardevs-ok', 'shm-ok', 'write-ok']) assert.match(r.out, new RegExp(`^${m}$`, 'm'), `${m}:\n${r.out}`);
  assert.match(r.out, /\.git\/config: Read-only file system/);
  assert.equal(fs.readFileSync(path.join(W, '.git', 'config'), 'utf8'), '[core]\n');
});

test('sandboxed attack: the metadata the reference protects by itself (.agents, .codex, .aws) as a link in the project root is refused with no rule naming it', async () => {
  for (const name of ['.agents', '.codex', '.aws']) {
    const W = path.join(dir, `meta${name}`, 'work');
    const target = path.join(dir, `meta${name}`, 'target');
    fs.mkdirSync(W, { recursive: true });
    fs.mkdirSync(target);
    fs.symlinkSync(target, path.join(W, name));
    const r = await run(`m${name}`, W, managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write')], cwd: uri(W) }), `rm -f ${name}; mkdir ${name} && echo planted`);
    assert.equal(r.exitCode, 1, r.out);
    assert.match(r.out, new RegExp(`cannot enforce sandbox read-only path ${path.join(W, name)} because it crosses writable symlink ${path.join(W, name)}$`, 'm'));
    assert.equal(fs.readlinkSync(path.join(W, name)), target, `${name} was replaced`);
  }
});

test('a symlinked .vscode (to a folder inside the project, and to one outside) does not stop a sandboxed command; what it points to stays read-only', async () => {
  for (const where of ['inside', 'outside']) {
    const base = path.join(dir, `vscode-${where}`);
    const W = path.join(base, 'work');
    const target = where === 'inside' ? path.join(W, 'conf') : path.join(base, 'conf');
    fs.mkdirSync(W, { recursive: true });
    fs.mkdirSync(target, { recursive: true });
    fs.writeFileSync(path.join(target, 'tasks.json'), '{}\n');
    fs.symlinkSync(target, path.join(W, '.vscode'));
    const r = await run(`vs-${where}`, W, managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write'), protectedEntry('.git')], cwd: uri(W) }), 'echo ran; echo planted > .vscode/tasks.json; echo built > out.txt && echo write-ok');
    assert.equal(r.exitCode, 0, r.out);
    assert.match(r.out, /^ran$/m);
    assert.match(r.out, /^write-ok$/m);
    assert.equal(fs.readFileSync(path.join(target, 'tasks.json'), 'utf8'), '{}\n', `${where}: .vscode's target was written:\n${r.out}`);
  }
});
