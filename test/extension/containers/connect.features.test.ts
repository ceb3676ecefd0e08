// A container environment gets what an ssh host gets, against the REAL podman (a container of
// this machine's root file system, test/support/podman.ts; the CLI installed in it with podman
// cp as Connect to Container does): Find in Files (Remote Folder) runs its search inside the
// container over `podman exec -i` and finds what only the container has, and the agent endpoint
// relayed to the container (src/extension/agent/relay.ts, as for ssh hosts) asks naming the
// environment, then runs the command and reads the file there.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { ExecClient } from '../../../src/client/api';
import { AgentEndpoint } from '../../../src/extension/agent/endpoint';
import type { AgentQuestion } from '../../../src/extension/agent/gate';
import { connectContainer } from '../../../src/extension/containers/connect';
import { chooseContainerExecutor, findBundle, installInContainer, planContainerInstall, probeContainer } from '../../../src/extension/containers/setup';
import { execArgv, type ContainerTarget } from '../../../src/extension/containers/target';
import { searchInFolder } from '../../../src/extension/search/run';
import { RpcChannel } from '../../../src/rpc/channel';
import { spawnCommandTransport } from '../../../src/transports/command';
import { waitFor } from '../../support/wait';
import { RawAgent } from '../../support/agent-attack';
import { execIn, havePodman, PODMAN, removeContainer, startTestContainer } from '../../support/podman';

const REPO = path.resolve(__dirname, '..', '..', '..', '..');
const NAME = `es-ctr-feat-${process.pid}`;
const HOSTNAME = 'es-ctr-feat';
const target: ContainerTarget = { cli: 'podman', program: PODMAN, container: NAME };
const FOLDER = '/srv/es-feat';
let executor: string[];

describe('containers: search and the agent endpoint in a real podman container', { skip: !havePodman() && 'podman/runc not installed (node scripts/tools/install.mjs podman runc)', timeout: 240_000 }, () => {
  before(async () => {
    startTestContainer(NAME, { hostname: HOSTNAME });
    execIn(NAME, ['sh', '-c', `mkdir -p ${FOLDER}/sub && printf 'alpha\\nthe needle is here\\n' > ${FOLDER}/sub/only-here.txt && echo secret-in-container > ${FOLDER}/note.txt`]);
    const facts = await probeContainer(target);
    const bundle = findBundle(REPO, '9.9.9-test');
    await installInContainer(target, facts, bundle, planContainerInstall(target, facts, bundle));
    const chosen = chooseContainerExecutor(await probeContainer(target));
    assert.equal(chosen?.kind, 'installed');
    executor = chosen.argv;
  });
  after(() => removeContainer(NAME));

  it("Find in Files (Remote Folder): the search runs inside the container and finds the container's file", async () => {
    assert.equal(existsSync(FOLDER), false, 'the folder exists in the container only');
    const client: ExecClient = await connectContainer(target, executor);
    try {
      const o = await searchInFolder(client, FOLDER, { pattern: 'needle' });
      assert.equal(o.exitCode, 0, JSON.stringify(o));
      assert.equal(o.matches.length, 1, JSON.stringify(o.matches));
      assert.equal(o.matches[0].path, 'sub/only-here.txt', 'relative to the folder searched');
      assert.equal(o.matches[0].line, 2);
      assert.match(o.matches[0].text, /the needle is here/);
      const none = await searchInFolder(client, FOLDER, { pattern: 'not-anywhere-xyz' });
      assert.equal(none.matches.length, 0);
    } finally {
      await client.close();
    }
  });

  it('the agent endpoint relayed to the container: the question names the environment; allowed, the command runs and the file is read in the container', async () => {
    const questions: AgentQuestion[] = [];
    const env = `podman-${NAME}`;
    const endpoint = await AgentEndpoint.start({
      port: 0,
      relay: {
        name: env,
        open: async () => {
          const { transport, child } = await spawnCommandTransport(PODMAN, execArgv(target, executor));
          return new RpcChannel(transport, () => child.kill('SIGKILL'));
        },
      },
      gate: {
        policy: () => 'askOutsideWorkspace',
        sandboxAll: () => false,
        timeoutMs: () => 20_000,
        workspaceRoots: () => [FOLDER],
        ask: async (q) => {
          questions.push(q);
          return 'Allow';
        },
      },
    });
    const a = await RawAgent.connect(endpoint.url, endpoint.token);
    try {
      assert.ok((await a.handshake()).result);
      const r = await a.send('process/start', { processId: 'h1', argv: ['/bin/sh', '-c', 'hostname; readlink /proc/self/ns/uts'], cwd: pathToFileURL('/').href, env: { PATH: '/usr/bin:/bin' }, tty: false, pipeStdin: false, arg0: null });
      assert.ok(r.result, `${JSON.stringify(r.error)} ${questions.map((q) => q.detail).join(' / ')}`);
      await waitFor(() => a.notifications.some((n) => n.method === 'process/closed' && (n.params as { processId: string }).processId === 'h1'), { timeout: 30_000, what: 'process/closed of h1' });
      const out = a.notifications
        .filter((n) => n.method === 'process/output' && (n.params as { processId: string }).processId === 'h1')
        .map((n) => Buffer.from((n.params as { chunk: string }).chunk, 'base64').toString())
        .join('');
      assert.equal(out.split('\n')[0], HOSTNAME, `ran in the container: ${out}`);
      assert.equal(questions.length, 1);
      assert.match(questions[0].message, new RegExp(`→ "${env}".* wants to run`));
      assert.match(questions[0].detail, new RegExp(`Runs on: ${env}`));
      const read = await a.send('fs/readFile', { path: pathToFileURL(`${FOLDER}/note.txt`).href });
      assert.ok(read.result, `${JSON.stringify(read.error)} ${execIn(NAME, ['ls', '-la', FOLDER])}`);
      assert.equal(Buffer.from((read.result as { dataBase64: string }).dataBase64, 'base64').toString(), 'secret-in-container\n');
      assert.equal(questions.length, 2, 'a path on the host is asked, as for an ssh host');
    } finally {
      a.close();
      await endpoint.stop();
    }
  });
});
