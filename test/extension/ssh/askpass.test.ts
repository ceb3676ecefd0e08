// ssh's login questions through the askpass helper (src/extension/ssh/askpass.ts), against a REAL
// sshd: a password-only server (the account's password is the test's, in a mount namespace of
// the server's own: test/support/sshd.ts `password`) and a key encrypted with a passphrase. The
// question reaches `ask` with the host and ssh's prompt; the answer logs ssh in; a wrong one is
// asked again (retry); Escape fails the login as "refused"; a remembered password serves the next
// ssh of the same host without a question, never another host's. Attacks: the secret is never
// in any process's argv or environment, in the log or in a file of the helper's folder; a
// socket client without a live session id gets nothing; a host-key question is never put to
// the user (Connect to Host's modal shows the fingerprints). A keyboard-interactive host whose
// questions come from PAM (the machine's /etc/pam.d/sshd) works the same way.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AskpassService, classifyPrompt, type AskpassPrompt } from '../../../src/extension/ssh/askpass';
import { probeHost } from '../../../src/extension/ssh/probe';
import { runSsh, sshArgv, SshError } from '../../../src/extension/ssh/target';
import { startSshd, type TestSshd } from '../../support/sshd';
import { tempDir } from '../../support/tmp';
import { processesHolding } from '../../support/security';

const PASSWORD = `pw-${Math.random().toString(36).slice(2)}-Zq9`;
const PASSPHRASE = `pp-${Math.random().toString(36).slice(2)}-Xk7`;
const work = tempDir('ssh-askpass-');
let pwHost: TestSshd;
let keyHost: TestSshd;
let pamHost: TestSshd;

/** An `ask` that answers from a script and records what it was asked. */
function scripted(answers: (string | undefined)[]) {
  const asked: AskpassPrompt[] = [];
  return {
    asked,
    ask: async (p: AskpassPrompt) => {
      asked.push(p);
      return answers.length ? answers.shift() : undefined;
    },
  };
}


before(async () => {
  const env = { HOME: path.join(work, 'home'), PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin` };
  pwHost = await startSshd([{ alias: 'pw', passwordLogin: true }, { alias: 'pw-other', passwordLogin: true }], { parent: work, password: { password: PASSWORD, env } });
  keyHost = await startSshd([{ alias: 'locked', passphrase: PASSPHRASE, env }], { parent: work });
  pamHost = await startSshd([{ alias: 'pam', passwordLogin: true }], { parent: work, password: { password: PASSWORD, env, pam: true } });
});
after(async () => {
  await pwHost?.stop();
  await keyHost?.stop();
  await pamHost?.stop();
});

describe('ssh askpass: questions answered by the user', () => {
  it('classifies ssh\'s prompts', () => {
    assert.equal(classifyPrompt("root@10.1.2.2's password: "), 'password');
    assert.equal(classifyPrompt('(root@host) Password: '), 'password');
    assert.equal(classifyPrompt("Enter passphrase for key '/k/id_ed25519': "), 'passphrase');
    assert.equal(classifyPrompt('(root@host) Verification code: '), 'question');
    assert.equal(classifyPrompt('One-time password (OATH) for `root\': '), 'question', 'a one-time password is not remembered');
    assert.equal(classifyPrompt('Are you sure you want to continue connecting (yes/no/[fingerprint])? '), 'host-key');
    assert.equal(classifyPrompt('Confirm user presence for key ED25519-SK', 'none'), 'notice');
  });

  it('a password-only host: the password typed in the question logs in; the next ssh of that host is not asked again', async () => {
    const q = scripted([PASSWORD]);
    const logs: string[] = [];
    const svc = await AskpassService.start(q.ask, { log: (m) => logs.push(m), parent: work });
    try {
      const ssh = { configFile: pwHost.configFile, askpass: svc };
      let hits: string[] = [];
      const scanner = setInterval(() => (hits = hits.concat(processesHolding(PASSWORD))), 5);
      let facts;
      try {
        facts = await probeHost({ host: 'pw' }, ssh, { timeoutMs: 30_000 });
      } finally {
        clearInterval(scanner);
      }
      assert.equal(facts.home, path.join(work, 'home'), 'logged in (the probe ran on the host)');
      assert.equal(q.asked.length, 1, JSON.stringify(q.asked));
      assert.equal(q.asked[0].kind, 'password');
      assert.equal(q.asked[0].target, 'pw');
      assert.match(q.asked[0].prompt, /password:?$/i);
      assert.equal(q.asked[0].retry, false);
      assert.deepEqual(hits, [], 'the password was in no process\'s argv or environment');
      assert.ok(!logs.join('\n').includes(PASSWORD), 'not in the log');
      for (const f of readdirSync(svc.dir)) if (statSync(path.join(svc.dir, f)).isFile()) assert.ok(!readFileSync(path.join(svc.dir, f)).includes(PASSWORD), `not in ${f}`);
      assert.equal(statSync(svc.dir).mode & 0o777, 0o700, 'the helper folder is private');

      // The same host again (the detached server, ssh -W): the remembered password, no question.
      const r = await runSsh(ssh, sshArgv({ host: 'pw' }, ssh, 'echo again'), { timeoutMs: 30_000 });
      assert.equal(r.stdout.trim(), 'again', r.stderr);
      assert.equal(q.asked.length, 1, 'not asked a second time');
      // Another destination (here: the same server under another alias, the very same prompt
      // text) never gets it: asked, and the script has no answer left, so it is refused.
      await assert.rejects(probeHost({ host: 'pw-other' }, ssh, { timeoutMs: 30_000 }), (e: unknown) => e instanceof SshError && e.kind === 'auth');
      assert.equal(q.asked.length, 2);
      assert.equal(q.asked[1].target, 'pw-other');
      assert.equal(q.asked[1].prompt, q.asked[0].prompt, 'the same prompt text');
    } finally {
      svc.close();
    }
  });

  it('a wrong password is asked again (retry), the right one then logs in and is what is remembered', async () => {
    const q = scripted(['wrong-one', PASSWORD]);
    const svc = await AskpassService.start(q.ask, { parent: work });
    try {
      const ssh = { configFile: pwHost.configFile, askpass: svc };
      const r = await runSsh(ssh, sshArgv({ host: 'pw' }, ssh, 'echo in'), { timeoutMs: 30_000 });
      assert.equal(r.stdout.trim(), 'in', r.stderr);
      assert.deepEqual(q.asked.map((a) => a.retry), [false, true]);
      // What is remembered is the answer that worked: the next login is not asked.
      const again = await runSsh(ssh, sshArgv({ host: 'pw' }, ssh, 'echo in'), { timeoutMs: 30_000 });
      assert.equal(again.stdout.trim(), 'in', again.stderr);
      assert.equal(q.asked.length, 2);
    } finally {
      svc.close();
    }
  });

  it('Escape (no answer) fails the login as refused, at once', async () => {
    const q = scripted([undefined]);
    const svc = await AskpassService.start(q.ask, { parent: work });
    try {
      const ssh = { configFile: pwHost.configFile, askpass: svc };
      const t0 = Date.now();
      await assert.rejects(probeHost({ host: 'pw' }, ssh, { timeoutMs: 30_000 }), (e: unknown) => e instanceof SshError && e.kind === 'auth');
      assert.ok(Date.now() - t0 < 15_000, 'no wait for a timeout');
      assert.equal(q.asked.length, 1, 'ssh\'s next tries (NumberOfPasswordPrompts) are not put to the user again');
      assert.equal(svc.rememberedCount, 0);
    } finally {
      svc.close();
    }
  });

  it('a keyboard-interactive host (PAM, password method off): PAM\'s question reaches the input box and its answer logs in; a wrong answer is asked again', async () => {
    const q = scripted(['wrong-one', PASSWORD]);
    const logs: string[] = [];
    const svc = await AskpassService.start(q.ask, { log: (m) => logs.push(m), parent: work });
    try {
      const ssh = { configFile: pamHost.configFile, askpass: svc };
      let hits: string[] = [];
      const scanner = setInterval(() => (hits = hits.concat(processesHolding(PASSWORD))), 5);
      let facts;
      try {
        facts = await probeHost({ host: 'pam' }, ssh, { timeoutMs: 45_000 });
      } finally {
        clearInterval(scanner);
      }
      assert.equal(facts.home, path.join(work, 'home'), 'logged in (the probe ran on the host)');
      // The server took the keyboard-interactive/PAM path (the password method is off there).
      assert.match(pamHost.log(), /Accepted keyboard-interactive\/pam for /, pamHost.log().slice(-2000));
      assert.doesNotMatch(pamHost.log(), /Accepted password for /);
      assert.equal(q.asked.length, 2, JSON.stringify(q.asked));
      // OpenSSH puts keyboard-interactive prompts as "(user@host) <PAM's prompt>".
      assert.match(q.asked[0].prompt, /^\(.+@.+\) Password: ?$/, q.asked[0].prompt);
      assert.deepEqual(q.asked.map((a) => [a.target, a.kind, a.retry]), [['pam', 'password', false], ['pam', 'password', true]]);
      assert.deepEqual(hits, [], 'the answer was in no process\'s argv or environment');
      assert.ok(!logs.join('\n').includes(PASSWORD), 'not in the log');
      for (const f of readdirSync(svc.dir)) if (statSync(path.join(svc.dir, f)).isFile()) assert.ok(!readFileSync(path.join(svc.dir, f)).includes(PASSWORD), `not in ${f}`);
    } finally {
      svc.close();
    }
  });

  it('an encrypted key: its passphrase is asked (kind passphrase, the key named) and unlocks it', async () => {
    const q = scripted([PASSPHRASE]);
    const svc = await AskpassService.start(q.ask, { parent: work });
    try {
      const ssh = { configFile: keyHost.configFile, askpass: svc };
      const facts = await probeHost({ host: 'locked' }, ssh, { timeoutMs: 30_000 });
      assert.equal(facts.home, path.join(work, 'home'));
      assert.equal(q.asked.length, 1);
      assert.equal(q.asked[0].kind, 'passphrase');
      assert.match(q.asked[0].prompt, /key-locked/);
    } finally {
      svc.close();
    }
  });

  it('without askpass the same host fails at once (BatchMode=yes), as before', async () => {
    await assert.rejects(probeHost({ host: 'pw' }, { configFile: pwHost.configFile }, { timeoutMs: 30_000 }), (e: unknown) => e instanceof SshError && e.kind === 'auth');
  });

  it('attack: a client of the socket without a live session id is refused and nobody is asked', async () => {
    const q = scripted([PASSWORD]);
    const svc = await AskpassService.start(q.ask, { parent: work });
    try {
      const session = svc.open('pw');
      const ask = (id: string) =>
        new Promise<string>((resolve) => {
          const c = net.connect(session.env.EXEC_SERVER_ASKPASS_SOCKET);
          let out = '';
          c.on('data', (d) => (out += d.toString()));
          c.on('close', () => resolve(out));
          c.on('error', () => resolve(out));
          c.write(JSON.stringify({ session: id, prompt: "root@pw's password: " }) + '\n');
        });
      assert.match(await ask('0'.repeat(48)), /unknown session/);
      const id = session.env.EXEC_SERVER_ASKPASS_SESSION;
      session.dispose();
      assert.match(await ask(id), /unknown session/, 'a session ends with its ssh process');
      assert.equal(q.asked.length, 0);
      assert.equal(statSync(session.env.EXEC_SERVER_ASKPASS_SOCKET).mode & 0o777, 0o600);
    } finally {
      svc.close();
    }
  });

  it('attack: a host-key question (StrictHostKeyChecking ask) is refused without asking the user; ssh fails as host-key-unknown', async () => {
    const q = scripted(['yes']);
    const svc = await AskpassService.start(q.ask, { parent: work });
    try {
      const ssh = { configFile: pwHost.configFile, askpass: svc };
      const argv = ['-o', 'StrictHostKeyChecking=ask', '-o', `UserKnownHostsFile=${path.join(work, 'empty-known-hosts')}`, ...sshArgv({ host: 'pw' }, ssh, 'true')];
      const r = await runSsh(ssh, argv, { timeoutMs: 30_000 });
      assert.equal(r.code, 255);
      assert.match(r.stderr, /Host key verification failed/);
      assert.equal(q.asked.length, 0, 'the user was not asked yes/no');
    } finally {
      svc.close();
    }
  });
});
