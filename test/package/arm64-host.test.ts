// Connect to Host's install from the universal VSIX onto an arm64 "host" over a real sshd: that
// login runs in a user namespace whose own binfmt_misc hands aarch64 binaries to
// qemu-aarch64-static (the machine's binfmt is not touched), so its node, the installer's checks,
// the installed CLI and its PTYs are all arm64 processes. The host has no compiler: the
// terminal module must be the VSIX's prebuilt linux-arm64 one.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { connectCommand } from '../../src/client/connect';
import { sshEnvironmentInput } from '../../src/extension/ssh/environment';
import { findBundle, installOnHost, planInstall } from '../../src/extension/ssh/install';
import { chooseExecutor, INSTALL_DIR, probeHost } from '../../src/extension/ssh/probe';
import { repoRoot } from '../support/cli';
import { tempDir } from '../support/tmp';
import { binDir, startSshd, whichOrThrow, type TestSshd } from '../support/sshd';
import { binaryKind, packAndUnpack, PTY, tool } from './helpers';

const work = tempDir('vsix-arm64-host-');

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
    const unpacked = packAndUnpack(work, ['universal']);
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
    // The executor a new probe would choose: the installed launcher (probing again costs two
    // more Node starts under qemu; the ssh tests cover the probe finding an installed CLI).
    const ex = chooseExecutor({ ...facts, installed: launcher, installedVersion: `exec-server ${version}` });
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
