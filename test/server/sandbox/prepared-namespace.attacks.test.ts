// src/server/sandbox/prepared-namespace.ts through src/server/sandbox/backend.ts, with the real
// bubblewrap and nsenter: later starts of a profile with many carve-outs enter mounts built once,
// and each attack on that shared view fails — a carve-out the host removed and re-created, a file
// left on a tmpfs for the next command, a device or pty of another command, the holder's pid.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { managedSandbox, specialPath, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { sandboxBackend, type SandboxBackend } from '../../../src/server/sandbox/backend';
import { SANDBOX_READY } from '../../../src/server/sandbox/bwrap';
import { forgetTurnScans } from '../../../src/server/sandbox/carve-outs';
import { dropPreparedNamespaces, preparedNamespaceSettings } from '../../../src/server/sandbox/prepared-namespace';
import { parseSandbox, type ManagedSandboxProfile } from '../../../src/server/sandbox/profile';
import { cmdline, pidsWith } from '../../support/process';
import { waitFor } from '../../support/wait';

const REPOS = 60;
let base: string;
let W: string;
let backend: SandboxBackend;

before(async () => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'es-prepared-'));
  W = path.join(base, 'work');
  for (let i = 0; i < REPOS; i++) fs.mkdirSync(path.join(W, `r${i}`, '.git'), { recursive: true });
  backend = await sandboxBackend();
});
after(() => {
  dropPreparedNamespaces();
  fs.rmSync(base, { recursive: true, force: true });
});

function profile(rootRead: boolean): ManagedSandboxProfile {
  const entries = rootRead ? workspaceWriteEntries({ slashTmp: false }) : [{ path: specialPath('project_roots'), access: 'write' }];
  return parseSandbox(managedSandbox({ entries, cwd: pathToFileURL(W).href }), { cwd: W, tmpDir: os.tmpdir() }) as ManagedSandboxProfile;
}

function wrapped(p: ManagedSandboxProfile, script: string): string[] {
  forgetTurnScans(); // each start sees the workspace as it is now
  return backend.wrap(p, { argv: ['/bin/bash', '--norc', '-c', script], cwd: W, env: { PATH: '/usr/bin:/bin' }, pipeStdin: false, rows: 24, cols: 80 }).argv;
}

function run(argv: string[]): { status: number | null; out: string } {
  const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], cwd: W, env: { PATH: '/usr/bin:/bin' }, encoding: 'utf8', timeout: 20_000 });
  // The first program's ready line is for the engine (src/server/sandbox/setup-retry.ts), which takes it out.
  return { status: r.status, out: r.stdout + r.stderr.replace(`${SANDBOX_READY}\n`, '') };
}

const entersHolder = (argv: string[]) => argv.some((a) => a.endsWith('/nsenter'));

/** Starts `script` until a start enters a ready holder; returns that start's result. */
async function viaHolder(p: ManagedSandboxProfile, script: string): Promise<{ status: number | null; out: string }> {
  const argv = await waitFor(() => {
    const a = wrapped(p, script);
    return entersHolder(a) && a;
  }, { what: 'a start that enters a prepared namespace', interval: 50 });
  return run(argv);
}

test('a profile with fewer mounts than the threshold never uses a holder', () => {
  const saved = preparedNamespaceSettings.minMounts;
  preparedNamespaceSettings.minMounts = 10_000;
  try {
    for (let i = 0; i < 3; i++) assert.ok(!entersHolder(wrapped(profile(true), 'true')));
  } finally {
    preparedNamespaceSettings.minMounts = saved;
  }
});

test('through a holder the command runs, writes the workspace, and every carve-out stays read-only', async () => {
  preparedNamespaceSettings.minMounts = 16;
  const r = await viaHolder(profile(true), 'echo hi > ok; for i in $(seq 0 ' + (REPOS - 1) + '); do touch r$i/.git/x 2>/dev/null && echo WROTE r$i; done; cat ok');
  assert.equal(r.status, 0, r.out);
  assert.equal(r.out.trim(), 'hi');
  assert.equal(fs.readdirSync(path.join(W, 'r0', '.git')).length, 0);
});

test('attack: the host removes a carve-out and re-creates it after the holder was built; the next start must not find it writable', async () => {
  preparedNamespaceSettings.minMounts = 16;
  await viaHolder(profile(true), 'true'); // a holder exists and is ready
  fs.rmSync(path.join(W, 'r7', '.git'), { recursive: true });
  fs.mkdirSync(path.join(W, 'r7', '.git'));
  const r = run(wrapped(profile(true), 'touch r7/.git/config && echo PLANTED'));
  assert.ok(!r.out.includes('PLANTED'), r.out);
  assert.ok(!fs.existsSync(path.join(W, 'r7', '.git', 'config')));
  // And the rebuilt holder protects it too.
  const again = await viaHolder(profile(true), 'touch r7/.git/config && echo PLANTED');
  assert.ok(!again.out.includes('PLANTED'), again.out);
});

test('attack: the host renames a repository away and puts a new one in its place; the new .git is not writable', async () => {
  preparedNamespaceSettings.minMounts = 16;
  await viaHolder(profile(true), 'true');
  fs.renameSync(path.join(W, 'r9'), path.join(base, 'r9-away')); // out of the workspace: the same carve-outs as before
  fs.mkdirSync(path.join(W, 'r9', '.git'), { recursive: true });
  const r = run(wrapped(profile(true), 'touch r9/.git/config && echo PLANTED'));
  assert.ok(!r.out.includes('PLANTED'), r.out);
  assert.ok(!fs.existsSync(path.join(W, 'r9', '.git', 'config')));
});

test('attack: a command leaves files on the sandbox root, in /dev/shm and a pty in /dev/pts for the next one; nothing passes', async () => {
  preparedNamespaceSettings.minMounts = 16;
  const p = profile(false); // an empty tmpfs root
  const first = await viaHolder(p, 'touch /planted 2>/dev/null && echo ROOT; mkdir -p /dev/shm; touch /dev/shm/planted && echo SHM; ls /dev/pts');
  assert.equal(first.status, 0, first.out);
  assert.ok(!first.out.includes('ROOT'), first.out);
  const second = await viaHolder(p, 'ls -a /; ls /dev/shm; ls /dev/pts');
  assert.ok(!second.out.includes('planted'), second.out);
});

test('attack: the holder is invisible from the sandbox (own pid namespace) and, once killed, no start enters its namespace', async () => {
  preparedNamespaceSettings.minMounts = 16;
  const r = await viaHolder(profile(true), 'echo pids $(ls /proc | grep -cE "^[0-9]+$"); cat /proc/[0-9]*/cmdline | tr "\\0" " "');
  assert.ok(!r.out.includes('echo ready'), r.out);
  assert.ok(Number(/pids (\d+)/.exec(r.out)?.[1]) <= 6, r.out); // the sandbox's own few processes, nothing of the host
  for (const pid of holderPids()) process.kill(pid, 'SIGKILL');
  await waitFor(() => holderPids().length === 0, { what: 'holders gone' });
  // The next start runs a fresh bwrap (no nsenter) and is confined all the same.
  const argv = wrapped(profile(true), 'touch r3/.git/x && echo PLANTED');
  assert.ok(!entersHolder(argv));
  assert.ok(!run(argv).out.includes('PLANTED'));
});

/** Host pids of holder shells (`bash --norc -p -c 'echo ready; read -r _'`), not the bwrap around each. */
function holderPids(): number[] {
  const bwrap = fs.realpathSync('/usr/bin/bwrap');
  return pidsWith('echo ready; read -r _').filter((pid) => !cmdline(pid).startsWith(bwrap));
}
