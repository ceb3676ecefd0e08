// The relay survives an ssh drop below the agent (src/extension/agent/relay.ts, docs/extension.md
// "Agents on remote hosts"): a Connect to Host environment whose host runs this project's CLI is
// relayed through its detached server (`--detach`, then `ssh -W`, a REAL sshd), and when every ssh
// client of that host is SIGKILLed mid-command the relay resumes the host session through a new
// ssh: the agent's websocket stays open, the process keeps its id, the output printed while no
// link existed arrives (caught up with process/read), nothing twice, and the agent goes on
// working. On the old relay the agent's connection was closed at the drop.
import { strict as assert } from 'node:assert';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readRunRecord, runPaths } from '../../../src/cli/detach';
import { relayTargetOf } from '../../../src/extension/agent/relay-targets';
import { sshRelayRoutes } from '../../../src/extension/ssh/persist';
import { sshArgv } from '../../../src/extension/ssh/target';
import { cliPath } from '../../support/cli';
import { childPids, cmdline, isAlive } from '../../support/process';
import { binDir, startSshd, whichOrThrow, type TestSshd } from '../../support/sshd';
import { waitFor } from '../../support/wait';
import { closedOf, endpointFor, outputOf, start, work, ws } from './relay-helpers';

const home = path.join(work, 'drop-home');
let sshd: TestSshd;
const logs: string[] = [];

before(async () => {
  mkdirSync(ws, { recursive: true });
  mkdirSync(home, { recursive: true });
  const bin = binDir(path.join(work, 'drop-bin'), { 'exec-server': `#!/bin/sh\nexec ${process.execPath} ${cliPath} "$@"\n` });
  sshd = await startSshd([{ alias: 'devbox', env: { HOME: home, PATH: `${bin}:/usr/bin:/bin`, PYENV_REHASH_TIMEOUT: '1' } }], { parent: work });
});

after(async () => {
  for (const pid of sshClients()) process.kill(pid, 'SIGKILL');
  const rec = readRunRecord(runPaths(home).record);
  if (rec && isAlive(rec.pid)) process.kill(rec.pid, 'SIGTERM');
  await sshd?.stop();
});

/** This machine's ssh clients of the test's sshd (the relay's link and the gate's). */
function sshClients(): number[] {
  return childPids(process.pid).filter((pid) => sshd && cmdline(pid).includes(sshd.configFile));
}

/** The environment exactly as Connect to Host saves it for this project's CLI on the host. */
function devboxTarget() {
  const ssh = whichOrThrow('ssh');
  const config = { name: 'devbox', kind: 'command' as const, command: ssh, args: sshArgv({ host: 'devbox' }, { sshPath: ssh, configFile: sshd.configFile }, 'exec-server --listen stdio://', { keepAlive: true }) };
  const log = (level: string, m: string) => logs.push(`${level} ${m}`);
  return relayTargetOf(config, async () => undefined, log, sshRelayRoutes(undefined, undefined, log));
}

describe('agent relay through Connect to Host\'s detached server', () => {
  it('a forced ssh drop mid-command: the agent keeps its connection and process, and loses no output', async () => {
    const marker = path.join(ws, 'after-the-drop');
    const f = await endpointFor(devboxTarget(), { sandboxAll: true, log: (level, m) => logs.push(`${level} ${m}`) });
    try {
      const a = await f.agent();
      const init = await a.handshake();
      assert.ok(init.result, JSON.stringify(init.error));
      // Prints three lines, waits for the test to have cut every ssh link, then prints 400 more at once.
      const script = `for i in 1 2 3; do echo early-$i; done; while [ ! -e ${marker} ]; do sleep 0.05; done; i=0; while [ $i -lt 400 ]; do i=$((i+1)); echo during-$i; done`;
      const r = await a.send('process/start', start('p1', ['/bin/sh', '-c', script]));
      assert.ok(r.result, `${JSON.stringify(r.error)} ${f.questions[0]?.detail ?? ''}`);
      await waitFor(() => outputOf(a, 'p1').includes('early-3'), { timeout: 30_000, what: 'output before the drop' });
      const killed = sshClients();
      assert.ok(killed.length >= 2, `the relay's ssh -W and the gate's: ${killed.map(cmdline).join(' | ')}`);
      for (const pid of killed) process.kill(pid, 'SIGKILL');
      writeFileSync(marker, '');
      await waitFor(() => closedOf(a, 'p1'), { timeout: 60_000, what: `process/closed of p1 after the resume (log: ${logs.join(' | ')})` });
      const want = ['early-1', 'early-2', 'early-3', ...Array.from({ length: 400 }, (_, i) => `during-${i + 1}`)].join('\n') + '\n';
      assert.equal(outputOf(a, 'p1'), want, 'every line, once, in order');
      const seqs = a.notifications.filter((n) => (n.params as { processId?: string }).processId === 'p1').map((n) => (n.params as { seq: number }).seq);
      assert.deepEqual(seqs, [...new Set(seqs)].sort((x, y) => x - y), 'strictly increasing seqs: nothing twice');
      const exited = a.notifications.find((n) => n.method === 'process/exited' && (n.params as { processId: string }).processId === 'p1');
      assert.equal((exited?.params as { exitCode?: number } | undefined)?.exitCode, 0, 'its exit reached the agent');
      assert.equal(a.ws.readyState, a.ws.OPEN, 'the agent connection stayed open');
      assert.ok(logs.some((l) => /host session resumed/.test(l)), logs.join('\n'));
      assert.ok(!sshClients().some((pid) => killed.includes(pid)), 'new ssh links');

      // The same connection goes on: a read of the finished process and a new command.
      const read = await a.send('process/read', { processId: 'p1', afterSeq: 0, waitMs: 0 });
      assert.ok(read.result, JSON.stringify(read.error));
      const r2 = await a.send('process/start', start('p2', ['/bin/sh', '-c', 'echo still-here']));
      assert.ok(r2.result, JSON.stringify(r2.error));
      await waitFor(() => closedOf(a, 'p2'), { timeout: 30_000, what: 'process/closed of p2' });
      assert.equal(outputOf(a, 'p2'), 'still-here\n');
    } finally {
      await f.stop();
    }
  });
});
