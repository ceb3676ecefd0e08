// setOpenFolders (src/server/sandbox/carve-outs.ts) and the guard it widens: an editor's open
// folder under /tmp, written by a sandboxed command through its /tmp write (Codex's
// workspace-write sandbox) rather than its project root. VS Code's Git extension opens a
// repository that appears in an open folder by itself and runs `git status` outside the sandbox;
// the temp dir itself is not watched, so before, a new repository planted there kept its
// fsmonitor hook, which ran on the host (the e2e test agent-attack-tests.ts measured it with the
// real Git extension). Real bwrap.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { setOpenFolders } from '../../../src/server/sandbox/carve-outs';
import { serverWithTmpDir, startParams, uri, type Client } from '../../support/server';
import { waitFor } from '../../support/wait';

let c: Client;
let dir: string;
let close: () => Promise<void>;

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
});
after(async () => {
  setOpenFolders([]);
  await close();
});

const git = (cwd: string, ...args: string[]) => spawnSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CEILING_DIRECTORIES: path.dirname(cwd) } });

test('sandboxed attack: a new .git planted through the sandbox\'s /tmp in an open folder outside its project root is moved aside, the command stopped, and its fsmonitor never runs', async () => {
  const F = path.join(fs.realpathSync(os.tmpdir()), path.basename(dir), 'open-folder');
  assert.ok(F.startsWith(fs.realpathSync(os.tmpdir()) + path.sep), 'the open folder lies in the temp dir the sandbox writes');
  const P = path.join(F, 'proj');
  const O = fs.mkdtempSync(path.join(os.homedir(), '.exec-server-open-folder-'));
  try {
    fs.mkdirSync(P, { recursive: true });
    fs.mkdirSync(path.join(F, 'other'));
    setOpenFolders([F]);
    const id = 'open-folder';
    const script = [
      'set +e',
      `git init -q ${F}/other && printf '[core]\\n\\tfsmonitor = "touch ${O}/PWNED"\\n' >> ${F}/other/.git/config && echo planted`,
      'sleep 8',
      'echo survived',
    ].join('\n');
    const sandbox = managedSandbox({ entries: workspaceWriteEntries(), cwd: uri(P) });
    await c.call('process/start', startParams(id, ['/bin/bash', '-c', script], { cwd: uri(P), sandbox, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: O } }));
    // The victim: what VS Code's Git extension does once a repository appears in an open folder.
    const victim = () => {
      if (fs.existsSync(path.join(F, 'other', '.git'))) git(path.join(F, 'other'), 'status', '--porcelain');
    };
    await waitFor(() => /planted/.test(c.sink.outputText(id)) || c.sink.closed(id), { timeout: 30_000, what: 'the planting to finish' });
    victim();
    await c.sink.waitFor(() => c.sink.closed(id), 40_000, `${id} closed`);
    victim();
    assert.deepEqual(fs.readdirSync(O), [], 'code planted by the sandboxed command ran outside it');
    assert.ok(!fs.existsSync(path.join(F, 'other', '.git')), 'other/.git is still in the open folder');
    assert.doesNotMatch(c.sink.outputText(id), /survived/, 'the command that planted it was stopped');
    const exited = c.sink.forProcess(id).find((e) => e.method === 'process/exited');
    assert.equal(exited?.params.sandboxDenied, true, 'its exit says the sandbox stopped it');
  } finally {
    setOpenFolders([]);
    fs.rmSync(O, { recursive: true, force: true });
  }
});
