// The tool installer (scripts/tools/install.mjs) with real npm installs of the reference codex into
// private, empty caches (npm's own package cache is reused, so an install takes seconds): two
// installs at once both get a working binary (they used to race: ETXTBSY), an install killed
// half-way is repaired by the next run, a failing install names the tool, the command and npm's
// output, and an outer npm's environment does not reach the nested install.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../support/reference';
import { waitFor } from '../support/wait';

const installer = path.join(repoRoot, 'scripts/tools/install.mjs');
const VERSION = '0.169.0';

interface Run { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; pid: number }

/** Starts the installer in its own process group (so a test can kill it with everything it started). */
function startInstaller(cache: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [installer, ...args], {
    env: { ...process.env, EXEC_SERVER_CACHE: cache, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<Run>((resolve) => child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr, pid: child.pid! })));
  return { child, done };
}

const keys = (stdout: string) =>
  Object.fromEntries(stdout.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

function tempCache(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tools-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs the installed binary right away: it must be complete and not open for writing. */
function codexVersion(bin: string): string {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.error, undefined, `spawning ${bin}: ${r.error?.message}`);
  assert.equal(r.status, 0, `${bin} --version: ${r.stderr}`);
  return r.stdout;
}

test('two installs of the reference at once: both callers get the same working binary, installed once', { timeout: 300_000 }, async (t) => {
  const cache = tempCache(t);
  const a = startInstaller(cache, ['reference']);
  const b = startInstaller(cache, ['reference']);
  // Each caller spawns the binary the moment its installer returns, as a test file would.
  const [ra, rb] = await Promise.all([a.done, b.done].map(async (p) => {
    const r = await p;
    assert.equal(r.code, 0, `installer failed: ${r.stderr}`);
    return { ...r, version: codexVersion(keys(r.stdout).REFERENCE) };
  }));
  assert.equal(keys(ra.stdout).REFERENCE, keys(rb.stdout).REFERENCE);
  assert.match(ra.version, new RegExp(VERSION.replace(/\./g, '\\.')));
  assert.equal(ra.version, rb.version);
  const installs = (ra.stderr + rb.stderr).match(/installing the reference/g) ?? [];
  assert.equal(installs.length, 1, `expected exactly one install:\n${ra.stderr}\n---\n${rb.stderr}`);
  assert.deepEqual(readdirSync(cache).filter((n) => n.startsWith('reference-')), [`reference-${VERSION}`], 'no temp folder or lock left');
});

/** Starts an install, waits until npm is writing into the temporary folder, SIGKILLs `victim`. */
async function killHalfWay(cache: string, victim: 'group' | 'installer') {
  const final = path.join(cache, `reference-${VERSION}`);
  const first = startInstaller(cache, ['reference']);
  const tmp = `${final}.tmp-${first.child.pid}`;
  await waitFor(() => existsSync(path.join(tmp, 'node_modules', '@openai')), {
    what: `the installer to start writing ${tmp}`,
    detail: () => `installer exit code ${first.child.exitCode}`,
    timeout: 120_000,
  });
  // 'group': the installer and its npm (Ctrl-C, a cancelled CI job); 'installer': only the
  // installer, its npm lives on as an orphan still writing into the temporary folder.
  process.kill(victim === 'group' ? -first.child.pid! : first.child.pid!, 'SIGKILL');
  const killed = await first.done;
  assert.equal(killed.signal, 'SIGKILL');
  assert.ok(!existsSync(final), 'nothing may land in place before the install is complete and verified');
  assert.ok(existsSync(tmp), 'the half-written temporary folder is left behind');
  const lock = JSON.parse(readFileSync(`${final}.lock`, 'utf8'));
  assert.equal(lock.pid, first.child.pid, 'the dead installer still holds the lock');
  // --find does not accept the half-install.
  const find = await startInstaller(cache, ['--find', 'reference']).done;
  assert.equal(find.code, 2, find.stderr);
  assert.match(find.stderr, /not installed/);
  return first.child.pid!;
}

test('an install killed half-way (SIGKILL to the installer and its npm) is repaired by the next run', { timeout: 300_000 }, async (t) => {
  const cache = tempCache(t);
  const deadPid = await killHalfWay(cache, 'group');
  const second = await startInstaller(cache, ['reference']).done;
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stderr, new RegExp(`taking over the lock of reference left by pid ${deadPid}`));
  assert.match(second.stderr, /removing reference-[\d.]+\.tmp-\d+ \(left by an interrupted install\)/);
  assert.match(codexVersion(keys(second.stdout).REFERENCE), new RegExp(VERSION.replace(/\./g, '\\.')));
  assert.deepEqual(readdirSync(cache).filter((n) => n.startsWith('reference-')), [`reference-${VERSION}`]);
});

test('an installer SIGKILLed while its npm keeps running: the next run still lands a working binary', { timeout: 300_000 }, async (t) => {
  const cache = tempCache(t);
  const deadPid = await killHalfWay(cache, 'installer');
  t.after(() => {
    try {
      process.kill(-deadPid, 'SIGKILL'); // the orphaned npm, if still running
    } catch {}
  });
  const second = await startInstaller(cache, ['reference']).done;
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stderr, new RegExp(`taking over the lock of reference left by pid ${deadPid}`));
  assert.match(codexVersion(keys(second.stdout).REFERENCE), new RegExp(VERSION.replace(/\./g, '\\.')));
  // The orphan only ever writes into its own temporary folder, never into the one in place.
  codexVersion(keys(second.stdout).REFERENCE);
});

test('a failing install names the tool, the exact command and the last lines of npm\'s output', { timeout: 300_000 }, async (t) => {
  const cache = tempCache(t);
  const r = await startInstaller(cache, ['reference'], { CODEX_REF_VERSION: '0.0.0-does-not-exist' }).done;
  assert.equal(r.code, 1);
  assert.match(r.stderr, /installing reference failed: exit 1/);
  assert.match(r.stderr, /command: \(cd \S+reference-0\.0\.0-does-not-exist\.tmp-\d+ && npm install .*@openai\/codex@0\.0\.0-does-not-exist\)/);
  assert.match(r.stderr, /last lines of its output:\n(.*\n)*.*\| npm error .*(ETARGET|No matching version)/);
  const log = /log: (\S+)/.exec(r.stderr)?.[1];
  assert.ok(log && existsSync(log), 'the whole output is kept in a log file');
  assert.equal(r.stdout, '', 'no path printed for a failed install');
  assert.deepEqual(readdirSync(cache).filter((n) => n.startsWith('reference-')), [], 'a failed install leaves no folder behind');
});

test('an outer npm\'s environment (npm_config_*, npm_*) does not reach the nested install', { timeout: 300_000 }, async (t) => {
  const cache = tempCache(t);
  // What `npm test` exports to its scripts, made harmful: leaked, the registry and the user agent
  // would make the nested npm fail (as the outer npm's Node version made code-server's postinstall fail).
  const r = await startInstaller(cache, ['reference'], {
    npm_config_registry: 'http://127.0.0.1:9/',
    npm_config_offline: 'true',
    npm_config_user_agent: 'npm/0.0.0 node/v1.0.0',
    npm_node_execpath: '/nonexistent/node',
    npm_config_allow_scripts: '',
  }).done;
  assert.equal(r.code, 0, r.stderr);
  codexVersion(keys(r.stdout).REFERENCE);
});
