// Connect to Container with ROOTLESS podman: podman run by an unprivileged user (`nobody`, no
// subordinate ids needed: podman's single mapping, the user's own uid as the container's root),
// reached through a program named `podman` that runs the real one as that user — as the
// execServer.containers.cli setting may name a path. The product's listing shows that user's
// container (root's podman does not have it), the CLI is installed with podman cp, and the
// container's processes run as that user outside (uid_map 0 → 65534). The container is made of
// bind mounts of this machine's /usr and /etc (rootless podman cannot lay an overlay on `/`
// here: "creating overlay failed … invalid argument"). Needs root to switch user (runuser); the
// one thing the wrapper adds is a copy of what `podman cp` sends that the user may read.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCliOk } from '../../../src/extension/containers/cli';
import { connectContainer } from '../../../src/extension/containers/connect';
import { parseContainerList } from '../../../src/extension/containers/list';
import { chooseContainerExecutor, findBundle, installInContainer, planContainerInstall, probeContainer } from '../../../src/extension/containers/setup';
import { listArgv, type ContainerTarget } from '../../../src/extension/containers/target';
import { havePodman, PODMAN, runThrough } from '../../support/podman';
import { tempDir } from '../../support/tmp';

const REPO = path.resolve(__dirname, '..', '..', '..', '..');
const NAME = `es-rootless-${process.pid}`;
const USER = 'nobody';
const RUNC = existsSync('/usr/sbin/runc') ? '/usr/sbin/runc' : '/usr/bin/runc';
const canSwitch = process.getuid?.() === 0 && existsSync('/usr/sbin/runuser') && spawnSync('id', ['-u', USER]).status === 0;
const skip = !havePodman() ? 'podman/runc not installed (node scripts/tools/install.mjs podman runc)' : !canSwitch ? 'needs root (runuser) to run podman as an unprivileged user' : false;

let dir: string;
let wrapper: string;
let target: ContainerTarget;

/** The rootless user's podman (the test side: creating the container takes these machines' flags). */
function asUser(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(wrapper, args, { encoding: 'utf8', timeout: 120_000 });
}

const run = runThrough;

describe('containers: rootless podman', { skip, timeout: 240_000 }, () => {
  before(() => {
    dir = tempDir('es-rootless-');
    chmodSync(dir, 0o755);
    const { uid, gid } = userIds(USER);
    for (const d of ['home', 'run', 'rootfs', 'bin']) mkdirSync(path.join(dir, d));
    const root = path.join(dir, 'rootfs');
    for (const d of ['usr', 'etc', 'tmp', 'run', 'proc', 'dev', 'sys', 'root']) mkdirSync(path.join(root, d));
    for (const l of ['bin', 'sbin', 'lib', 'lib64']) if (existsSync(`/${l}`)) symlinkSync(`usr/${l}`, path.join(root, l));
    for (const d of ['home', 'run', 'rootfs', ...['usr', 'etc', 'tmp', 'run', 'proc', 'dev', 'sys', 'root'].map((x) => `rootfs/${x}`)]) chownSync(path.join(dir, d), uid, gid);
    chmodSync(path.join(dir, 'run'), 0o700);
    wrapper = path.join(dir, 'bin', 'podman');
    // The product stages the CLI in a private temp folder of the user running it, who is the
    // rootless podman's user in real use; here that user is another, so `cp` gets a copy it can read.
    const share = path.join(dir, 'share');
    mkdirSync(share);
    writeFileSync(
      wrapper,
      [
        '#!/bin/sh',
        `if [ "$1" = cp ] && [ "$2" = -- ]; then rm -rf ${share}/stage && cp -a "$3" ${share}/stage && chown -R ${uid}:${gid} ${share}/stage && set -- cp -- ${share}/stage/. "$4"; fi`,
        `exec /usr/sbin/runuser -u ${USER} -- /usr/bin/env -i PATH=/usr/bin:/bin HOME=${dir}/home XDG_RUNTIME_DIR=${dir}/run ${PODMAN} "$@"`,
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    target = { cli: 'podman', program: wrapper, container: NAME };
    const r = asUser([`--runtime=${RUNC}`, '--cgroup-manager=cgroupfs', 'run', '-d', '--name', NAME, '--hostname', 'es-rootless', '--network=none', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1000:1000', '-v', '/usr:/usr:ro', '-v', '/etc:/etc:ro', '--rootfs', root, '/usr/bin/sleep', 'infinity']);
    assert.equal(r.status, 0, r.stderr);
  });
  after(() => {
    if (!wrapper) return;
    asUser(['rm', '-f', '-t', '0', NAME]);
    // Rootless podman leaves its pause process (the user namespace's keeper) running.
    const pidFile = path.join(dir, 'run', 'libpod', 'tmp', 'pause.pid');
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : 0;
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  });

  it("the listing shows the user's own container (root's podman does not); installed with podman cp; its processes are root inside and the unprivileged user outside", async () => {
    const listed = parseContainerList('podman', (await runCliOk(wrapper, listArgv('podman'), 'listing')).stdout).items.find((c) => c.name === NAME);
    assert.equal(listed?.state, 'running', 'listed by the rootless podman');
    const asRoot = parseContainerList('podman', (await runCliOk(PODMAN, listArgv('podman'), 'listing')).stdout).items.map((c) => c.name);
    assert.ok(!asRoot.includes(NAME), `root's podman has its own containers: ${asRoot.join(', ')}`);

    const facts = await probeContainer(target);
    assert.equal(chooseContainerExecutor(facts), undefined, 'nothing to run before the install');
    const bundle = findBundle(REPO, '9.9.9-test');
    await installInContainer(target, facts, bundle, planContainerInstall(target, facts, bundle));
    const executor = chooseContainerExecutor(await probeContainer(target));
    assert.equal(executor?.kind, 'installed');
    const client = await connectContainer(target, executor.argv);
    try {
      assert.equal((await run(client, ['hostname'])).trim(), 'es-rootless');
      assert.equal((await run(client, ['id', '-u'])).trim(), '0', 'root inside');
      const map = (await run(client, ['cat', '/proc/self/uid_map'])).trim().split(/\s+/);
      assert.deepEqual(map.slice(0, 3), ['0', String(userIds(USER).uid), '1'], `the container's root is ${USER} outside: ${map.join(' ')}`);
    } finally {
      await client.close();
    }
  });
});

function userIds(user: string): { uid: number; gid: number } {
  const uid = Number(spawnSync('id', ['-u', user], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', user], { encoding: 'utf8' }).stdout.trim());
  return { uid, gid };
}
