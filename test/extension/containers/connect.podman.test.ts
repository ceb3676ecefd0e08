// Connect to Container's logic against the REAL podman (no image: a container of this machine's
// root file system, ./podman.ts): the listing of `podman ps --format json` as podman prints it,
// the probe finds no executor, the install copies this repository's CLI + node-pty in with
// `podman cp` and checks it inside, then the stdio transport `podman exec -i -- NAME …` serves a
// session whose processes run in the container (its hostname, its pid namespace); stopping the
// container ends the session with the reason "stopped", starting it again connects again. A
// container without Node is refused with the reason, nothing copied.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ExecClient } from '../../../src/client/api';
import { runCliOk } from '../../../src/extension/containers/cli';
import { connectContainer, containerState } from '../../../src/extension/containers/connect';
import { parseContainerList } from '../../../src/extension/containers/list';
import { chooseContainerExecutor, ContainerInstallError, findBundle, installInContainer, planContainerInstall, probeContainer } from '../../../src/extension/containers/setup';
import { listArgv, type ContainerTarget } from '../../../src/extension/containers/target';
import { execIn, havePodman, PODMAN, runThrough, removeContainer, startContainer, startTestContainer, stopContainer } from '../../support/podman';

const REPO = path.resolve(__dirname, '..', '..', '..', '..');
const NAME = `es-ctr-test-${process.pid}`;
const target: ContainerTarget = { cli: 'podman', program: PODMAN, container: NAME };
const version = '9.9.9-test';

const run = runThrough;

describe('containers: real podman', { skip: !havePodman() && 'podman/runc not installed (node scripts/tools/install.mjs podman runc)', timeout: 240_000 }, () => {
  before(() => startTestContainer(NAME, { hostname: 'es-ctr-host' }));
  after(() => removeContainer(NAME));

  it('lists the running container from podman ps --format json', async () => {
    const r = await runCliOk(PODMAN, listArgv('podman'), 'listing');
    const { items } = parseContainerList('podman', r.stdout);
    const c = items.find((x) => x.name === NAME);
    assert.ok(c, `listed: ${items.map((x) => x.name).join(', ')}`);
    assert.equal(c.state, 'running');
    assert.match(c.id, /^[0-9a-f]{64}$/);
  });

  it('no executor inside → the CLI is copied in with podman cp, checked, and serves processes that run in the container; stop ends it as "stopped", start connects again, removal ends it as "removed"', async () => {
    const facts = await probeContainer(target);
    assert.equal(facts.os, 'Linux');
    assert.equal(chooseContainerExecutor(facts), undefined, 'nothing to run before the install');
    const bundle = findBundle(REPO, version);
    const plan = planContainerInstall(target, facts, bundle);
    assert.equal(plan.mode, 'prebuilt');
    const steps: string[] = [];
    const launcher = await installInContainer(target, facts, bundle, plan, { onProgress: (l) => steps.push(l) });
    assert.equal(launcher, path.posix.join(facts.home, '.exec-server', 'bin', 'exec-server'));
    assert.ok(steps.some((s) => /podman container/.test(s) && /copying/.test(s)), steps.join('\n'));
    assert.match(execIn(NAME, [launcher, '--version']), /exec-server/);

    const after = chooseContainerExecutor(await probeContainer(target));
    assert.equal(after?.kind, 'installed');
    let client = await connectContainer(target, after.argv);
    assert.equal((await run(client, ['hostname'])).trim(), 'es-ctr-host', "the process runs in the container (its hostname)");
    const ns = (await run(client, ['readlink', '/proc/self/ns/pid'])).trim();
    assert.match(ns, /^pid:\[\d+\]$/);
    assert.notEqual(ns, readlinkSync('/proc/self/ns/pid'), "the container's pid namespace, not this machine's");

    // Stop: the session ends with the container's state as its reason.
    const p = await client.startProcess({ argv: ['sleep', '600'], cwd: '/' } as Parameters<ExecClient['startProcess']>[0]);
    const closed = new Promise<string | undefined>((res) => p.onClose((e) => res(e.error)));
    stopContainer(NAME);
    const why = await closed;
    assert.match(why ?? '', new RegExp(`podman container "${NAME}" stopped \\(exited\\)`), `the reason says it stopped: ${why}`);
    assert.deepEqual(await containerState(target), { running: false, status: 'exited' });
    await assert.rejects(connectContainer(target, after.argv), (e: Error) => new RegExp(`podman container "${NAME}" is not running`).test(e.message) && /podman:/.test(e.message));

    startContainer(NAME);
    client = await connectContainer(target, after.argv);
    assert.equal((await run(client, ['hostname'])).trim(), 'es-ctr-host', 'connected again after the start (the installed CLI survived the restart)');
    // Removed while connected: the reason says so.
    const q = await client.startProcess({ argv: ['sleep', '600'], cwd: '/' } as Parameters<ExecClient['startProcess']>[0]);
    const gone = new Promise<string | undefined>((res) => q.onClose((e) => res(e.error)));
    removeContainer(NAME);
    assert.match((await gone) ?? '', new RegExp(`podman container "${NAME}" was removed`));
    await client.close();
    startTestContainer(NAME, { hostname: 'es-ctr-host' }); // for the tests after this one
  });

  it('a real container whose PATH has no node: the refusal names the container, its PATH and Node 20; nothing is copied', async () => {
    // A PATH of only what the probe script uses (symlinks on this machine's file system, which the container's root is).
    const bin = mkdtempSync(path.join(REPO, 'out', 'ctr-no-node-'));
    for (const p of ['sh', 'uname', 'grep', 'ls', 'head', 'dirname', 'ldd']) symlinkSync(execFileSync('sh', ['-c', `command -v ${p}`], { encoding: 'utf8' }).trim(), path.join(bin, p));
    const name = `${NAME}-nonode`;
    try {
      startTestContainer(name, { env: { PATH: bin } });
      const t: ContainerTarget = { ...target, container: name };
      const facts = await probeContainer(t);
      assert.equal(facts.node, undefined, 'the probe finds no node');
      assert.throws(() => planContainerInstall(t, facts, findBundle(REPO, version)), (e: unknown) => e instanceof ContainerInstallError && e.kind === 'no-node' && e.message.includes(`podman container "${name}" has no Node.js on its PATH (${bin})`) && /Node 20 or newer/.test(e.message));
      assert.match(execIn(name, ['sh', '-c', 'ls -a "$HOME"']), /^(?![\s\S]*\.exec-server)/, 'nothing copied into the container');
    } finally {
      removeContainer(name);
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('probe facts with Node 18 are refused by the plan, with the reason, before anything is copied', async () => {
    const old = { ...(await probeContainer(target)), node: '/usr/bin/node', nodeVersion: 'v18.19.0' };
    assert.throws(() => planContainerInstall(target, old, findBundle(REPO, version)), /Node v18\.19\.0 .* too old/);
  });

  it('a container that does not exist: the error names podman and quotes it', async () => {
    await assert.rejects(probeContainer({ ...target, container: 'es-no-such-ctr' }), /podman: .*no container with name or ID "es-no-such-ctr" found/);
  });
});
