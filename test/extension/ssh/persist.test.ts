// Persistent Connect to Host connections against a REAL sshd (test/support/sshd.ts): the host runs
// this repository's CLI, `--detach` starts its websocket server detached from the ssh session
// and the client talks to it through `ssh -W`. Checked: a process outlives the ssh connection
// being killed (the client resumes through a new ssh) and a NEW client (a reloaded window)
// resumes the same session and adopts the process with its output; the detached server exits
// after --idle-exit with no client and no session; a host with AllowTcpForwarding no falls back
// to the stdio command; the token is in no process's argv and in no log; a listener that took the
// server's port gets no token (it cannot prove it knows it).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ExecClient, ProcessHandle } from '../../../src/client/api';
import { connectCommand } from '../../../src/client/connect';
import { readRunRecord, runPaths } from '../../../src/cli/detach';
import { sshEnvironmentInput } from '../../../src/extension/ssh/environment';
import { connectPersistentSsh, detachCommand, isStdioFallback, openForwardedChannel, PersistenceUnavailable, persistentSshSpec, stdioOnlyReason, type PersistentSshSpec } from '../../../src/extension/ssh/persist';
import { createServer, type AddressInfo } from 'node:net';
import { chooseExecutor, probeHost } from '../../../src/extension/ssh/probe';
import type { SshOptions } from '../../../src/extension/ssh/target';
import type { EnvironmentConfig } from '../../../src/extension/environments/store';
import { isAlive } from '../../support/process';
import { cliPath } from '../../support/cli';
import { tempDir } from '../../support/tmp';
import { waitFor } from '../../support/wait';
import { binDir, startSshd, whichOrThrow, type TestSshd } from '../../support/sshd';
import { killSquatters, squat } from '../../support/detach-squatter';

const work = tempDir('ssh-persist-');
const node = process.execPath;
const BASE = '/usr/bin:/bin';
let sshd: TestSshd;
let noForward: TestSshd;
let ssh: SshOptions;
const logs: string[] = [];
const log = (level: string, message: string) => logs.push(`${level} ${message}`);

before(async () => {
  assert.ok(existsSync(cliPath), `${cliPath} missing: run npm run build`);
  const pathBin = binDir(path.join(work, 'path-bin'), { 'exec-server': `#!/bin/sh\nexec ${node} ${cliPath} "$@"\n` });
  for (const h of ['home-p', 'home-i', 'home-n']) execFileSync('mkdir', ['-p', path.join(work, h)]);
  sshd = await startSshd([
    { alias: 'persist', env: { HOME: path.join(work, 'home-p'), PATH: `${pathBin}:${BASE}` } },
    { alias: 'idle', env: { HOME: path.join(work, 'home-i'), PATH: `${pathBin}:${BASE}` } },
  ]);
  noForward = await startSshd([{ alias: 'no-forward', env: { HOME: path.join(work, 'home-n'), PATH: `${pathBin}:${BASE}` } }], { extraConfig: ['AllowTcpForwarding no'] });
  ssh = { configFile: sshd.configFile, sshPath: whichOrThrow('ssh') };
});

after(async () => {
  killSquatters();
  // Detached servers the tests started (each HOME has its run record): stopped by their pid.
  for (const h of ['home-p', 'home-i', 'home-n']) {
    const rec = readRunRecord(runPaths(path.join(work, h)).record);
    if (rec && isAlive(rec.pid)) process.kill(rec.pid, 'SIGTERM');
  }
  await sshd?.stop();
  await noForward?.stop();
});

/** The saved environment Connect to Host makes for `alias`, as the connector sees it. */
async function environmentFor(alias: string, o: SshOptions): Promise<EnvironmentConfig> {
  const ex = chooseExecutor(await probeHost({ host: alias }, o));
  assert.equal(ex?.kind, 'exec-server');
  const input = sshEnvironmentInput(alias, { host: alias }, o, ex!);
  return { name: alias, kind: 'command', command: input.command, args: input.args };
}

const ENV = { inherit: 'all' as const, ignoreDefaultExcludes: false, exclude: [], set: {}, includeOnly: [] };

function collect(p: ProcessHandle): { text(): string } {
  let out = '';
  p.onOutput((e) => (out += Buffer.from(e.data).toString()));
  return { text: () => out };
}

async function until(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
  await waitFor(cond, { what, timeout: ms, interval: 50 });
}

/** Pids of this test's `ssh … -W 127.0.0.1:PORT` children (matched by our temp config file). */
function forwardingSshPids(configFile: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (argv.includes('-W') && argv.includes(configFile)) pids.push(Number(d));
  }
  return pids;
}

/** Every process's argv on this machine (the host and the client are the same machine here). */
function allArgv(): string {
  return execFileSync('ps', ['-eo', 'pid,args', '--no-headers', '-ww'], { encoding: 'utf8' });
}

describe('persistent ssh connection (real sshd)', () => {
  let spec: PersistentSshSpec;
  before(async () => {
    const config = await environmentFor('persist', ssh);
    spec = persistentSshSpec(config)!;
    assert.ok(spec, `the saved environment is persistent-capable: ${JSON.stringify(config.args)}`);
  });

  it('a process survives its ssh connection being killed, and a new connection resumes the same session with its output', async () => {
    const fallback = () => Promise.reject(new Error('fell back to stdio'));
    const a = await connectPersistentSsh(spec, { clientName: 'persist-a', log, fallback });
    const session = a.sessionId;
    assert.ok(!isStdioFallback(a));
    const p = await a.startProcess({ argv: ['/bin/sh', '-c', 'echo before-kill; while read l; do echo "echo:$l"; done'], cwd: '/', tty: false, pipeStdin: true, envPolicy: ENV });
    const outA = collect(p);
    await until('before-kill', () => outA.text().includes('before-kill'));
    // Kill the ssh connection itself (not the client): the client resumes through a new ssh.
    const first = forwardingSshPids(sshd.configFile);
    assert.equal(first.length, 1, `one ssh -W: ${first.join(',')}`);
    process.kill(first[0], 'SIGKILL');
    await until('a resumed connection', () => (a as unknown as { reconnects: number }).reconnects === 1 && a.state === 'connected');
    assert.equal(a.sessionId, session);
    await p.write(Buffer.from('after-kill\n'));
    await until('echo:after-kill', () => outA.text().includes('echo:after-kill')).catch((e: Error) => {
      throw new Error(`${e.message}; output ${JSON.stringify(outA.text())}; log:\n${logs.join('\n')}`);
    });

    // A reloaded window: the old client is gone (its ssh ends), a new one resumes the session.
    await a.close();
    await until('the old ssh -W gone', () => forwardingSshPids(sshd.configFile).length === 0);
    const b = await connectPersistentSsh(spec, { clientName: 'persist-b', log, fallback, resumeSessionId: session });
    try {
      assert.equal(b.sessionId, session, 'the same session');
      const adopted = await b.adoptProcess!(p.processId);
      const outB = collect(adopted);
      await until('the retained output', () => outB.text().includes('echo:after-kill'));
      assert.match(outB.text(), /before-kill\n(.|\n)*echo:after-kill\n/);
      await adopted.write(Buffer.from('from-b\n'));
      await until('echo:from-b', () => outB.text().includes('echo:from-b'));
      await adopted.closeStdin();
      assert.equal(await adopted.exited, 0);
    } finally {
      await b.close();
    }
    // One server served all three connections.
    const rec = readRunRecord(runPaths(path.join(work, 'home-p')).record)!;
    assert.ok(isAlive(rec.pid), 'the detached server still runs');
  });

  it('ssh -W to a port where nothing listens is a gone server (retried by --detach), not a host refusing forwarding', async () => {
    const free = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const port = (srv.address() as AddressInfo).port;
        srv.close(() => resolve(port));
      });
    });
    const e = await openForwardedChannel(spec, { port: free, token: 'x'.repeat(32), pid: 0, started: false }).then(
      () => assert.fail('connected to a closed port'),
      (err: Error) => err,
    );
    assert.ok(!(e instanceof PersistenceUnavailable), `not a fallback: ${e.message}`);
    assert.match(e.message, /nothing listens on the host's 127\.0\.0\.1:\d+/);
  });

  it('attack: another user took the port between --detach and ssh -W — the listener must prove the token on that connection before it is sent', process.getuid?.() === 0 ? {} : { skip: 'needs root: the squatter runs as another user (uid 65534)' }, async () => {
    // The server --detach named died and another user (uid 65534) bound its port at once.
    const squatter = await squat(0, 65534);
    try {
      const token = 'T0ken-of-a-dead-server-' + 'x'.repeat(20);
      const e = await openForwardedChannel(spec, { port: squatter.port, token, pid: 0, started: false }).then(
        () => assert.fail('a websocket to the squatter was opened'),
        (err: Error) => err,
      );
      assert.doesNotMatch(squatter.log(), /UPGRADE/, 'the squatter got the websocket upgrade');
      assert.ok(!squatter.log().includes(token), 'the squatter saw the token');
      assert.match(e.message, /did not prove it is the detached server \(.+\); the token was not sent/);
      assert.ok(!e.message.includes(token));
    } finally {
      squatter.kill();
    }
  });

  it('the token is in no process argv (ps) and in no log; the run file is 0600 in a 0700 folder', async () => {
    const c = await connectPersistentSsh(spec, { clientName: 'persist-ps', log, fallback: () => Promise.reject(new Error('fell back')) });
    try {
      const paths = runPaths(path.join(work, 'home-p'));
      const rec = readRunRecord(paths.record)!;
      assert.ok(rec.token.length >= 32);
      assert.equal(statSync(paths.record).mode & 0o777, 0o600);
      assert.equal(statSync(paths.dir).mode & 0o777, 0o700);
      const ps = allArgv();
      assert.ok(ps.includes(`-W 127.0.0.1:${rec.port}`), 'the ssh -W of this connection is listed');
      assert.ok(ps.includes('--ws-token-file'), 'the detached server is listed');
      assert.ok(!ps.includes(rec.token), 'the token is in some argv');
      // The token file the server was started with is gone: the run record is its only copy.
      assert.deepEqual(readdirSync(paths.dir).filter((n) => n.startsWith('token-')), []);
      assert.ok(!readFileSync(paths.log, 'utf8').includes(rec.token), 'the server log holds the token');
      assert.ok(!logs.join('\n').includes(rec.token), 'the client log holds the token');
      assert.ok(logs.some((l) => l.includes(`127.0.0.1:${rec.port}`)), logs.join('\n'));
    } finally {
      await c.close();
    }
  });
});

describe('persistent ssh: idle exit and fallback (real sshd)', () => {
  it('the detached server stays while a client or a session is there, then exits after --idle-exit', async () => {
    const spec = persistentSshSpec(await environmentFor('idle', ssh))!;
    // --session-ttl 30 (the --detach default is 300 s): the timing below is about a 30 s TTL.
    const c = await connectPersistentSsh(spec, { clientName: 'idle', log, idleExitSec: 2, sessionTtlSec: 30, fallback: () => Promise.reject(new Error('fell back')) });
    const session = c.sessionId;
    const rec = readRunRecord(runPaths(path.join(work, 'home-i')).record)!;
    const p = await c.startProcess({ argv: ['/bin/sh', '-c', 'sleep 600'], cwd: '/', tty: false, envPolicy: ENV });
    await new Promise((r) => setTimeout(r, 4000)); // why: elapsed time is the subject (connected past the 2 s idle limit)
    assert.ok(isAlive(rec.pid), 'alive with a client (2 s idle limit, 4 s connected)');
    // The client goes away: the session stays detached for its 30 s TTL (its process too), then
    // the server is idle and exits 2 s later.
    // Measured from the close: an exit before the TTL (25 s, with the checks' slack) fails below.
    const closedAt = Date.now();
    await c.close();
    await until('the server exited', () => !isAlive(rec.pid), 70_000);
    const waited = Date.now() - closedAt;
    assert.ok(waited >= 25_000 && waited < 60_000, `exited ${waited} ms after the client left (alive while the detached session and its process lived)`);
    assert.match(readFileSync(runPaths(path.join(work, 'home-i')).log, 'utf8'), /no connection and no session for 2 s \(--idle-exit\)/);
    // Its record went with it: a record left behind names a port someone else could take.
    assert.equal(readRunRecord(runPaths(path.join(work, 'home-i')).record), undefined);
    void p;
    // The server is gone: the next connect starts a new one, where the old session is unknown
    // (the environment manager then starts a new session; terminals say theirs ended).
    await assert.rejects(connectPersistentSsh(spec, { clientName: 'idle-resume', log, idleExitSec: 2, resumeSessionId: session, fallback: (why) => Promise.reject(new Error(`fell back: ${why}`)) }), /unknown session/);
    const c2 = await connectPersistentSsh(spec, { clientName: 'idle-2', log, idleExitSec: 2, fallback: () => Promise.reject(new Error('fell back')) });
    const rec2 = readRunRecord(runPaths(path.join(work, 'home-i')).record)!;
    assert.notEqual(rec2.pid, rec.pid);
    await c2.close();
  });

  it('a detached server whose run record is deleted exits: no client can find it any more', async () => {
    const home = path.join(work, 'home-r');
    execFileSync('mkdir', ['-p', home]);
    const answer = JSON.parse(execFileSync(node, [cliPath, '--detach'], { env: { ...process.env, HOME: home }, encoding: 'utf8' })) as { pid: number; started: boolean };
    assert.equal(answer.started, true);
    const paths = runPaths(home);
    try {
      // The watcher (checked every second) has seen the record name it once: it logs so.
      await until('the watcher to see its record', () => existsSync(paths.log) && /names this server/.test(readFileSync(paths.log, 'utf8')));
      assert.ok(isAlive(answer.pid), 'alive while its record names it');
      rmSync(paths.record);
      await until('the server exited', () => !isAlive(answer.pid), 15_000);
      assert.match(readFileSync(paths.log, 'utf8'), /unreachable: its run record .* is gone/);
    } finally {
      if (isAlive(answer.pid)) process.kill(answer.pid, 'SIGKILL');
    }
  });

  it('a host with AllowTcpForwarding no falls back to the stdio command, and says so', async () => {
    const o: SshOptions = { configFile: noForward.configFile, sshPath: ssh.sshPath };
    const config = await environmentFor('no-forward', o);
    const spec = persistentSshSpec(config)!;
    const mine: string[] = [];
    let reason = '';
    const client: ExecClient = await connectPersistentSsh(spec, {
      clientName: 'no-forward',
      idleExitSec: 1,
      log: (l, m) => mine.push(`${l} ${m}`),
      fallback: (why) => {
        reason = why;
        return connectCommand(config.command!, config.args!, { clientName: 'no-forward-stdio' });
      },
    });
    try {
      assert.match(reason, /refuses TCP forwarding/);
      assert.ok(isStdioFallback(client), 'marked as the stdio fallback (its terminals are not recorded for a reload)');
      assert.ok(mine.some((l) => /no persistent connection .*refuses TCP forwarding.*using the stdio connection/.test(l)), mine.join('\n'));
      const p = await client.startProcess({ argv: ['/bin/sh', '-c', 'echo via-stdio'], cwd: '/', tty: false, envPolicy: ENV });
      const out = collect(p);
      assert.equal(await p.exited, 0);
      await p.closed;
      assert.match(out.text(), /via-stdio/);
    } finally {
      await client.close();
    }
  });
});

describe('persistentSshSpec', () => {
  const base = { name: 'h', kind: 'command' as const, command: '/usr/bin/ssh' };
  it('the --detach command carries --idle-exit / --session-ttl only when asked (an older CLI on a host knows neither)', () => {
    const spec: PersistentSshSpec = { ssh: 'ssh', options: [], host: 'h', program: "'/h/.exec-server/bin/exec-server'" };
    assert.equal(detachCommand(spec), "'/h/.exec-server/bin/exec-server' --detach");
    assert.equal(detachCommand(spec, 2, 900), "'/h/.exec-server/bin/exec-server' --detach --idle-exit 2 --session-ttl 900");
  });
  it('takes only the shape Connect to Host saves for a one-word executor', () => {
    const opts = ['-T', '-o', 'BatchMode=yes'];
    assert.deepEqual(persistentSshSpec({ ...base, args: [...opts, '--', 'host', "'/home/u/.exec-server/bin/exec-server' --listen stdio://"] }), {
      ssh: '/usr/bin/ssh', options: opts, host: 'host', program: "'/home/u/.exec-server/bin/exec-server'",
    });
    assert.equal(persistentSshSpec({ ...base, args: [...opts, '--', 'host', "'/a b/x'\\''y' --listen stdio://"] })?.program, "'/a b/x'\\''y'");
    // The reference codex, a hand-written command, another program than ssh, a websocket one: stdio as before.
    assert.equal(persistentSshSpec({ ...base, args: [...opts, '--', 'host', '/usr/bin/codex exec-server --listen stdio://'] }), undefined);
    assert.equal(persistentSshSpec({ ...base, args: ['host', 'exec-server', '--listen', 'stdio://'] }), undefined);
    assert.equal(persistentSshSpec({ ...base, args: [...opts, '--', 'host', 'exec-server --listen stdio:// ; rm -rf ~'] }), undefined);
    assert.equal(persistentSshSpec({ ...base, command: '/usr/bin/env', args: [...opts, '--', 'host', 'exec-server --listen stdio://'] }), undefined);
    assert.equal(persistentSshSpec({ name: 'w', kind: 'websocket', url: 'ws://127.0.0.1:1' }), undefined);
    // The log names why a codex host keeps stdio; persistent-capable and other commands need no reason.
    assert.match(stdioOnlyReason({ ...base, args: [...opts, '--', 'host', '/usr/bin/codex exec-server --listen stdio://'] }) ?? '', /codex exec-server/);
    assert.equal(stdioOnlyReason({ ...base, args: [...opts, '--', 'host', "'/x/exec-server' --listen stdio://"] }), undefined);
    assert.equal(stdioOnlyReason({ ...base, command: '/usr/bin/env', args: ['x'] }), undefined);
  });
});
