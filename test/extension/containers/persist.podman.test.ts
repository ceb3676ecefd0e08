// Container terminals that outlive the window, against the REAL podman: the installed CLI's
// detached server in the container, reached through `podman exec -i … node -e <bridge>`; a
// process survives its exec being killed (the client resumes through a new exec), and a new
// client — a reloaded window — resumes the same session with the process's output. A stopped
// container ends the session at once, naming its state.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ExecClient } from '../../../src/client/api';
import { chooseContainerExecutor, findBundle, installInContainer, planContainerInstall, probeContainer } from '../../../src/extension/containers/setup';
import { connectPersistentContainer, isContainerStdioFallback, persistentContainerSpec, type PersistentContainerSpec } from '../../../src/extension/containers/persist';
import { execArgv, type ContainerTarget } from '../../../src/extension/containers/target';
import { havePodman, PODMAN, removeContainer, startTestContainer, stopContainer } from '../../support/podman';
import { waitFor } from '../../support/wait';

const REPO = path.resolve(__dirname, '..', '..', '..', '..');
const NAME = `es-ctr-persist-${process.pid}`;
const target: ContainerTarget = { cli: 'podman', program: PODMAN, container: NAME };
const ENV = { inherit: 'all' } as const;
const fallback = () => Promise.reject(new Error('fell back to stdio'));
let spec: PersistentContainerSpec;

function collect(p: { onOutput(f: (e: { data: Uint8Array }) => void): unknown }) {
  let s = '';
  p.onOutput((e) => (s += Buffer.from(e.data).toString()));
  return { text: () => s };
}

/** The bridge execs of this container running on this machine. */
function bridgePids(): number[] {
  return execFileSync('ps', ['-eo', 'pid,args', '--no-headers', '-ww'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(PODMAN) && l.includes(` ${NAME} node -e `))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

describe('containers: persistent connection (real podman)', { skip: !havePodman() && 'podman/runc not installed (node scripts/tools/install.mjs podman runc)', timeout: 240_000 }, () => {
  before(async () => {
    startTestContainer(NAME, { hostname: 'es-ctr-persist' });
    const facts = await probeContainer(target);
    const bundle = findBundle(REPO, '9.9.9-test');
    await installInContainer(target, facts, bundle, planContainerInstall(target, facts, bundle));
    const executor = chooseContainerExecutor(await probeContainer(target));
    assert.equal(executor?.kind, 'installed');
    spec = persistentContainerSpec(PODMAN, execArgv(target, executor.argv))!;
    assert.ok(spec, 'the saved command of an installed CLI is persistent-capable');
    assert.equal(persistentContainerSpec(PODMAN, execArgv(target, ['/usr/bin/codex', 'exec-server', '--listen', 'stdio://'])), undefined, 'codex keeps stdio');
  });
  after(() => removeContainer(NAME));

  it('a process survives its exec being killed and a new client (a reloaded window) resumes the same session with its output; a stop ends it naming the state', async () => {
    const a: ExecClient & { sessionId: string; reconnects: number; state: string } = (await connectPersistentContainer(spec, { clientName: 'persist-a', fallback })) as never;
    assert.ok(!isContainerStdioFallback(a));
    const session = a.sessionId;
    const p = await a.startProcess({ argv: ['/bin/sh', '-c', 'echo before-kill; hostname; while read l; do echo "echo:$l"; done'], cwd: '/', tty: false, pipeStdin: true, envPolicy: ENV } as never);
    const outA = collect(p);
    await waitFor(() => outA.text().includes('es-ctr-persist'), { timeout: 30_000, what: 'output from the container' });
    const first = bridgePids();
    assert.equal(first.length, 1, `one bridge exec: ${first.join(',')}`);
    process.kill(first[0], 'SIGKILL');
    await waitFor(() => a.reconnects === 1 && a.state === 'connected', { timeout: 60_000, what: 'a resumed connection' });
    assert.equal(a.sessionId, session);
    await p.write(Buffer.from('after-kill\n'));
    await waitFor(() => outA.text().includes('echo:after-kill'), { timeout: 30_000, what: 'echo:after-kill' });

    // A reloaded window: the old client is gone, a new one resumes the session.
    await a.close();
    const b = await connectPersistentContainer(spec, { clientName: 'persist-b', fallback, resumeSessionId: session });
    try {
      assert.equal((b as unknown as { sessionId: string }).sessionId, session, 'the same session');
      const adopted = await b.adoptProcess!(p.processId);
      const outB = collect(adopted);
      await waitFor(() => outB.text().includes('echo:after-kill'), { timeout: 30_000, what: 'the retained output' });
      assert.match(outB.text(), /before-kill\n(.|\n)*echo:after-kill\n/);
      await adopted.write(Buffer.from('from-b\n'));
      await waitFor(() => outB.text().includes('echo:from-b'), { timeout: 30_000, what: 'echo:from-b' });
      // Stopped: the session ends at once with the container's state, not after the retry window.
      const closed = new Promise<string | undefined>((res) => adopted.onClose((e) => res(e.error)));
      const t0 = Date.now();
      stopContainer(NAME);
      const why = await closed;
      assert.match(why ?? '', new RegExp(`podman container "${NAME}" stopped \\(exited\\)`), `the reason: ${why}`);
      assert.ok(Date.now() - t0 < 25_000, `ended in ${Date.now() - t0} ms`);
    } finally {
      await b.close();
    }
  });
});
