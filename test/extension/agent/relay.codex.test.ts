// The real Codex turn through a remote environment's agent endpoint: the unmodified `codex
// app-server` (reference package, a stand-in model) on "the laptop" (this machine) → the agent
// endpoint (its gate) → the relay → a real sshd on a host of its own (its own network namespace
// and hostname, test/support/netns.ts) → this project's CLI there over ssh stdio. The gate judges
// on the host: a sandboxed command inside the workspace runs unasked (the host enforces
// sandboxes), a command the sandbox stops is a denial notice naming the host, an unsandboxed one
// asks naming the host (Deny changes nothing, Allow runs it there). The file written says which
// host ran it (the namespace's hostname).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { AgentQuestion } from '../../../src/extension/agent/gate';
import { codexTurn } from './relay.codex-turn';
import { endpointFor, outside, sshTarget, useSshd, ws, type Fixture } from './relay-helpers';

useSshd({ netns: true });

const hostname = 'cat /proc/sys/kernel/hostname';
const dump = (f: Fixture) => JSON.stringify(f.questions.map((q: AgentQuestion) => q.message));

describe('the real Codex through the agent endpoint of an ssh host (relay)', { timeout: 110_000 }, () => {
  it('workspace-write: a sandboxed command runs on the host unasked; one the sandbox stops is a notice naming the host', async () => {
    const made = path.join(ws, 'codex-sandboxed.txt');
    const blocked = path.join(outside, 'codex-blocked.txt');
    const f = await endpointFor(sshTarget('devbox'), { sandboxAll: true, answer: 'Deny' });
    try {
      const t = await codexTurn(f, 'workspace-write', [
        { exec_command: `echo made-on-$(${hostname}) > ${made}`, callId: 'c_in' },
        { exec_command: `echo x > ${blocked}`, callId: 'c_out' },
      ]);
      if (process.env.RELAY_CODEX_DUMP) console.log(JSON.stringify({ q: f.questions.map((q) => [q.message, q.detail]), d: f.denials, in: t.out('c_in'), o: t.out('c_out') }, null, 1));
      assert.equal(t.result.status, 'completed', `turn: ${JSON.stringify(t.result.error)} ${t.stderr.slice(-1500)}`);
      assert.equal(t.remaining, 0, 'the whole script was played');
      assert.equal(readFileSync(made, 'utf8'), 'made-on-devbox-ns\n', `ran on the namespaced host (Codex saw: ${t.out('c_in')})`);
      assert.equal(existsSync(blocked), false, `the sandbox stopped the write outside (Codex saw: ${t.out('c_out')})`);
      assert.deepEqual(f.questions.map((q) => q.message), [], 'no question: both commands were sandboxed on a host that enforces sandboxes');
      assert.equal(f.denials.length, 1, `one sandbox-denial notice: ${JSON.stringify(f.denials)}`);
      assert.match(f.denials[0].connection, /agent connection #\d+ \(127\.0\.0\.1:\d+\) → "devbox"/, 'the notice names the host');
      assert.equal(f.denials[0].argv.at(-1), `echo x > ${blocked}`);
      // The audit log lists every decision: both commands, by the rule, on devbox.
      const starts = f.endpoint.audit.list().filter((r) => r.method === 'process/start');
      assert.deepEqual(starts.map((r) => [r.environment, r.outcome, r.by, r.why]), [['devbox', 'allowed', 'rule', 'sandboxed inside the workspace'], ['devbox', 'allowed', 'rule', 'sandboxed inside the workspace']], f.endpoint.audit.toJsonLines());
      assert.ok(starts[0].request.includes(made) && starts[1].request.includes(blocked));
    } finally {
      await f.stop();
    }
  });

  // sandboxAgentCommands off: the gate does not put the command in a sandbox first, so it asks.
  it('danger-full-access, sandbox-first off: an unsandboxed command asks naming the host; Deny changes nothing, Allow runs it there', async () => {
    const denied = path.join(ws, 'codex-denied.txt');
    const allowed = path.join(ws, 'codex-allowed.txt');
    const f = await endpointFor(sshTarget('devbox'), { sandboxAll: false, answer: (q) => (q.message.includes(allowed) ? 'Allow' : 'Deny') });
    try {
      const t = await codexTurn(f, 'danger-full-access', [
        { exec_command: `echo no > ${denied}`, callId: 'c_deny' },
        { exec_command: `echo ran-on-$(${hostname}) > ${allowed}`, callId: 'c_allow' },
      ]);
      if (process.env.RELAY_CODEX_DUMP) console.log(JSON.stringify({ q: f.questions.map((q) => [q.message, q.detail]), deny: t.out('c_deny'), allow: t.out('c_allow') }, null, 1));
      assert.equal(t.result.status, 'completed', `turn: ${JSON.stringify(t.result.error)}`);
      const asked = (file: string) => f.questions.filter((q) => q.message.includes(file));
      assert.equal(asked(denied).length, 1, `asked once for the denied command: ${dump(f)}`);
      assert.equal(asked(allowed).length, 1, `asked once for the allowed command: ${dump(f)}`);
      for (const q of [...asked(denied), ...asked(allowed)]) {
        assert.match(q.message, /→ "devbox".* wants to run/, 'the question names the host');
        assert.match(q.message, /unsandboxed/);
        assert.match(q.detail, /Runs on: devbox/);
      }
      assert.equal(existsSync(denied), false, `Deny: nothing ran (Codex saw: ${t.out('c_deny')})`);
      assert.match(t.out('c_deny'), /not approved/, 'Codex was told why');
      assert.equal(readFileSync(allowed, 'utf8'), 'ran-on-devbox-ns\n', `Allow: it ran on the host (Codex saw: ${t.out('c_allow')})`);
      const starts = f.endpoint.audit.list().filter((r) => r.method === 'process/start');
      assert.deepEqual(starts.map((r) => [r.outcome, r.by]), [['refused', 'user'], ['allowed', 'user']], f.endpoint.audit.toJsonLines());
    } finally {
      await f.stop();
    }
  });
});
