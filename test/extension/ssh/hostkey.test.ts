// Connect to Host against a REAL sshd (Debian openssh-server on 127.0.0.1, a throwaway host key
// and user keys, `ssh -F <temp config>`): the probe finds an `exec-server` or `codex` on the
// host's PATH, the saved command environment (the system ssh + `--listen stdio://`) serves a
// process and a PTY, and ssh's failures come back classified: authentication refused, an
// unknown host key (then trusted on first use), a closed port.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ExecClient } from '../../../src/client/api';
import { connectCommand } from '../../../src/client/connect';
import { sshEnvironmentInput } from '../../../src/extension/ssh/environment';
import { fingerprintOf, ProxiedHostError, recordHostKeys, scanHostKeys } from '../../../src/extension/ssh/hostkey';
import { chooseExecutor, probeHost } from '../../../src/extension/ssh/probe';
import { SshError, type SshOptions } from '../../../src/extension/ssh/target';
import { cliPath, repoRoot } from '../../support/cli';
import { tempDir } from '../../support/tmp';
import { waitFor } from '../../support/wait';
import { binDir, startSshd, whichOrThrow, type TestSshd } from '../../support/sshd';

let sshd: TestSshd;
let ssh: SshOptions;
const work = tempDir('ssh-host-');
const node = process.execPath;
const BASE = '/usr/bin:/bin';

function referenceCodex(): string {
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/tools/install.mjs'), '--find', '--print', 'REFERENCE', 'reference'], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0 || !r.stdout.trim()) throw new Error(`the reference codex is not installed (scripts/tools/install.mjs --find reference): ${r.stderr}`);
  return r.stdout.trim();
}

before(async () => {
  assert.ok(existsSync(cliPath), `${cliPath} missing: run npm run build`);
  // An `exec-server` on the host's PATH: a launcher of this repository's CLI.
  const pathBin = binDir(path.join(work, 'path-bin'), { 'exec-server': `#!/bin/sh\nexec ${node} ${cliPath} "$@"\n` });
  const codexBin = binDir(path.join(work, 'codex-bin'), { codex: referenceCodex() });
  sshd = await startSshd([
    { alias: 'with-exec-server', env: { HOME: path.join(work, 'home-a'), PATH: `${pathBin}:${BASE}` } },
    { alias: 'with-codex', env: { HOME: path.join(work, 'home-c'), PATH: `${codexBin}:${BASE}`, CODEX_HOME: path.join(work, 'codex-home') } },
    { alias: 'bare', env: { HOME: path.join(work, 'home-b'), PATH: BASE } },
    { alias: 'bad-key', badKey: true },
    { alias: 'unknown-key', unknownHostKey: true, env: { HOME: path.join(work, 'home-u'), PATH: `${pathBin}:${BASE}` } },
    { alias: 'closed-port', closedPort: 1 },
    { alias: 'slow-probe', env: { HOME: path.join(work, 'home-b'), PATH: `${binDir(path.join(work, 'slow-bin'), { uname: '#!/bin/sh\nsleep 5\necho Linux\n' })}:${BASE}` } },
    { alias: 'no-sh', env: { HOME: path.join(work, 'home-b'), PATH: path.join(work, 'empty-bin') } },
    { alias: 'scan-key', unknownHostKey: true, env: { HOME: path.join(work, 'home-u'), PATH: `${pathBin}:${BASE}` } },
  ]);
  ssh = { configFile: sshd.configFile, sshPath: whichOrThrow('ssh') };
  for (const h of ['home-a', 'home-b', 'home-c', 'home-u', 'codex-home']) spawnSync('mkdir', ['-p', path.join(work, h)]);
});
after(async () => {
  await sshd?.stop();
});

async function runThrough(client: ExecClient, argv: string[], tty = false): Promise<{ code: number; out: string }> {
  const p = await client.startProcess({ argv, cwd: '/', tty, envPolicy: { inherit: 'all', ignoreDefaultExcludes: false, exclude: [], set: {}, includeOnly: [] }, rows: 24, cols: 80 });
  let out = '';
  p.onOutput((e) => (out += Buffer.from(e.data).toString()));
  const code = await p.exited;
  await p.closed;
  return { code, out };
}

describe('ssh host (real sshd)', () => {
  it('the probe finds exec-server on the host PATH; the saved ssh command environment runs a process and a PTY there', async () => {
    const facts = await probeHost({ host: 'with-exec-server' }, ssh);
    assert.equal(facts.os, 'Linux');
    assert.equal(facts.home, path.join(work, 'home-a'));
    assert.equal(facts.execServer, path.join(work, 'path-bin', 'exec-server'));
    const ex = chooseExecutor(facts);
    assert.equal(ex?.kind, 'exec-server');
    const input = sshEnvironmentInput('with-exec-server', { host: 'with-exec-server' }, ssh, ex!);
    assert.equal(input.command, ssh.sshPath);
    assert.equal(input.args!.at(-1), `${path.join(work, 'path-bin', 'exec-server')} --listen stdio://`);
    const client = await connectCommand(input.command!, input.args!, { clientName: 'ssh-test', initializeTimeoutMs: 20_000 });
    try {
      const r = await runThrough(client, ['/bin/sh', '-c', 'echo "home=$HOME sum=$((6*7))"']);
      assert.equal(r.code, 0);
      assert.match(r.out, new RegExp(`home=${path.join(work, 'home-a')} sum=42`));
      const pty = await runThrough(client, ['/bin/sh', '-c', 'test -t 0 && echo is-a-tty; exit 3'], true);
      assert.equal(pty.code, 3);
      assert.match(pty.out, /is-a-tty/);
    } finally {
      await client.close();
    }
  });

  it('finds `codex exec-server` (the reference codex 0.169) when there is no exec-server, and it serves through ssh', async () => {
    const facts = await probeHost({ host: 'with-codex' }, ssh);
    assert.equal(facts.execServer, undefined);
    assert.equal(facts.codexExecServer, true);
    const ex = chooseExecutor(facts);
    assert.equal(ex?.kind, 'codex');
    const input = sshEnvironmentInput('with-codex', { host: 'with-codex' }, ssh, ex!);
    const client = await connectCommand(input.command!, input.args!, { clientName: 'ssh-test', initializeTimeoutMs: 30_000 });
    try {
      const r = await runThrough(client, ['/bin/sh', '-c', 'echo through-codex-$((1+1))']);
      assert.equal(r.code, 0);
      assert.match(r.out, /through-codex-2/);
    } finally {
      await client.close();
    }
  });

  it('a host with neither: the probe reports no executor (Connect to Host then offers the install)', async () => {
    const facts = await probeHost({ host: 'bare' }, ssh);
    assert.equal(facts.execServer, undefined);
    assert.equal(facts.installed, undefined);
    assert.equal(facts.codex, undefined);
    assert.equal(chooseExecutor(facts), undefined);
    assert.equal(facts.path, BASE);
  });

  it('a refused key: SshError auth, naming key authentication', async () => {
    const e = await probeHost({ host: 'bad-key' }, ssh).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof SshError, String(e));
    assert.equal(e.kind, 'auth', e.message);
    assert.match(e.message, /refused the login.*Permission denied.*ssh-agent/s);
  });

  it('an unknown host key: SshError host-key-unknown and nothing recorded; trusting it (accept-new) connects and records it', async () => {
    const kh = path.join(sshd.dir, 'known_hosts-unknown-key');
    const e = await probeHost({ host: 'unknown-key' }, ssh).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof SshError, String(e));
    assert.equal(e.kind, 'host-key-unknown', e.message);
    assert.equal(readFileSync(kh, 'utf8'), '', 'BatchMode recorded no key on its own');
    const facts = await probeHost({ host: 'unknown-key' }, ssh, { acceptNewHostKey: true });
    assert.equal(facts.os, 'Linux');
    assert.match(readFileSync(kh, 'utf8'), /ssh-ed25519/);
    // Recorded: the next plain (strict) connection works without accept-new.
    assert.equal((await probeHost({ host: 'unknown-key' }, ssh)).home, path.join(work, 'home-u'));
  });

  it('trust on first use records exactly the scanned keys: their fingerprint is the server key\'s, and the strict login then passes', async () => {
    const kh = path.join(sshd.dir, 'known_hosts-scan-key');
    const scan = await scanHostKeys({ host: 'scan-key' }, ssh);
    assert.equal(scan.knownHostsFile, kh, 'the alias\'s UserKnownHostsFile (ssh -G)');
    assert.equal(scan.knownHostsName, `[127.0.0.1]:${sshd.port}`);
    const serverKey = readFileSync(path.join(sshd.dir, 'host_key.pub'), 'utf8').split(' ');
    assert.deepEqual(scan.keys.map((k) => [k.type, k.fingerprint]), [[serverKey[0], fingerprintOf(serverKey[1])]]);
    const keygen = spawnSync('ssh-keygen', ['-lf', path.join(sshd.dir, 'host_key.pub')], { encoding: 'utf8' });
    assert.ok(keygen.stdout.includes(scan.keys[0].fingerprint), `ssh-keygen prints the same fingerprint: ${keygen.stdout}`);
    assert.equal(readFileSync(kh, 'utf8'), '', 'scanning records nothing');
    await assert.rejects(probeHost({ host: 'scan-key' }, ssh), (e: unknown) => e instanceof SshError && e.kind === 'host-key-unknown');
    recordHostKeys(scan);
    assert.equal((await probeHost({ host: 'scan-key' }, ssh)).home, path.join(work, 'home-u'), 'strict checking passes with the recorded key');
  });

  it('HashKnownHosts yes: the approved key is recorded under a hashed name (ssh-keygen -F finds it, the name is not in the file) and the strict login passes', async () => {
    const kh = path.join(tempDir('ssh-hashed-'), 'known_hosts');
    const cfg = path.join(sshd.dir, 'hashed_config');
    writeFileSync(cfg, `Host scan-key\n  HashKnownHosts yes\n  UserKnownHostsFile ${kh}\n  Include ${sshd.configFile}\n`);
    const opts = { ...ssh, configFile: cfg };
    const scan = await scanHostKeys({ host: 'scan-key' }, opts);
    assert.equal(scan.knownHostsFile, kh);
    recordHostKeys(scan);
    const text = readFileSync(kh, 'utf8');
    assert.match(text, /^\|1\|[A-Za-z0-9+/=]+\|[A-Za-z0-9+/=]+ \S+ \S+\n$/, text);
    assert.ok(!text.includes('127.0.0.1'), `no host name in the file: ${text}`);
    const found = spawnSync('ssh-keygen', ['-F', `[127.0.0.1]:${sshd.port}`, '-f', kh], { encoding: 'utf8' });
    assert.equal(found.status, 0, `ssh-keygen -F finds the hashed entry: ${found.stdout}${found.stderr}`);
    assert.equal((await probeHost({ host: 'scan-key' }, opts)).home, path.join(work, 'home-u'), 'strict checking passes with the hashed key');
  });

  it('a host behind ProxyJump/ProxyCommand: no keyscan (it would ask the wrong machine), a ProxiedHostError instead', async () => {
    const cfg = path.join(sshd.dir, 'proxied_config');
    writeFileSync(cfg, `Host behind-jump\n  HostName 10.0.0.9\n  ProxyJump with-exec-server\nHost behind-cmd\n  ProxyCommand nc %h %p\n`);
    for (const host of ['behind-jump', 'behind-cmd']) {
      await assert.rejects(scanHostKeys({ host }, { ...ssh, configFile: cfg }), (e: unknown) => e instanceof ProxiedHostError && /reached through Proxy/.test(e.message));
    }
  });

  it('a changed host key is refused even with accept-new (never trusted silently)', async () => {
    const kh = path.join(sshd.dir, 'known_hosts-unknown-key');
    const other = tempDir('ssh-otherkey-');
    spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(other, 'k')]);
    writeFileSync(kh, `[127.0.0.1]:${sshd.port} ${readFileSync(path.join(other, 'k.pub'), 'utf8').split(' ').slice(0, 2).join(' ')}\n`);
    const e = await probeHost({ host: 'unknown-key' }, ssh, { acceptNewHostKey: true }).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof SshError, String(e));
    assert.equal(e.kind, 'host-key-changed', e.message);
    assert.match(e.message, /CHANGED/);
  });

  it('a closed port: SshError refused; no ssh binary: ssh-missing', async () => {
    const e = await probeHost({ host: 'closed-port' }, ssh).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof SshError, String(e));
    assert.equal(e.kind, 'refused', e.message);
    const m = await probeHost({ host: 'bare' }, { ...ssh, sshPath: path.join(work, 'no-such-ssh') }).then(() => undefined, (x: unknown) => x);
    assert.ok(m instanceof SshError, String(m));
    assert.equal(m.kind, 'ssh-missing');
  });

  it("a host whose config has a RemoteCommand and a failing LocalForward (ExitOnForwardFailure) still probes: they are not the transport's", async () => {
    const cfg = path.join(sshd.dir, 'busy_config');
    const busy = await new Promise<import('node:net').Server>((resolve) => {
      const srv = createServer();
      srv.listen(0, '127.0.0.1', () => resolve(srv));
    });
    try {
      const port = (busy.address() as import('node:net').AddressInfo).port;
      const block = readFileSync(sshd.configFile, 'utf8').split('\n\n').find((b) => b.startsWith('Host with-exec-server'))!;
      writeFileSync(cfg, `${block.replace(/^Host .*$/m, 'Host busy')}\n  RemoteCommand echo not-our-command\n  LocalForward 127.0.0.1:${port} 127.0.0.1:1\n  ExitOnForwardFailure yes\n`);
      // Plain ssh with this config fails both ways: the config really is hostile.
      const plain = spawnSync(ssh.sshPath!, ['-F', cfg, '-T', '--', 'busy', 'true'], { encoding: 'utf8', timeout: 20_000 });
      assert.notEqual(plain.status, 0, `plain ssh fails with this config: ${plain.stderr}`);
      const facts = await probeHost({ host: 'busy' }, { ...ssh, configFile: cfg });
      assert.equal(facts.home, path.join(work, 'home-a'));
    } finally {
      busy.close();
    }
  });

  it('cancel (the progress notification\'s Cancel → AbortSignal) stops a probe at once and leaves no ssh process', async () => {
    const ac = new AbortController();
    const started = Date.now();
    const p = probeHost({ host: 'slow-probe' }, ssh, { signal: ac.signal });
    setTimeout(() => ac.abort(), 800);
    await assert.rejects(p, /cancelled/);
    assert.ok(Date.now() - started < 4000, `rejected after ${Date.now() - started} ms, not after the 5 s probe`);
    const left = () => spawnSync('ps', ['-eo', 'pid,stat,args'], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.includes(ssh.sshPath!) && l.includes('slow-probe') && !/^\s*\d+\s+Z/.test(l));
    await waitFor(() => left().length === 0, { timeout: 5_000, what: 'the ssh client to be killed', detail: () => left().join('\n') });
  });

  it('a host without sh on its PATH (as a Windows host): the error says so, not just an exit code', async () => {
    spawnSync('mkdir', ['-p', path.join(work, 'empty-bin')]);
    const e = await probeHost({ host: 'no-sh' }, ssh).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof SshError, String(e));
    assert.match(e.message, /no POSIX shell `sh`.*Linux and macOS hosts/s);
  });

  it('an unknown host name: SshError unknown-host (.invalid never resolves)', async () => {
    const e = await probeHost({ host: 'nowhere.invalid' }, { ...ssh, configFile: '/dev/null' }).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof SshError, String(e));
    assert.equal(e.kind, 'unknown-host', e.message);
    assert.match(e.message, /unknown host nowhere\.invalid: the name does not resolve/);
  });

  it('no route: ssh in a network namespace without a network (unshare -n) fails with no-route', async () => {
    // The real ssh's own message, from a machine with no route anywhere (loopback down).
    const wrapper = binDir(path.join(work, 'no-net'), { ssh: `#!/bin/sh\nexec unshare ${process.getuid?.() === 0 ? '-n' : '-rn'} ${ssh.sshPath} "$@"\n` });
    const e = await probeHost({ host: 'with-exec-server' }, { ...ssh, sshPath: path.join(wrapper, 'ssh') }).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof SshError, String(e));
    assert.equal(e.kind, 'no-route', e.message);
    assert.match(e.message, /no route to with-exec-server.*Network is unreachable/);
  });

  it('typed user@host:port (no alias) reaches the same sshd', async () => {
    // The alias's key and known_hosts are still needed: pass them through a config of only defaults.
    const cfg = path.join(sshd.dir, 'defaults_config');
    const aliasCfg = readFileSync(sshd.configFile, 'utf8');
    const block = aliasCfg.split('\n\n').find((b) => b.startsWith('Host with-exec-server'))!;
    writeFileSync(cfg, block.replace(/^Host .*$/m, 'Host *').replace(/^\s*(HostName|Port|User) .*$/gm, '') + '\n');
    const facts = await probeHost({ host: '127.0.0.1', user: sshd.user, port: sshd.port }, { ...ssh, configFile: cfg });
    assert.equal(facts.home, path.join(work, 'home-a'));
  });
});
