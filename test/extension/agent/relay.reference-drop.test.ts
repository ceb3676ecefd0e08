// An ssh drop under an agent whose host runs the REFERENCE `codex exec-server` over stdio
// (docs/security.md, "Remote endpoints: the gate judged on the host"): the reference serves
// stdio only through ssh (no detached server to resume), and on its stdin's end it exits and
// ends its processes. So the relay cannot resume; what it promises is that the end is clear and
// leaves nothing behind: the agent's websocket closes at once with a reason that names the host
// and says the link is not resumable and its processes ended, the output printed before the
// drop reached the agent, and on the host neither the server nor the command runs on. On the old relay the reason said only "the connection
// to devbox was lost (…)".
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { referenceBinary, referenceEnv } from '../../support/reference';
import { cmdline, isAlive, procInfo } from '../../support/process';
import { waitFor } from '../../support/wait';
import { endpointFor, killSshClients, outputOf, sshTarget, start, useSshd, ws } from './relay-helpers';

useSshd();

/** Every process of this machine (the "host" is this machine behind a real sshd). */
const allPids = () => readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number);

describe('agent relay to a host running the reference codex exec-server (stdio)', { timeout: 120_000 }, () => {
  it('a forced ssh drop mid-command: the agent connection ends at once, saying why; nothing runs on on the host', async () => {
    const tag = `refdrop-${process.pid}-${Date.now()}`;
    const late = path.join(ws, `${tag}.late`); // written only if the command outlived the drop by 20 s
    const remote = ['env', `CODEX_HOME=${referenceEnv().CODEX_HOME}`, referenceBinary(), 'exec-server', '--listen', 'stdio'];
    const f = await endpointFor(sshTarget('devbox', 'devbox', remote), { sandboxAll: true, answer: () => 'Allow' });
    try {
      const a = await f.agent();
      const init = await a.handshake();
      assert.ok(init.result, JSON.stringify(init.error));
      // `tag` in the argv finds the command on the host (this machine) afterwards.
      const script = `echo early-1; echo early-2; sleep 20; echo late > ${late}`;
      const r = await a.send('process/start', start('p1', ['/bin/sh', '-c', script, tag]));
      assert.ok(r.result, `${JSON.stringify(r.error)} ${f.questions[0]?.detail ?? ''}`);
      await waitFor(() => outputOf(a, 'p1').includes('early-2'), { timeout: 30_000, what: 'output before the drop' });
      const running = () => allPids().filter((pid) => cmdline(pid).includes(tag));
      const [command] = running().filter((pid) => cmdline(pid).startsWith('/bin/sh -c'));
      assert.ok(command, 'the command runs on the host');
      // Its server: the reference process it runs under.
      let server = procInfo(command)?.ppid ?? 0;
      while (server > 1 && !cmdline(server).startsWith(`${referenceBinary()} exec-server`)) server = procInfo(server)?.ppid ?? 0;
      assert.ok(server > 1, `the command runs under the reference server (${cmdline(procInfo(command)?.ppid ?? 0)})`);

      let reason = '';
      const closed = new Promise<number>((resolve) => a.ws.once('close', (code, why) => ((reason = why.toString()), resolve(code))));
      const t0 = Date.now();
      assert.ok(killSshClients() >= 1, 'ssh clients to drop');
      await closed;
      assert.ok(Date.now() - t0 < 10_000, `the agent's connection ended at once (${Date.now() - t0} ms)`);
      assert.match(reason, /devbox/, `the reason names the host: ${reason}`);
      assert.match(reason, /not resumable/, `and that it cannot be resumed: ${reason}`);
      assert.match(reason, /processes ended/, `and that its processes ended: ${reason}`);
      assert.equal(outputOf(a, 'p1'), 'early-1\nearly-2\n', 'what was printed before the drop reached the agent');
      await waitFor(() => running().length === 0, { timeout: 15_000, what: `the command gone from the host (${running().map(cmdline).join(' | ')})` });
      await waitFor(() => !isAlive(server), { timeout: 15_000, what: `the reference server ${server} gone from the host` });
    } finally {
      await f.stop();
    }
  });
});
