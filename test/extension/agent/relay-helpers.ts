// Shared fixture of the relay tests (relay.ssh.test.ts, relay.attacks.test.ts): a real sshd on
// a loopback port whose "host" runs this project's CLI over ssh stdio, agent endpoints relayed
// to it (or to a scripted hostile host), raw agents. The `twisted` host sees the workspace
// through a bind mount (its own mount namespace, bwrap): there `ws/link` is a symlink out of
// the workspace, while on this machine it is a real folder inside.
import { existsSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { pathToFileURL } from 'node:url';
import { AgentEndpoint } from '../../../src/extension/agent/endpoint';
import type { AgentQuestion } from '../../../src/extension/agent/gate';
import type { RelayTarget } from '../../../src/extension/agent/relay';
import { RpcChannel } from '../../../src/rpc/channel';
import { spawnCommandTransport } from '../../../src/transports/command';
import { cliPath } from '../../support/cli';
import { startSshd, whichOrThrow, type TestSshd } from '../../support/sshd';
import { tempDir } from '../../support/tmp';
import { RawAgent } from './attack-helpers';

export { RawAgent };

// Under the home directory, not /tmp: a sandbox may always write the temp dirs, which would make
// every folder under /tmp count as inside.
export const work = realpathSync(tempDir('agent-relay-', { parent: os.homedir() }));
export const ws = path.join(work, 'ws');
export const outside = path.join(work, 'outside');
export const hostView = path.join(work, 'host-view');
let sshd: TestSshd | undefined;
export const sshChildren: { kill(s: NodeJS.Signals): boolean; pid?: number }[] = [];

export function sshTarget(alias: string, name = alias): RelayTarget {
  return {
    name,
    open: async () => {
      const { transport, child } = await spawnCommandTransport(whichOrThrow('ssh'), ['-F', sshd!.configFile, alias, process.execPath, cliPath, '--listen', 'stdio://']);
      sshChildren.push(child);
      return new RpcChannel(transport, () => child.kill('SIGKILL'));
    },
  };
}

/** A "host" that is a script: it says what the test tells it (forged notifications, hostile paths). */
export function scriptTarget(name: string, script: string): RelayTarget {
  const file = path.join(work, `${name}.js`);
  writeFileSync(file, script);
  return {
    name,
    open: async () => {
      const { transport, child } = await spawnCommandTransport(process.execPath, [file]);
      sshChildren.push(child);
      return new RpcChannel(transport, () => child.kill('SIGKILL'));
    },
  };
}

export interface Fixture {
  endpoint: AgentEndpoint;
  questions: AgentQuestion[];
  agent(): Promise<RawAgent>;
  stop(): Promise<void>;
}

export async function endpointFor(target: RelayTarget, o: { sandboxAll: boolean; answer?: string; policy?: 'askOutsideWorkspace' | 'alwaysAsk' | 'neverAsk' }): Promise<Fixture> {
  const questions: AgentQuestion[] = [];
  const agents: RawAgent[] = [];
  const endpoint = await AgentEndpoint.start({
    port: 0,
    relay: target,
    gate: {
      policy: () => o.policy ?? 'askOutsideWorkspace',
      sandboxAll: () => o.sandboxAll,
      timeoutMs: () => 20_000,
      workspaceRoots: () => [ws],
      ask: async (q) => {
        questions.push(q);
        return o.answer ?? 'Deny';
      },
    },
  });
  return {
    endpoint,
    questions,
    agent: async () => {
      const a = await RawAgent.connect(endpoint.url, endpoint.token);
      agents.push(a);
      return a;
    },
    stop: async () => {
      for (const a of agents) a.close();
      await endpoint.stop();
    },
  };
}

export const start = (processId: string, argv: string[], cwd = ws) => ({ processId, argv, cwd: pathToFileURL(cwd).href, env: {}, tty: false, pipeStdin: false, arg0: null });

export function outputOf(a: RawAgent, id: string): string {
  return a.notifications
    .filter((n) => n.method === 'process/output' && (n.params as { processId: string }).processId === id)
    .map((n) => Buffer.from((n.params as { chunk: string }).chunk, 'base64').toString())
    .join('');
}
export const closedOf = (a: RawAgent, id: string) => a.notifications.some((n) => n.method === 'process/closed' && (n.params as { processId: string }).processId === id);

/** Starts the sshd before the file's tests, stops it (and every ssh child) after them. */
export function useSshd(): void {
before(async () => {
  mkdirSync(path.join(ws, 'link'), { recursive: true }); // here: a folder inside the workspace
  mkdirSync(outside, { recursive: true });
  mkdirSync(hostView, { recursive: true });
  symlinkSync(outside, path.join(hostView, 'link')); // on the twisted host: a link out
  const twist = path.join(work, 'twist.sh');
  writeFileSync(twist, `#!/bin/sh\nexec /usr/bin/bwrap --dev-bind / / --bind ${hostView} ${ws} -- /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n`, { mode: 0o755 });
  sshd = await startSshd([{ alias: 'devbox' }, { alias: 'twisted', command: twist }], { parent: work });
});

after(async () => {
  for (const c of sshChildren) c.kill('SIGKILL');
  await sshd?.stop();
});
}
