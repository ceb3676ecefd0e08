// The agent endpoint of a remote environment (src/extension/agent/relay.ts): an agent's
// connection relayed through a real sshd on a loopback port to this project's CLI on the
// "host", behind the same gate as Local: sandboxed commands unasked, unsandboxed ones asked.
import { strict as assert } from 'node:assert';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { neverStarted } from '../../support/agent-attack';
import { waitFor } from '../../support/wait';
import { closedOf, endpointFor, killSshClients, outputOf, sshTarget, start, useSshd, ws } from './relay-helpers';

useSshd();

describe('agent endpoint of an ssh environment (relay)', () => {
  it('a command runs on the host under the default policy, sandboxed and unasked; its output comes back in order', async () => {
    const f = await endpointFor(sshTarget('devbox'), { sandboxAll: true });
    try {
      const a = await f.agent();
      const init = await a.handshake();
      assert.ok(init.result, JSON.stringify(init.error));
      const r = await a.send('process/start', { ...start('p1', ['/bin/sh', '-c', 'for i in 1 2 3 4 5; do echo line-$i; done; echo host-$SSH_CONNECTION | cut -c1-9']), env: { API_TOKEN: 'hunter2-secret' }, envPolicy: { inherit: 'all' } });
      assert.ok(r.result, `${JSON.stringify(r.error)} ${f.questions[0]?.detail}`);
      assert.equal((r.result as { sandboxType?: string }).sandboxType !== 'none', true, 'sandboxed on the host');
      await waitFor(() => closedOf(a, 'p1'), { timeout: 30_000, what: 'process/closed of p1' });
      assert.equal(outputOf(a, 'p1'), 'line-1\nline-2\nline-3\nline-4\nline-5\nhost-127.\n', 'the host ran it (SSH_CONNECTION is set there only)');
      assert.equal(f.questions.length, 0, 'no question for a sandboxed command inside the workspace');
      const seqs = a.notifications.filter((n) => (n.params as { processId?: string }).processId === 'p1').map((n) => (n.params as { seq: number }).seq);
      assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y), 'in seq order');
      // The audit log: the decision, by the rule, on devbox, the secret masked.
      const starts = f.endpoint.audit.list().filter((r) => r.method === 'process/start');
      assert.equal(starts.length, 1, f.endpoint.audit.toJsonLines());
      assert.deepEqual({ ...starts[0], time: undefined, request: undefined }, { time: undefined, request: undefined, environment: 'devbox', connection: starts[0].connection, client: 'attack-test', method: 'process/start', outcome: 'allowed', by: 'rule', why: 'sandboxed inside the workspace' });
      assert.match(starts[0].connection, /→ "devbox"/);
      assert.match(starts[0].request, /"API_TOKEN":"<redacted>"/);
      assert.doesNotMatch(f.endpoint.audit.toJsonLines(), /hunter2/, 'secrets masked in the audit log');
    } finally {
      await f.stop();
    }
  });

  for (const answer of ['Allow', 'Deny']) {
    it(`an unsandboxed command asks, naming the host; ${answer} ${answer === 'Allow' ? 'runs it there' : 'changes nothing'}`, async () => {
      const marker = path.join(ws, `unsandboxed-${answer}`);
      const f = await endpointFor(sshTarget('devbox'), { sandboxAll: false, answer });
      try {
        const a = await f.agent();
        await a.handshake();
        const r = await a.send('process/start', start('u1', ['/bin/sh', '-c', `echo ran > ${marker}`]));
        assert.equal(f.questions.length, 1);
        assert.match(f.questions[0].message, /agent connection #\d+ \(127\.0\.0\.1:\d+\) → "devbox".* wants to run/);
        assert.match(f.questions[0].detail, /Runs on: devbox/);
        if (answer === 'Allow') {
          assert.ok(r.result, JSON.stringify(r.error));
          await waitFor(() => closedOf(a, 'u1'), { timeout: 30_000, what: 'process/closed' });
          assert.ok(existsSync(marker));
          assert.deepEqual(f.endpoint.audit.list().filter((r) => r.method === 'process/start').map((r) => [r.outcome, r.by, r.why]), [['allowed', 'user', 'user allowed']]);
        } else {
          assert.match(r.error?.message ?? '', /not approved/);
          await neverStarted(a, 'u1');
          assert.ok(!existsSync(marker), 'nothing ran');
          const [rec] = f.endpoint.audit.list().filter((r) => r.method === 'process/start');
          assert.deepEqual([rec?.outcome, rec?.by], ['refused', 'user']);
          assert.match(rec.why, /the VS Code user denied it/);
        }
      } finally {
        await f.stop();
      }
    });
  }

  it('a forced ssh drop mid-command ends the agent connection (no hang)', async () => {
    // Sandboxed and unasked, as an agent's command runs. In three CI-like runs this command got
    // one output chunk and exited at once: bubblewrap's "Can't bind mount …" when a carve-out
    // under /tmp (a repository of another test) vanished while it set the sandbox up; the
    // sandbox's setup is now done again (test/server/sandbox/bwrap.setup-retry.test.ts).
    const f = await endpointFor(sshTarget('devbox'), { sandboxAll: true });
    try {
      const a = await f.agent();
      await a.handshake();
      const r = await a.send('process/start', start('long', ['/bin/sh', '-c', 'echo before; sleep 30']));
      assert.ok(r.result, JSON.stringify(r.error));
      assert.equal(f.questions.length, 0, 'sandboxed: no question');
      await waitFor(() => outputOf(a, 'long').includes('before'), {
        timeout: 30_000,
        what: 'output before the drop',
        // What the agent did get, should it not come (a CI run under load once saw nothing in 30 s).
        detail: () => `start ${JSON.stringify(r.result)}; output ${JSON.stringify(outputOf(a, "long"))}; notifications: ${JSON.stringify(a.notifications.map((n) => [n.method, (n.params as { processId?: string; seq?: number }).processId, (n.params as { seq?: number }).seq]))}; audit: ${f.endpoint.audit.toJsonLines().slice(-1500)}`,
      });
      const closed = new Promise<void>((res) => a.ws.once('close', () => res()));
      assert.ok(killSshClients() >= 2, "the relay's ssh and the gate's");
      await closed;
    } finally {
      await f.stop();
    }
  });
});
