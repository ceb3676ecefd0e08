// The real Codex turn through a remote environment's agent endpoint whose host runs the
// REFERENCE executor: `codex exec-server --listen stdio` (reference package 0.169) over a real
// sshd on a host of its own (network namespace + hostname). The reference does not announce that
// it enforces managed sandboxes (no managedSandboxProcesses in its capabilities), so the gate
// does not run commands sandbox-first unasked there: every command asks, naming the host. Allow
// runs it under the reference's sandbox on the host, Deny changes nothing, and a write the
// reference's sandbox stops is a denial notice naming the host.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { referenceBinary, referenceEnv } from '../../support/reference';
import { codexTurn } from './relay.codex-turn';
import { endpointFor, outside, sshTarget, useSshd, ws } from './relay-helpers';

useSshd({ netns: true });

const hostname = 'cat /proc/sys/kernel/hostname';

describe('the real Codex through the agent endpoint of an ssh host running the reference codex exec-server', { timeout: 110_000 }, () => {
  it('workspace-write: each command asks naming the host; Allow runs it there under the reference sandbox, Deny runs nothing, a blocked write is a notice', async () => {
    const allowed = path.join(ws, 'ref-allowed.txt');
    const denied = path.join(ws, 'ref-denied.txt');
    const blocked = path.join(outside, 'ref-blocked.txt');
    const remote = ['env', `CODEX_HOME=${referenceEnv().CODEX_HOME}`, referenceBinary(), 'exec-server', '--listen', 'stdio'];
    const f = await endpointFor(sshTarget('devbox', 'devbox', remote), { sandboxAll: true, answer: (q) => (q.message.includes(denied) ? 'Deny' : 'Allow') });
    try {
      const t = await codexTurn(f, 'workspace-write', [
        { exec_command: `echo ref-on-$(${hostname}) > ${allowed}`, callId: 'c_allow' },
        { exec_command: `echo no > ${denied}`, callId: 'c_deny' },
        { exec_command: `echo x > ${blocked}`, callId: 'c_out' },
      ]);
      if (process.env.RELAY_CODEX_DUMP) console.log(JSON.stringify({ q: f.questions.map((q) => q.message), d: f.denials, a: t.out('c_allow'), n: t.out('c_deny'), o: t.out('c_out') }, null, 1));
      assert.equal(t.result.status, 'completed', `turn: ${JSON.stringify(t.result.error)} ${t.stderr.slice(-1500)}`);
      assert.equal(t.remaining, 0, 'the whole script was played');
      const asked = (file: string) => f.questions.filter((q) => q.message.includes(file));
      for (const file of [allowed, denied, blocked]) {
        assert.equal(asked(file).length, 1, `asked once for ${path.basename(file)}: ${JSON.stringify(f.questions.map((q) => q.message))}`);
        assert.match(asked(file)[0].message, /→ "devbox".* wants to run/, 'the question names the host');
        assert.match(asked(file)[0].detail, /Runs on: devbox/);
      }
      assert.equal(readFileSync(allowed, 'utf8'), 'ref-on-devbox-ns\n', `Allow: ran on the namespaced host (Codex saw: ${t.out('c_allow')})`);
      assert.equal(existsSync(denied), false, `Deny: nothing ran (Codex saw: ${t.out('c_deny')})`);
      assert.match(t.out('c_deny'), /not approved/);
      assert.equal(existsSync(blocked), false, `the reference's sandbox stopped the write outside (Codex saw: ${t.out('c_out')})`);
      assert.equal(f.denials.length, 1, `one sandbox-denial notice: ${JSON.stringify(f.denials)}`);
      assert.match(f.denials[0].connection, /→ "devbox"/, 'the notice names the host');
    } finally {
      await f.stop();
    }
  });
});
