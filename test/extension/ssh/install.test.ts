// Installing this project's CLI on a host over a REAL sshd (the "host" is this machine with a
// temp HOME and a chosen PATH, given to the login through authorized_keys environment=):
// the prebuilt path end to end (copy, PTY check, launcher, then the probe finds it and a
// process and a PTY run through it over ssh), a real node-gyp build of node-pty on the host,
// and the refusals with their reasons: no Node on PATH, Node too old, no compiler for a
// needed build, an OS node-pty does not run on, an arch we carry nothing for.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectCommand } from '../../../src/client/connect';
import { sshEnvironmentInput } from '../../../src/extension/ssh/environment';
import { findBundle, installOnHost, InstallError, planInstall, type CliBundle } from '../../../src/extension/ssh/install';
import { chooseExecutor, INSTALL_DIR, probeHost } from '../../../src/extension/ssh/probe';
import type { SshOptions } from '../../../src/extension/ssh/target';
import { cliPath, repoRoot, startServerProcess } from '../../support/cli';
import { tempDir } from '../../support/tmp';
import { binDir, startSshd, whichOrThrow, type TestSshd } from '../../support/sshd';

const work = tempDir('ssh-install-');
const version = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
let sshd: TestSshd;
let ssh: SshOptions;
let bundle: CliBundle;
const home = (n: string) => path.join(work, `home-${n}`);

before(async () => {
  assert.ok(existsSync(cliPath), `${cliPath} missing: run npm run build`);
  bundle = findBundle(repoRoot, version);
  // What the probe itself needs (no node, no compiler): a PATH of only these.
  const basics = Object.fromEntries(['sh', 'uname', 'grep', 'ls', 'head', 'dirname', 'ldd'].map((p) => [p, whichOrThrow(p)]));
  const noNode = binDir(path.join(work, 'bin-no-node'), basics);
  const oldNode = binDir(path.join(work, 'bin-old-node'), { ...basics, node: '#!/bin/sh\necho v16.20.2\n' });
  const noCompiler = binDir(path.join(work, 'bin-no-cc'), { ...basics, node: process.execPath, npm: whichOrThrow('npm') });
  const freebsd = binDir(path.join(work, 'bin-freebsd'), { ...basics, node: process.execPath, uname: '#!/bin/sh\ncase "$1" in -s) echo FreeBSD;; -m) echo amd64;; esac\n' });
  const arm = binDir(path.join(work, 'bin-arm'), { ...basics, node: process.execPath, uname: '#!/bin/sh\ncase "$1" in -s) echo Linux;; -m) echo aarch64;; esac\n' });
  const full = `${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`;
  const scenarios = [
    { alias: 'fresh', env: { HOME: home('fresh'), PATH: full } },
    { alias: 'build', env: { HOME: home('build'), PATH: full } },
    { alias: 'no-node', env: { HOME: home('x'), PATH: noNode } },
    { alias: 'old-node', env: { HOME: home('x'), PATH: oldNode } },
    { alias: 'no-compiler', env: { HOME: home('x'), PATH: noCompiler } },
    { alias: 'freebsd', env: { HOME: home('x'), PATH: freebsd } },
    { alias: 'arm', env: { HOME: home('x'), PATH: arm } },
  ];
  for (const s of scenarios) mkdirSync(s.env.HOME, { recursive: true });
  sshd = await startSshd(scenarios);
  ssh = { configFile: sshd.configFile, sshPath: whichOrThrow('ssh') };
});
after(async () => {
  await sshd?.stop();
});

async function runOver(alias: string, installedAt: string) {
  const facts = await probeHost({ host: alias }, ssh);
  assert.equal(facts.installed, installedAt, 'the probe finds the installed launcher');
  assert.equal(facts.installedVersion, `exec-server ${version}`);
  const ex = chooseExecutor(facts);
  assert.equal(ex?.kind, 'installed');
  const input = sshEnvironmentInput(alias, { host: alias }, ssh, ex!);
  const client = await connectCommand(input.command!, input.args!, { clientName: 'ssh-install-test', initializeTimeoutMs: 20_000 });
  try {
    const env = { PATH: '/usr/bin:/bin', HOME: home(alias) };
    for (const tty of [false, true]) {
      const p = await client.startProcess({ argv: ['/bin/sh', '-c', 'test -t 1 && echo tty; echo "ran-in $HOME"; exit 4'], cwd: home(alias), env, tty, rows: 24, cols: 80 });
      let out = '';
      p.onOutput((e) => (out += Buffer.from(e.data).toString()));
      assert.equal(await p.exited, 4);
      await p.closed;
      assert.match(out, new RegExp(`ran-in ${home(alias)}`));
      assert.equal(/tty/.test(out), tty, `tty ${tty}: ${JSON.stringify(out)}`);
    }
  } finally {
    await client.close();
  }
}

describe('install the CLI on a host (real sshd)', () => {
  it('prebuilt: a fresh host gets cli.js + node-pty under ~/.exec-server/<version> and a launcher; a process and a PTY then run through it over ssh', async () => {
    const facts = await probeHost({ host: 'fresh' }, ssh);
    assert.equal(chooseExecutor(facts), undefined, 'nothing installed yet');
    const plan = planInstall(facts, bundle);
    assert.equal(plan.mode, 'prebuilt');
    assert.equal(plan.key, `linux-${process.arch}-glibc`);
    const steps: string[] = [];
    const launcher = await installOnHost({ host: 'fresh' }, ssh, bundle, plan, { onProgress: (l) => steps.push(l) });
    assert.equal(launcher, path.join(home('fresh'), INSTALL_DIR, 'bin', 'exec-server'));
    assert.ok(statSync(launcher).mode & 0o100, 'the launcher is executable');
    assert.ok(existsSync(path.join(home('fresh'), INSTALL_DIR, version, 'node_modules', 'node-pty', 'build', 'Release', 'pty.node')));
    // The libraries cli.js requires on first use sit beside it, and load from there.
    for (const lib of ['yaml', 'node-forge', 'jose']) {
      const file = path.join(home('fresh'), INSTALL_DIR, version, 'lib', `${lib}.js`);
      const r = spawnSync(process.execPath, ['-e', `process.stdout.write(String(Object.keys(require(${JSON.stringify(file)})).length > 3))`], { encoding: 'utf8' });
      assert.equal(r.stdout, 'true', `${file}: ${r.stderr}`);
    }
    // The OpenTelemetry bundle (telemetry on: --otlp-endpoint, --prometheus) beside cli.js: the
    // installed CLI starts with telemetry on (without it: "Cannot find module", exit 1).
    const installedCli = path.join(home('fresh'), INSTALL_DIR, version, 'cli.js');
    const withTelemetry = await startServerProcess(process.execPath, [installedCli, '--listen', 'ws://127.0.0.1:0', '--prometheus', '127.0.0.1:0'], { name: 'installed CLI with telemetry' });
    await withTelemetry.stop();
    // The C heap module of the host's arch (the CLI's idle collector loads it).
    assert.ok(existsSync(path.join(home('fresh'), INSTALL_DIR, version, 'native', `malloc-release-linux-${process.arch}.node`)));
    assert.ok(steps.some((s) => /checking that a terminal starts/.test(s)), steps.join('\n'));
    await runOver('fresh', launcher);
    // Installing again replaces the version folder in place, and removes what a cut-off install left.
    const leftover = path.join(home('fresh'), INSTALL_DIR, `${version}.tmp-999999999`);
    mkdirSync(path.join(leftover, 'node_modules'), { recursive: true });
    await installOnHost({ host: 'fresh' }, ssh, bundle, plan);
    const left = (await import('node:fs')).readdirSync(path.join(home('fresh'), INSTALL_DIR));
    assert.deepEqual(left.sort(), ['bin', version].sort());
  });

  it('build: node-pty compiled on the host with npm/node-gyp (forced), then it serves a PTY', async () => {
    const facts = await probeHost({ host: 'build' }, ssh);
    const plan = planInstall(facts, bundle, { forceBuild: true });
    assert.equal(plan.mode, 'build');
    const lines: string[] = [];
    const launcher = await installOnHost({ host: 'build' }, ssh, bundle, plan, { onProgress: (l) => lines.push(l) });
    assert.ok(lines.some((l) => /building node-pty/.test(l)), lines.slice(-20).join('\n'));
    assert.ok(lines.some((l) => /gyp info ok/.test(l)), `node-gyp ran and succeeded: ${lines.slice(-20).join('\n')}`);
    const built = path.join(home('build'), INSTALL_DIR, version, 'node_modules', 'node-pty', 'build', 'Release', 'pty.node');
    assert.ok(existsSync(built), 'pty.node was built on the host');
    assert.notDeepEqual(readFileSync(built), Buffer.alloc(0));
    await runOver('build', launcher);
  });

  const refusal = async (alias: string, opts: { forceBuild?: boolean; bundle?: CliBundle } = {}) => {
    const facts = await probeHost({ host: alias }, ssh);
    try {
      planInstall(facts, opts.bundle ?? bundle, opts);
    } catch (e) {
      assert.ok(e instanceof InstallError, String(e));
      return e;
    }
    throw new Error(`planInstall accepted ${alias}`);
  };

  it('no Node on the host PATH: refused, naming the PATH and the version needed', async () => {
    const e = await refusal('no-node');
    assert.equal(e.kind, 'no-node');
    assert.match(e.message, /no Node\.js on the host's PATH \(.*bin-no-node\).*Node 20 or newer/);
  });

  it('Node too old: refused with its version', async () => {
    const e = await refusal('old-node');
    assert.equal(e.kind, 'node-too-old');
    assert.match(e.message, /Node v16\.20\.2 on the host .* is too old: the CLI needs Node 20/);
  });

  it('a build is needed but there is no compiler/make: refused, naming what is missing', async () => {
    const e = await refusal('no-compiler', { forceBuild: true });
    assert.equal(e.kind, 'no-compiler');
    assert.match(e.message, /C\+\+ compiler/);
    assert.match(e.message, /make/);
    assert.doesNotMatch(e.message, /\bnpm\b,/, 'npm is there');
  });

  it('wrong platform: FreeBSD is refused; an arch with no prebuilt and no sources is refused', async () => {
    const e = await refusal('freebsd');
    assert.equal(e.kind, 'wrong-platform');
    assert.match(e.message, /FreeBSD amd64.*Linux or macOS/);
    const noSources: CliBundle = { ...bundle, canBuild: false };
    const a = await refusal('arm', { bundle: noSources });
    assert.equal(a.kind, 'wrong-platform');
    assert.match(a.message, /linux-arm64-glibc.*only for linux-x64-glibc/);
  });
});
