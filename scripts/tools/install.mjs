#!/usr/bin/env node
// Installs (or, with --find, only looks up) the tools the tests need, into the cache
// (EXEC_SERVER_CACHE, default ~/.cache/exec-server). `npm test` runs it once before any test;
// the tests themselves only find what it installed.
//
//   node scripts/tools/install.mjs [--find] [--print KEY] <tool|group>...
//     groups: unit (bubblewrap, openssh-server, openssh-client, zsh, podman, runc, reference, reference-<newer version>,
//     qemu-user-static, g++-aarch64-linux-gnu, node-arm64), e2e (openssh-*, podman, runc, chromium, libkrb5-dev, pkg-config, node24,
//     code-server, playwright-core); tools: see tools.mjs.
//   stdout: KEY=VALUE lines (REFERENCE=…, CODEX_HOME=…, NODE24=…), or only the value of --print KEY.
//   exit: 0 ok, 1 an install failed (tool, command and output tail on stderr), 2 --find: missing.
//
// Each npm tool is installed under a per-tool lock (concurrent installers wait; a lock left by a
// killed installer is taken over), into a temporary sibling folder with a clean environment (no
// npm_* from an outer npm), verified (its binary runs), marked complete and then renamed into
// place, so a half-installed tool is never used and an interrupted install is redone next time.
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { acquireLock } from './lock.mjs';
import { activeChildren, cleanEnv, InstallError, runLogged } from './run-logged.mjs';
import { cacheDir, resolveTools } from './tools.mjs';

const MARKER = '.installed.json';
const say = (msg) => process.stderr.write(`[tools] ${msg}\n`);
const fmtS = (s) => (s >= 90 ? `~${Math.round(s / 60)} min` : `~${s} s`);

function marker(t, dir = t.dir) {
  try {
    return JSON.parse(readFileSync(path.join(dir, MARKER), 'utf8'));
  } catch {
    return undefined;
  }
}

/** Installed and marked complete for this version (the marker is written before the folder is renamed into place). */
function ready(t) {
  if (t.kind === 'deb') return t.present();
  const m = marker(t);
  return m?.version === t.version && m?.spec === t.spec && !!t.main(t.dir) && existsSync(t.main(t.dir));
}

function logFile(t) {
  const dir = path.join(cacheDir(), 'logs');
  mkdirSync(dir, { recursive: true });
  return path.join(dir, `${t.name}-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}.log`);
}

/** Leftovers of earlier installs that did not finish (their installer is gone: we hold the lock). */
function removeLeftovers(t) {
  const parent = path.dirname(t.dir);
  const base = path.basename(t.dir);
  for (const n of existsSync(parent) ? readdirSync(parent) : []) {
    if (n.startsWith(`${base}.tmp-`) || n.startsWith(`${base}.old-`)) {
      say(`removing ${n} (left by an interrupted install)`);
      try {
        rmSync(path.join(parent, n), { recursive: true, force: true, maxRetries: 5 });
      } catch (err) {
        // An orphaned npm of the killed installer may still be writing there; our install uses
        // its own folder, so this one is only removed next time.
        say(`could not remove ${n} yet: ${err.message}`);
      }
    }
  }
}

async function installNpmTool(t) {
  mkdirSync(path.dirname(t.dir), { recursive: true });
  const release = await acquireLock(`${t.dir}.lock`, {
    onWait: (o) => say(`waiting for another install of ${t.name} (pid ${o.pid}, since ${o.since})`),
    onStale: (o) => say(`taking over the lock of ${t.name} left by pid ${o.pid} (no longer running)`),
  });
  try {
    if (ready(t)) return; // another process installed it while we waited
    removeLeftovers(t);
    if (existsSync(t.dir)) {
      // A folder without a valid marker: installed by an older version of this script, or a
      // different version. Keep it if it verifies, otherwise replace it below.
      try {
        if (marker(t)) throw new Error(`marker is for ${marker(t).spec}`);
        t.verify(t.dir);
        writeFileSync(path.join(t.dir, MARKER), JSON.stringify({ spec: t.spec, version: t.version, adopted: new Date().toISOString() }));
        say(`${t.name}: kept the existing install in ${t.dir} (verified)`);
        return;
      } catch (err) {
        say(`${t.name}: replacing ${t.dir} (${String(err.message).split('\n')[0]})`);
      }
    }
    const started = Date.now();
    const log = logFile(t);
    say(`installing ${t.label} (${fmtS(t.eta)}) …`);
    const tmp = `${t.dir}.tmp-${process.pid}`;
    mkdirSync(tmp, { recursive: true });
    writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: `exec-server-tool-${t.name}`, private: true, ...t.packageJson }, null, 2));
    const env = cleanEnv(t.env?.());
    try {
      await runLogged(t.name, 'npm', ['install', '--no-audit', '--no-fund', '--no-update-notifier', '--foreground-scripts', t.spec], { cwd: tmp, env, log });
      try {
        t.verify(tmp);
      } catch (err) {
        const tail = readFileSync(log, 'utf8').trimEnd().split('\n').slice(-30);
        throw new InstallError(t.name, `(cd ${tmp} && npm install ${t.spec})`, `installed, but the check failed: ${err.message}`, tail, log);
      }
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true, maxRetries: 5 }); // the log keeps what happened
      throw err;
    }
    writeFileSync(path.join(tmp, MARKER), JSON.stringify({ spec: t.spec, version: t.version, installed: new Date().toISOString() }));
    if (existsSync(t.dir)) renameSync(t.dir, `${t.dir}.old-${process.pid}`);
    renameSync(tmp, t.dir);
    rmSync(`${t.dir}.old-${process.pid}`, { recursive: true, force: true });
    say(`installed ${t.name} in ${((Date.now() - started) / 1000).toFixed(0)} s → ${t.dir}`);
  } finally {
    release();
  }
}

/** All missing Debian packages in one apt-get run (apt waits for its own lock, our lock keeps our runs in line). */
async function installDebs(debs) {
  const names = debs.map((t) => t.name);
  if (!existsSync('/usr/bin/apt-get') && !existsSync('/bin/apt-get')) {
    throw new InstallError(names.join(' '), 'apt-get install', 'apt-get not found: install these packages with the system package manager', [], '(none)');
  }
  mkdirSync(cacheDir(), { recursive: true });
  const release = await acquireLock(path.join(cacheDir(), 'apt.lock'), {
    onWait: (o) => say(`waiting for another apt-get install (pid ${o.pid})`),
  });
  try {
    const missing = debs.filter((t) => !t.present()).map((t) => t.name);
    if (!missing.length) return;
    const started = Date.now();
    const log = logFile({ name: 'apt' });
    say(`installing ${missing.join(' ')} with apt-get (~1 min) …`);
    const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
    const env = cleanEnv({ DEBIAN_FRONTEND: 'noninteractive' });
    const apt = (args) => (sudo.length ? ['sudo', [...sudo.slice(1), 'apt-get', ...args]] : ['apt-get', args]);
    const install = ['-o', 'DPkg::Lock::Timeout=600', 'install', '-y', ...missing];
    try {
      await runLogged(missing.join(' '), ...apt(install), { cwd: os.tmpdir(), env, log });
    } catch {
      // A fresh machine often has no package lists yet.
      await runLogged(missing.join(' '), ...apt(['-o', 'DPkg::Lock::Timeout=600', 'update']), { cwd: os.tmpdir(), env, log });
      await runLogged(missing.join(' '), ...apt(install), { cwd: os.tmpdir(), env, log });
    }
    const still = debs.filter((t) => !t.present()).map((t) => t.name);
    if (still.length) throw new InstallError(still.join(' '), `apt-get ${install.join(' ')}`, 'apt-get succeeded but the packages are still missing', readFileSync(log, 'utf8').trimEnd().split('\n').slice(-30), log);
    say(`installed ${missing.join(' ')} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    release();
  }
}

function keysOf(list) {
  const keys = {};
  for (const t of list) Object.assign(keys, t.kind === 'deb' ? t.keys() : t.keys(t.dir));
  return keys;
}

async function main(argv) {
  const find = argv.includes('--find');
  const pi = argv.indexOf('--print');
  const printKey = pi >= 0 ? argv[pi + 1] : undefined;
  const names = argv.filter((a, i) => !a.startsWith('--') && !(pi >= 0 && i === pi + 1));
  if (!names.length) throw new Error('usage: install.mjs [--find] [--print KEY] <tool|group>...');
  const list = resolveTools(names);
  const missing = list.filter((t) => !ready(t));

  if (find && missing.length) {
    process.stderr.write(
      `not installed in ${cacheDir()}: ${missing.map((t) => t.label).join(', ')}.\n` +
        `\`npm test\` installs the tools before the tests; or run: node scripts/tools/install.mjs ${missing.map((t) => t.name).join(' ')}\n`,
    );
    return 2;
  }
  if (missing.length) {
    const total = missing.reduce((s, t) => s + t.eta, 0);
    say(`first run: installing into ${cacheDir()} (later runs reuse it), ${fmtS(total)} in total:`);
    for (const t of missing) say(`  - ${t.label} (${fmtS(t.eta)})`);
    if (/^\/tmp(\/|$)/.test(cacheDir())) say(`note: the cache is under /tmp; the reference codex will not create its sandbox helpers there (use e.g. /var/tmp)`);
    const failures = [];
    const debs = missing.filter((t) => t.kind === 'deb');
    if (debs.length) {
      try {
        await installDebs(debs);
      } catch (err) {
        failures.push(err);
      }
    }
    for (const t of missing.filter((x) => x.kind === 'npm')) {
      if ((t.needs ?? []).some((n) => failures.some((f) => f.tool === n))) {
        failures.push(new InstallError(t.name, '(not run)', `needs ${t.needs.join(', ')}, which failed to install`, [], '(none)'));
        continue;
      }
      try {
        await installNpmTool(t);
      } catch (err) {
        failures.push(err instanceof InstallError ? err : new InstallError(t.name, '(installer)', err.stack ?? String(err), [], '(none)'));
      }
    }
    if (failures.length) {
      for (const f of failures) process.stderr.write(`[tools] ${f.message}\n`);
      return 1;
    }
  }
  const keys = keysOf(list);
  if (printKey) {
    if (!keys[printKey]) throw new Error(`no ${printKey} among ${Object.keys(keys).join(', ')}`);
    process.stdout.write(`${keys[printKey]}\n`);
  } else {
    for (const [k, v] of Object.entries(keys)) process.stdout.write(`${k}=${v}\n`);
  }
  return 0;
}

// Ctrl-C / CI cancel: stop the running npm/apt-get and exit (the lock and the temporary folder
// are recognised as stale and removed next time).
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    for (const c of activeChildren) c.kill('SIGTERM');
    process.exit(130);
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`[tools] ${err.stack ?? err}\n`);
    process.exit(1);
  },
);
