// Connect to Host against a host that is really remote (docs/security.md, "Network paths and proxies"): a real sshd in a network and
// UTS namespace of its own (test/support/netns.ts: own hostname, own 127.0.0.1, reached through a veth
// pair), running this repository's CLI. Every earlier ssh test host was a loopback sshd whose
// 127.0.0.1 is ours, so a websocket meant for the host's 127.0.0.1:PORT that was opened on this
// machine instead still found the server. Here it finds a squatter the test put on this
// machine's 127.0.0.1:PORT — and the test runs under an imitation of what VS Code's proxy
// support does to Node's network modules in the extension host (test/support/vscode-proxy-patch.ts),
// which is what sent it there. Needs root (namespaces): without it, the tests fail saying so.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ExecClient, ProcessHandle } from '../../../src/client/api';
import { readRunRecord, runPaths } from '../../../src/cli/detach';
import type { EnvironmentConfig } from '../../../src/extension/environments/store';
import { sshEnvironmentInput } from '../../../src/extension/ssh/environment';
import { connectPersistentSsh, ensureDetachedServer, isStdioFallback, persistentSshSpec, type PersistentSshSpec } from '../../../src/extension/ssh/persist';
import { chooseExecutor, probeHost } from '../../../src/extension/ssh/probe';
import type { SshOptions } from '../../../src/extension/ssh/target';
import { cliPath } from '../../support/cli';
import { isAlive } from '../../support/process';
import { tempDir } from '../../support/tmp';
import { patchLikeVsCodeProxySupport, recordingListener } from '../../support/vscode-proxy-patch';
import { waitFor } from '../../support/wait';
import { netnsUnavailable } from '../../support/netns';
import { binDir, startSshd, whichOrThrow, type TestSshd } from '../../support/sshd';

const work = tempDir('ssh-remote-');
const home = path.join(work, 'home');
const ENV = { inherit: 'all' as const, ignoreDefaultExcludes: false, exclude: [], set: {}, includeOnly: [] };
let sshd: TestSshd | undefined;
let ssh: SshOptions;
const logs: string[] = [];
const log = (level: string, message: string) => logs.push(`${level} ${message}`);
const fallback = () => Promise.reject(new Error('fell back to the stdio connection'));

before(async () => {
  const why = netnsUnavailable();
  if (why) throw new Error(`the remote-host ssh tests cannot run: ${why}`);
  const pathBin = binDir(path.join(work, 'path-bin'), { 'exec-server': `#!/bin/sh\nexec ${process.execPath} ${cliPath} "$@"\n` });
  sshd = await startSshd([{ alias: 'remote', env: { HOME: home, PATH: `${pathBin}:/usr/bin:/bin` } }], { parent: work, netns: { hostname: 'exec-remote-host' } });
  ssh = { configFile: sshd.configFile, sshPath: whichOrThrow('ssh') };
});

after(async () => {
  const rec = readRunRecord(runPaths(home).record);
  if (rec && isAlive(rec.pid)) process.kill(rec.pid, 'SIGTERM');
  await sshd?.stop();
});

async function specFor(alias: string): Promise<PersistentSshSpec> {
  const ex = chooseExecutor(await probeHost({ host: alias }, ssh));
  assert.equal(ex?.kind, 'exec-server', 'the host runs this repository CLI');
  const input = sshEnvironmentInput(alias, { host: alias }, ssh, ex!);
  const config: EnvironmentConfig = { name: alias, kind: 'command', command: input.command, args: input.args };
  const spec = persistentSshSpec(config);
  assert.ok(spec, `the saved environment is persistent-capable: ${JSON.stringify(config.args)}`);
  return spec;
}

/** Runs `script` on the host through `client`: its stdout. */
async function runOn(client: ExecClient, script: string): Promise<string> {
  const p: ProcessHandle = await client.startProcess({ argv: ['/bin/sh', '-c', script], cwd: '/', tty: false, envPolicy: ENV });
  let out = '';
  p.onOutput((e) => (out += Buffer.from(e.data).toString()));
  await p.exited;
  await p.closed;
  return out;
}

/** Listening TCP ports in /proc/net/tcp text (of whichever machine printed it). */
const listeningPorts = (procNetTcp: string) =>
  procNetTcp
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[3] === '0A')
    .map((f) => parseInt(f[1].split(':')[1], 16));

describe('Connect to Host on a remote host (sshd in its own network namespace)', () => {
  it('the test host is another machine: its own hostname, and the port its detached server listens on is not one of ours', async () => {
    const spec = await specFor('remote');
    const server = await ensureDetachedServer(spec);
    const ours = listeningPorts(readFileSync('/proc/net/tcp', 'utf8'));
    assert.ok(!ours.includes(server.port), `this machine does not listen on ${server.port}: the server is the host's`);
    assert.equal(sshd!.netns?.hostname, 'exec-remote-host');
  });

  it('attack: under VS Code\'s patched network stack the websocket reaches the HOST\'s detached server through ssh -W; a listener squatting THIS machine\'s 127.0.0.1:PORT never receives the token', async (t) => {
    const spec = await specFor('remote');
    const server = await ensureDetachedServer(spec);
    // The port the host's server has, taken here: where a redirected upgrade would land.
    const squatter = await recordingListener(server.port);
    const patch = patchLikeVsCodeProxySupport();
    t.after(async () => {
      patch.restore();
      await squatter.close();
    });
    const client = await connectPersistentSsh(spec, { clientName: 'remote-attack', log, fallback }).catch((e: Error) => e);
    const seen = squatter.received();
    assert.ok(!seen.includes(server.token), `the squatter received the host's token: ${JSON.stringify(seen.slice(0, 200))}`);
    assert.equal(seen, '', 'the squatter received nothing');
    assert.deepEqual(patch.calls, [], 'the forwarded channel never touched http/https/net/tls');
    if (client instanceof Error) throw new Error(`${client.message}; log:\n${logs.join('\n')}`);
    try {
      assert.ok(!isStdioFallback(client), 'the persistent connection, not the stdio fallback');
      assert.equal((await runOn(client, 'hostname')).trim(), 'exec-remote-host', 'processes run on the host');
      assert.ok(listeningPorts(await runOn(client, 'cat /proc/net/tcp')).includes(server.port), "the host's listeners include its detached server");
    } finally {
      await client.close();
    }
  });

  it('a dropped ssh connection to the remote host is resumed: the same session, a process started before the drop still answers', async () => {
    const spec = await specFor('remote');
    const a = await connectPersistentSsh(spec, { clientName: 'remote-resume', log, fallback });
    try {
      const session = a.sessionId;
      const p = await a.startProcess({ argv: ['/bin/sh', '-c', 'echo "on-$(hostname)"; while read l; do echo "echo:$l"; done'], cwd: '/', tty: false, pipeStdin: true, envPolicy: ENV });
      let out = '';
      p.onOutput((e) => (out += Buffer.from(e.data).toString()));
      await waitFor(() => out.includes('on-exec-remote-host'), { what: 'the first line from the host', detail: () => out });
      const forwarding = sshChildren(sshd!.configFile);
      assert.equal(forwarding.length, 1, `one ssh -W: ${forwarding.join(',')}`);
      process.kill(forwarding[0], 'SIGKILL');
      await waitFor(() => (a as unknown as { reconnects: number }).reconnects === 1 && a.state === 'connected', { what: 'a resumed connection', detail: () => logs.join('\n') });
      assert.equal(a.sessionId, session, 'the same session');
      await p.write(Buffer.from('after-drop\n'));
      await waitFor(() => out.includes('echo:after-drop'), { what: 'the echo after the drop', detail: () => out });
      await p.closeStdin();
      assert.equal(await p.exited, 0);
    } finally {
      await a.close();
    }
  });
});

/** Pids of this test's `ssh … -W …` children (matched by the temp config file). */
function sshChildren(configFile: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (argv.includes('-W') && argv.includes(configFile)) pids.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return pids;
}
