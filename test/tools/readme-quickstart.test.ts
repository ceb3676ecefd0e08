// The README's first command (install, build, run the exec-server), exactly as written there, in a
// fresh clone of the repository, as a new user would type it: the server must come up and answer
// `initialize` over its websocket. The command is read from README.md, so the README cannot go
// stale without this test failing. (A clone holds the committed tree: uncommitted edits are not
// part of what a new user gets.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import WebSocket from 'ws';
import { repoRoot } from '../support/reference';

/** The first line of the README's first ```sh block, without its trailing comment. */
function firstReadmeCommand(repo: string): string {
  const readme = readFileSync(path.join(repo, 'README.md'), 'utf8');
  const block = /^```sh\n([\s\S]*?)^```/m.exec(readme);
  assert.ok(block, 'README.md has no ```sh block');
  const line = block[1].split('\n')[0];
  return line.replace(/\s+#.*$/, '').trim();
}

/** The environment of a new user's shell: nothing from the npm that runs this test. */
function userEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'NODE_OPTIONS' && k !== 'INIT_CWD' && k !== 'EXEC_SERVER_REPO'));
}

test('the README\'s first command, run in a fresh clone, starts a server that answers initialize', { timeout: 15 * 60_000 }, async (t) => {
  // Under /var/tmp, not /tmp: the clone holds a full node_modules; /var/tmp is for larger scratch.
  const dir = mkdtempSync(path.join('/var/tmp', 'readme-quickstart-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const clone = spawnSync('git', ['clone', '--quiet', repoRoot, path.join(dir, 'repo')], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(clone.status, 0, `git clone ${repoRoot}: ${clone.stderr}`);
  // The README as the clone has it: what a new user reads.
  const cmd = firstReadmeCommand(path.join(dir, 'repo'));
  assert.match(cmd, /--listen ws:\/\/127\.0\.0\.1:0/, `the README's first command should start the server: ${cmd}`);

  const child = spawn('bash', ['-c', cmd], { cwd: path.join(dir, 'repo'), env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  t.after(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL'); // bash, npm's leftovers and the server
    } catch {}
  });
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const m = /^(ws:\/\/127\.0\.0\.1:\d+)\s*$/m.exec(out);
      if (m) resolve(m[1]);
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code, signal) =>
      reject(new Error(`\`${cmd}\` exited (${code ?? signal}) before printing the server's URL.\nstdout tail:\n${out.split('\n').slice(-30).join('\n')}\nstderr tail:\n${err.split('\n').slice(-30).join('\n')}`)));
  });

  const ws = new WebSocket(url);
  t.after(() => ws.close());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const reply = new Promise<any>((resolve) => ws.once('message', (d) => resolve(JSON.parse(String(d)))));
  ws.send(JSON.stringify({ id: 1, method: 'initialize', params: { clientName: 'readme-quickstart' } }));
  const msg = await reply;
  assert.equal(msg.id, 1);
  assert.equal(msg.error, undefined, JSON.stringify(msg.error));
  assert.equal(typeof msg.result?.sessionId, 'string', JSON.stringify(msg));
  assert.ok(msg.result.sessionId.length > 0);
});
