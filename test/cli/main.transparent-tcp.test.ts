// The CLI's --linux-sandbox-transparent-tcp (src/cli/main.ts), as the reference 0.171's: every
// proxied start is transparent, `transparentTcp` given or not; bad use is refused with exit 2.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { managedSandbox, specialEntry } from '../../src/protocol/codex-sandbox';
import { cliPath } from '../support/cli';
import { runToClose } from '../support/wire';

test('cli: --linux-sandbox-transparent-tcp takes no value and not --detach (exit 2, nothing listens)', () => {
  for (const [args, why] of [
    [['--linux-sandbox-transparent-tcp=yes'], /--linux-sandbox-transparent-tcp takes no value/],
    [['--linux-sandbox-transparent-tcp', '--detach'], /cannot be used with --detach/],
  ] as [string[], RegExp][]) {
    const r = spawnSync(process.execPath, [cliPath, '--listen', 'ws://127.0.0.1:0', ...args], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, why);
    assert.equal(r.stdout, '');
  }
});

/** A straight connect from a proxied sandbox of `argv`'s server (started without transparentTcp). */
async function straightConnect(argv: string[], env?: NodeJS.ProcessEnv) {
  const cwd = new URL(`file://${os.tmpdir()}`).href;
  const r = await runToClose(argv, {
    processId: 'p1', argv: ['/bin/bash', '-c', 'exec 2>&1; timeout 5 bash -c "exec 3<>/dev/tcp/1.1.1.1/80 && cat <&3"; cat /etc/resolv.conf'], cwd, env: { PATH: '/usr/bin:/bin' }, tty: false,
    sandbox: managedSandbox({ entries: [specialEntry('root', 'read')], cwd, network: 'enabled' }),
    enforceManagedNetwork: true,
    networkProxy: { proxy: { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', domains: { localhost: 'allow' }, allowLocalBinding: false } },
  }, { env, cwd: os.tmpdir() });
  assert.equal(r.start.error, undefined);
  assert.match(r.out, /Connection reset by peer/);
  assert.match(r.out, /^nameserver 127\.0\.0\.53$/m);
  assert.deepEqual(r.decisions.map((d) => [d.protocol, d.decision, d.reason, d.host, d.port]), [['socks5_tcp', 'deny', 'not_allowed', '1.1.1.1', 80]]);
}

test('cli: with --linux-sandbox-transparent-tcp a proxied start without transparentTcp is transparent (a straight connect is judged as socks5_tcp)', async () => {
  await straightConnect([process.execPath, cliPath, '--listen', 'stdio', '--linux-sandbox-transparent-tcp']);
});

// The helper's namespace entry differs for a user without privileges (bubblewrap then makes the
// sandbox's namespaces from a prepared user namespace); CI runs as root, users mostly do not.
test('cli: the same as an unprivileged user (uid 65534): the helper enters the namespaces it owns', async (t) => {
  if (process.getuid?.() !== 0) return t.skip('needs root to run the server as another user');
  if (spawnSync('setpriv', ['--version']).status !== 0) throw new Error('setpriv (util-linux) is needed');
  const asNobody = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];
  if (spawnSync(asNobody[0], [...asNobody.slice(1), process.execPath, '-e', '0']).status !== 0) return t.skip(`${process.execPath} cannot be run by uid 65534 here`);
  // The CLI bundle and its helper, where that user can read them (the checkout may be under /root).
  const dir = mkdtempSync(path.join(os.tmpdir(), 'exec-server-nobody-'));
  try {
    cpSync(path.dirname(cliPath), dir, { recursive: true, filter: (f) => !f.endsWith('.map') && !f.includes(`${path.sep}extension.js`) });
    chmodSync(dir, 0o755);
    await straightConnect([...asNobody, process.execPath, path.join(dir, 'cli.js'), '--listen', 'stdio', '--linux-sandbox-transparent-tcp'], { PATH: process.env.PATH, HOME: os.tmpdir() });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
