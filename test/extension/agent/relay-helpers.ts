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
import { relayTargetOf } from '../../../src/extension/agent/relay-targets';
import { RpcChannel } from '../../../src/rpc/channel';
import { spawnCommandTransport } from '../../../src/transports/command';
import { cliPath } from '../../support/cli';
import { childPids, cmdline } from '../../support/process';
import { startSshd, whichOrThrow, type TestSshd } from '../../support/sshd';
import { tempDir } from '../../support/tmp';
import { RawAgent } from '../../support/agent-attack';

export { RawAgent };

// Under the home directory, not /tmp: a sandbox may always write the temp dirs, which would make
// every folder under /tmp count as inside.
export const work = realpathSync(tempDir('agent-relay-', { parent: os.homedir() }));
export const ws = path.join(work, 'ws');
export const outside = path.join(work, 'outside');
export const hostView = path.join(work, 'host-view');
let sshd: TestSshd | undefined;
const scriptChildren: { kill(s: NodeJS.Signals): boolean; pid?: number }[] = [];

/**
 * The host's exec-server over ssh stdio, as the UI builds it for a command environment
 * (relay-targets.ts): this project's CLI, or `remote` (e.g. the reference `codex exec-server --listen stdio`).
 */
export function sshTarget(alias: string, name = alias, remote: string[] = [process.execPath, cliPath, '--listen', 'stdio://']): RelayTarget {
  return relayTargetOf({ name, kind: 'command', command: whichOrThrow('ssh'), args: ['-F', sshd!.configFile, alias, ...remote] }, async () => undefined);
}

/** Every ssh client of this file's sshd (the relays' and the gates' links): SIGKILLed, a forced drop. */
export function killSshClients(): number {
  const pids = childPids(process.pid).filter((pid) => sshd && cmdline(pid).includes(sshd.configFile));
  for (const pid of pids) process.kill(pid, 'SIGKILL');
  return pids.length;
}

/** A "host" that is a script: it says what the test tells it (forged notifications, hostile paths). */
export function scriptTarget(name: string, script: string): RelayTarget {
  const file = path.join(work, `${name}.js`);
  writeFileSync(file, script);
  return {
    name,
    open: async () => {
      const { transport, child } = await spawnCommandTransport(process.execPath, [file]);
      scriptChildren.push(child);
      return new RpcChannel(transport, () => child.kill('SIGKILL'));
    },
  };
}

export type SandboxDenial = { connection: string; argv: string[]; cwd: string; exitCode: number };

export interface Fixture {
  endpoint: AgentEndpoint;
  questions: AgentQuestion[];
  /** What the endpoint reported as sandbox denials (the UI's notice). */
  denials: SandboxDenial[];
  agent(): Promise<RawAgent>;
  stop(): Promise<void>;
}

export async function endpointFor(
  target: RelayTarget,
  o: { sandboxAll: boolean; answer?: string | ((q: AgentQuestion) => string); policy?: 'askOutsideWorkspace' | 'alwaysAsk' | 'neverAsk'; log?: (level: string, message: string) => void },
): Promise<Fixture> {
  const questions: AgentQuestion[] = [];
  const denials: SandboxDenial[] = [];
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
        return typeof o.answer === 'function' ? o.answer(q) : (o.answer ?? 'Deny');
      },
    },
    onSandboxDenied: (d) => denials.push(d),
    log: o.log,
  });
  return {
    endpoint,
    questions,
    denials,
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

/** The running sshd of this file (useSshd). */
export const runningSshd = (): TestSshd => sshd!;

/**
 * Starts the sshd before the file's tests, stops it (and every ssh child) after them. `netns`:
 * the sshd runs on a host of its own (test/support/netns.ts: its own network namespace and
 * hostname, reached over a veth pair; the filesystem is shared, so paths are the same there).
 */
export function useSshd(opts: { netns?: boolean } = {}): void {
before(async () => {
  mkdirSync(path.join(ws, 'link'), { recursive: true }); // here: a folder inside the workspace
  mkdirSync(outside, { recursive: true });
  mkdirSync(hostView, { recursive: true });
  symlinkSync(outside, path.join(hostView, 'link')); // on the twisted host: a link out
  const twist = path.join(work, 'twist.sh');
  writeFileSync(twist, `#!/bin/sh\nexec /usr/bin/bwrap --dev-bind / / --bind ${hostView} ${ws} -- /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n`, { mode: 0o755 });
  // The login's bash reads ~/.bashrc (sshd runs it), which on this machine runs `pyenv rehash`:
  // a lock left by a killed shell made every login wait 60 s for it.
  const env = { PYENV_REHASH_TIMEOUT: '1' };
  sshd = await startSshd([{ alias: 'devbox', env }, { alias: 'twisted', command: twist, env }], { parent: work, netns: opts.netns ? { hostname: 'devbox-ns' } : undefined });
});

after(async () => {
  killSshClients();
  for (const c of scriptChildren) c.kill('SIGKILL');
  await sshd?.stop();
});
}
