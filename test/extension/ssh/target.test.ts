// Typed hosts (user@host[:port]) read strictly — nothing ssh could take for an option gets
// through —, the ssh argv, environment names, and ssh's failure messages classified. The
// messages are OpenSSH's own (the live sshd tests in ssh-host.test.ts produce most of them).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseEnvironmentName } from '../../../src/extension/ssh/environment';
import { classifySshFailure, describeSshFailure, environmentNameFor, formatSshTarget, parseSshTarget, shQuote, sshArgv } from '../../../src/extension/ssh/target';

describe('ssh targets', () => {
  it('reads host, user@host, user@host:port, [v6]:port and ssh:// URLs', () => {
    assert.deepEqual(parseSshTarget('devbox'), { host: 'devbox', user: undefined, port: undefined });
    assert.deepEqual(parseSshTarget(' alice@devbox.example.com '), { host: 'devbox.example.com', user: 'alice', port: undefined });
    assert.deepEqual(parseSshTarget('root@127.0.0.1:2222'), { host: '127.0.0.1', user: 'root', port: 2222 });
    assert.deepEqual(parseSshTarget('bob@[::1]:22'), { host: '::1', user: 'bob', port: 22 });
    assert.deepEqual(parseSshTarget('ssh://carol@h:2200/'), { host: 'h', user: 'carol', port: 2200 });
    assert.equal(formatSshTarget(parseSshTarget('bob@[::1]:22')), 'bob@[::1]:22');
  });

  it('refuses anything ssh could read as an option or a second argument', () => {
    for (const bad of ['-oProxyCommand=touch /tmp/pwned', 'x@-oProxyCommand=id', '-p', 'host -o x', 'a b', 'user@', '@host', 'host:', 'host:99999', 'host:0', 'h;id', 'h$(id)', '[zz]:1', '-@h', 'us er@h']) {
      assert.throws(() => parseSshTarget(bad), /./, bad);
    }
    assert.throws(() => parseSshTarget(''), /Enter a host/);
    assert.throws(() => parseSshTarget('h:70000'), /out of range/);
  });

  it('argv: -F, BatchMode, `--` before the destination, port and user as options, the remote command last', () => {
    const argv = sshArgv({ host: 'h', user: 'u', port: 2 }, { configFile: '/c' }, 'exec-server --listen stdio://', { keepAlive: true });
    assert.deepEqual(argv.slice(0, 3), ['-F', '/c', '-T']);
    assert.ok(argv.includes('BatchMode=yes'));
    assert.ok(argv.includes('ServerAliveInterval=15'));
    assert.ok(!argv.includes('StrictHostKeyChecking=accept-new'));
    assert.deepEqual(argv.slice(-3), ['--', 'h', 'exec-server --listen stdio://']);
    assert.deepEqual(argv.slice(argv.indexOf('-p'), argv.indexOf('-p') + 2), ['-p', '2']);
    assert.ok(sshArgv({ host: 'h' }, {}, 'x', { acceptNewHostKey: true }).includes('StrictHostKeyChecking=accept-new'));
  });

  it('environment names follow the settings rules; the same host with another executor keeps its name', () => {
    assert.equal(environmentNameFor({ host: 'devbox' }), 'devbox');
    assert.equal(environmentNameFor({ host: '::1', user: 'bob', port: 22 }), 'bob-1-22');
    assert.equal(environmentNameFor({ host: '10.0.0.1', user: 'root', port: 2222 }), 'root-10.0.0.1-2222');
    const t = { host: 'devbox' };
    const args = (cmd: string) => ['-T', '--', 'devbox', cmd];
    const saved = [{ name: 'devbox', kind: 'command' as const, command: 'ssh', args: args('a') }];
    assert.deepEqual(chooseEnvironmentName(t, { command: 'ssh', args: args('a') }, saved), { name: 'devbox', existing: true });
    assert.deepEqual(chooseEnvironmentName(t, { command: 'ssh', args: args('b') }, saved), { name: 'devbox', existing: false });
    const other = [{ name: 'devbox', kind: 'websocket' as const, url: 'ws://x:1' }];
    assert.deepEqual(chooseEnvironmentName(t, { command: 'ssh', args: args('a') }, other), { name: 'devbox-2', existing: false });
  });

  it('shell quoting survives quotes and spaces', () => {
    assert.equal(shQuote('/usr/bin/node'), '/usr/bin/node');
    assert.equal(shQuote("it's here"), `'it'\\''s here'`);
  });

  it("classifies OpenSSH's failure messages", () => {
    const cases: [string, string][] = [
      ['root@127.0.0.1: Permission denied (publickey).', 'auth'],
      ['No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\r\nHost key verification failed.', 'host-key-unknown'],
      ['@@@@@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\r\nHost key verification failed.', 'host-key-changed'],
      ['ssh: Could not resolve hostname nowhere.invalid: Name or service not known', 'unknown-host'],
      ['ssh: connect to host 127.0.0.1 port 1: Connection refused', 'refused'],
      ['ssh: connect to host 10.255.255.1 port 22: No route to host', 'no-route'],
      ['ssh: connect to host 2001:db8::1 port 22: Network is unreachable', 'no-route'],
      ['ssh: connect to host 10.255.255.1 port 22: Connection timed out', 'timeout'],
      ['kex_exchange_identification: Connection closed by remote host', 'closed'],
      ['something else entirely', 'failed'],
    ];
    for (const [msg, kind] of cases) assert.equal(classifySshFailure(msg, 255), kind, msg);
    assert.equal(classifySshFailure('bash: exec-server: command not found', 127), undefined);
  });

  it('an error quotes ssh once ("ssh: …", not "ssh: ssh: …") and names what to check', () => {
    const m = describeSshFailure('refused', 'devbox', 'ssh: connect to host 10.0.0.5 port 22: Connection refused\n');
    assert.equal(m, 'devbox refused the connection: no ssh server listens on that port (ssh: connect to host 10.0.0.5 port 22: Connection refused)');
    assert.match(describeSshFailure('auth', 'devbox', 'root@devbox: Permission denied (publickey,password).'), /refused the login \(ssh: root@devbox: Permission denied \(publickey,password\)\.\)\. Check the user name and the password or key/);
  });

  it('BatchMode=yes without a helper for questions, BatchMode=no with one; the saved form never carries the helper', () => {
    const t = { host: 'h' };
    assert.ok(sshArgv(t, {}, 'true').includes('BatchMode=yes'));
    const askpass = { open: () => ({ env: {}, dispose: () => undefined }) };
    assert.ok(sshArgv(t, { askpass }, 'true').includes('BatchMode=no'));
  });
});
