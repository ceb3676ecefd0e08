// Every ssh login of a Connect to Host environment asks the user, not only Connect to Host's own
// (src/extension/ssh/persist.ts persistentSshRoute / sshRelayRoutes, ssh/askpass.ts askpassLaunch),
// against REAL password-only sshds (test/support/sshd.ts `password`): the reference `codex
// exec-server` as the host's server (the stdio command), the stdio fallback when the host refuses
// forwarding, and the agent relay's own connections (the stdio command and the detached server).
// Each logs in with the password typed into the question; the saved command keeps BatchMode=yes
// (whoever runs it without a helper gets an error, not a question nobody sees). On the old code
// these ran the saved command as it is: BatchMode=yes, "Permission denied" without a question.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ExecClient } from '../../../src/client/api';
import type { ExecServerClient } from '../../../src/client/client';
import { connectCommand } from '../../../src/client/connect';
import { readRunRecord, runPaths } from '../../../src/cli/detach';
import { relayTargetOf } from '../../../src/extension/agent/relay-targets';
import type { EnvironmentConfig } from '../../../src/extension/environments/store';
import { AskpassService, type AskpassPrompt } from '../../../src/extension/ssh/askpass';
import { isStdioFallback, persistentSshRoute, sshRelayRoutes } from '../../../src/extension/ssh/persist';
import { sshArgv } from '../../../src/extension/ssh/target';
import { cliPath } from '../../support/cli';
import { isAlive } from '../../support/process';
import { referenceBinary, referenceEnv } from '../../support/reference';
import { binDir, startSshd, whichOrThrow, type TestSshd } from '../../support/sshd';
import { tempDir } from '../../support/tmp';
import { processesHolding } from '../../support/security';

const PASSWORD = `pw-${Math.random().toString(36).slice(2)}-Rt4`;
const work = tempDir('ssh-persist-pw-');
const home = path.join(work, 'home');
const homeNoForward = path.join(work, 'home-nf');
let pw: TestSshd;
let pwNoForward: TestSshd;
const logs: string[] = [];
const log = (level: string, message: string) => logs.push(`${level} ${message}`);
const ssh = whichOrThrow('ssh');
/** The host's programs, by absolute path (a password login's PATH is the account's, not ours). */
const bin = path.join(work, 'bin');

before(async () => {
  mkdirSync(home, { recursive: true });
  mkdirSync(homeNoForward, { recursive: true });
  const codexHome = referenceEnv().CODEX_HOME!;
  binDir(bin, {
    'exec-server': `#!/bin/sh\nexec ${process.execPath} ${cliPath} "$@"\n`,
    codex: `#!/bin/sh\nCODEX_HOME=${codexHome} exec ${referenceBinary()} "$@"\n`,
  });
  const PATH = `${bin}:/usr/bin:/bin`;
  pw = await startSshd([{ alias: 'pw', passwordLogin: true }], { parent: work, password: { password: PASSWORD, env: { HOME: home, PATH } } });
  pwNoForward = await startSshd([{ alias: 'pw-nf', passwordLogin: true }], { parent: work, password: { password: PASSWORD, env: { HOME: homeNoForward, PATH } }, extraConfig: ['AllowTcpForwarding no'] });
});

after(async () => {
  for (const h of [home, homeNoForward]) {
    const rec = readRunRecord(runPaths(h).record);
    if (rec && isAlive(rec.pid)) process.kill(rec.pid, 'SIGTERM');
  }
  await pw?.stop();
  await pwNoForward?.stop();
});

/** An askpass service whose user types the password once, and what it was asked. */
async function user(): Promise<{ svc: AskpassService; asked: AskpassPrompt[] }> {
  const asked: AskpassPrompt[] = [];
  const svc = await AskpassService.start(async (p) => (asked.push(p), PASSWORD), { parent: work });
  return { svc, asked };
}

/** The environment as Connect to Host saves it (BatchMode=yes, keep-alives). */
function saved(name: string, sshd: TestSshd, alias: string, remote: string): EnvironmentConfig {
  return { name, kind: 'command', command: ssh, args: sshArgv({ host: alias }, { sshPath: ssh, configFile: sshd.configFile }, remote, { keepAlive: true }) };
}

/** What the connector does with a command environment (environments/ui/connect.ts): the route, else the command. */
function connect(config: EnvironmentConfig, svc: AskpassService): Promise<ExecClient> {
  const stdio = (launch?: { args: string[]; env?: NodeJS.ProcessEnv }) => connectCommand(config.command!, launch?.args ?? config.args!, { clientName: 'test', initializeTimeoutMs: 30_000, env: launch?.env });
  return persistentSshRoute(log, async () => svc)(config, stdio, { clientName: 'test', initializeTimeoutMs: 30_000 }) ?? stdio();
}

async function hostHome(client: ExecClient): Promise<string> {
  const p = await client.startProcess({ argv: ['/bin/sh', '-c', 'echo $HOME'], cwd: '/', envPolicy: { inherit: 'all', ignoreDefaultExcludes: false, exclude: [], set: {}, includeOnly: [] } });
  let out = '';
  p.onOutput((e) => (out += Buffer.from(e.data).toString()));
  await p.closed;
  return out.trim();
}


describe('password-only hosts: every ssh of the environment asks the user', () => {
  it('`codex exec-server` as the host\'s server: the stdio command logs in with the password typed in the question', async () => {
    const { svc, asked } = await user();
    const config = saved('pw-codex', pw, 'pw', `${bin}/codex exec-server --listen stdio://`);
    assert.ok(config.args!.includes('BatchMode=yes'), 'saved with BatchMode=yes');
    let client: ExecClient | undefined;
    try {
      client = await connect(config, svc);
      assert.equal((client as ExecServerClient).initializeResult?.extensions, undefined, 'the reference answered (no extensions)');
      assert.equal(await hostHome(client), home, 'ran on the host');
      assert.equal(asked.length, 1, JSON.stringify(asked));
      assert.equal(asked[0].kind, 'password');
      assert.equal(asked[0].target, 'pw');
      assert.deepEqual(processesHolding(PASSWORD), [], 'the password is in no argv or environment');
      assert.ok(logs.some((l) => /pw-codex: stdio connection \(the executor is `codex exec-server`/.test(l)), logs.join('\n'));
    } finally {
      await client?.close();
      svc.close();
    }
  });

  it('a host refusing forwarding: the stdio fallback logs in with the password (asked once for all the logins)', async () => {
    const { svc, asked } = await user();
    let client: ExecClient | undefined;
    try {
      client = await connect(saved('pw-nf', pwNoForward, 'pw-nf', `${bin}/exec-server --listen stdio://`), svc);
      assert.ok(isStdioFallback(client), 'the fallback');
      assert.equal(await hostHome(client), homeNoForward);
      assert.equal(asked.length, 1, `one question, the remembered answer for the later logins: ${JSON.stringify(asked)}`);
    } finally {
      await client?.close();
      svc.close();
    }
  });

  for (const [what, remote, resumable] of [
    ['the reference (stdio command)', `${bin}/codex exec-server --listen stdio://`, false],
    ['this project\'s CLI (detached server, ssh -W)', `${bin}/exec-server --listen stdio://`, true],
  ] as const) {
    it(`the agent relay's own connection to ${what} logs in with the password`, async () => {
      const { svc, asked } = await user();
      const target = relayTargetOf(saved('pw-relay', pw, 'pw', remote), async () => undefined, log, sshRelayRoutes(async () => svc, undefined, log));
      const ch = await target.open();
      try {
        const init = (await ch.request('initialize', { clientName: 'relay-test' })) as { sessionId?: string };
        assert.equal(typeof init.sessionId, 'string');
        assert.equal(target.resumable?.(ch) ?? false, resumable);
        assert.equal(asked.length, 1, JSON.stringify(asked));
        assert.equal(asked[0].target, 'pw');
      } finally {
        ch.close('done');
        svc.close();
      }
    });
  }
});
