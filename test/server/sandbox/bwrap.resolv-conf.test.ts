// A host whose /etc/resolv.conf is a dangling link (systemd-resolved's
// `../run/systemd/resolve/stub-resolv.conf` while resolved is stopped, or a container without
// that directory). Sandboxed starts with network restricted or enabled see the host's link as it
// is; a transparent-TCP start binds its own resolv.conf (`nameserver 127.0.0.53`) where the
// sandbox's /etc/resolv.conf leads, and bubblewrap cannot create a file there: every such start
// failed with "Can't create file at /etc/resolv.conf" (src/server/sandbox/bwrap.ts
// resolvConfMounts). The host's own /etc is never touched: the server runs in a mount namespace
// of its own (an outer bwrap) whose /etc holds the host's entries and the dangling link.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { resolvConfMounts } from '../../../src/server/sandbox/bwrap';
import { parseSandbox, type ManagedSandboxProfile } from '../../../src/server/sandbox/profile';
import { resolveProfile, type FsProbe } from '../../../src/server/sandbox/resolve';
import { fakeFs } from '../../support/fake-fs';
import { tempDir } from '../../support/tmp';

const special = (kind: string) => ({ type: 'special', value: { kind } });
function profile(entries: unknown[], probe: FsProbe): ManagedSandboxProfile {
  const p = parseSandbox({ permissions: { type: 'managed', file_system: { type: 'restricted', entries }, network: 'enabled' }, workspaceRoots: ['file:///w'] }, { cwd: '/w', tmpDir: '/tmp' });
  return resolveProfile(p as ManagedSandboxProfile, probe);
}
const base = { '/': 'directory', '/w': 'directory', '/etc': 'directory', '/run': 'directory', '/run/systemd': 'directory', '/run/systemd/journal': 'directory', '/run/systemd/notify': 'file', '/run/systemd/units': 'symlink:../other' };
const rootRead = [special('root'), special('project_roots')].map((path, i) => ({ path, access: i === 0 ? 'read' : 'write' }));

test('resolv.conf: one that exists (or a link to a file that does) is bound over /etc/resolv.conf, as before', () => {
  for (const link of ['file', 'symlink:../run/systemd/resolve/stub-resolv.conf']) {
    const probe = fakeFs({ ...base, '/etc/resolv.conf': link, '/run/systemd/resolve': 'directory', '/run/systemd/resolve/stub-resolv.conf': 'file' });
    assert.deepEqual(resolvConfMounts(profile(rootRead, probe), '/x/resolv.conf', probe), ['--ro-bind', '/x/resolv.conf', '/etc/resolv.conf']);
  }
});

test('resolv.conf: a dangling link, root readable: the deepest directory that exists becomes a tmpfs holding its entries again (bound read-only, links re-made), the file at the link target, all read-only', () => {
  const probe = fakeFs({ ...base, '/etc/resolv.conf': 'symlink:../run/systemd/resolve/stub-resolv.conf' });
  assert.deepEqual(resolvConfMounts(profile(rootRead, probe), '/x/resolv.conf', probe), [
    '--tmpfs', '/run/systemd',
    '--ro-bind-try', '/run/systemd/journal', '/run/systemd/journal',
    '--ro-bind-try', '/run/systemd/notify', '/run/systemd/notify',
    '--symlink', '../other', '/run/systemd/units',
    '--ro-bind', '/x/resolv.conf', '/run/systemd/resolve/stub-resolv.conf',
    '--remount-ro', '/run/systemd',
  ]);
});

test('resolv.conf: a dangling link, no root read and no rule there: bound at the target in the sandbox\'s own root; a rule reaching into that directory: not bound', () => {
  const probe = fakeFs({ ...base, '/etc/resolv.conf': 'symlink:../run/systemd/resolve/stub-resolv.conf' });
  const minimal = [{ path: special('minimal'), access: 'read' }, { path: special('project_roots'), access: 'write' }];
  assert.deepEqual(resolvConfMounts(profile(minimal, probe), '/x/resolv.conf', probe), ['--ro-bind', '/x/resolv.conf', '/run/systemd/resolve/stub-resolv.conf']);
  const into = [...rootRead, { path: { type: 'path', path: 'file:///run/systemd/journal' }, access: 'none' }];
  assert.deepEqual(resolvConfMounts(profile(into, probe), '/x/resolv.conf', probe), []);
});

/**
 * Runs `script` (CommonJS, the compiled sources at `SRC`) in a mount namespace whose /etc is the
 * host's but for resolv.conf, a link to `target` (which does not exist).
 */
function withDanglingResolvConf(target: string, script: string): Promise<{ code: number | null; out: string; err: string }> {
  const dir = tempDir('es-resolv-');
  const file = path.join(dir, 'run.js');
  fs.writeFileSync(file, script);
  const args = ['--dev-bind', '/', '/', '--tmpfs', '/etc'];
  for (const name of fs.readdirSync('/etc')) {
    const p = path.join('/etc', name);
    if (name === 'resolv.conf') continue;
    if (fs.lstatSync(p).isSymbolicLink()) args.push('--symlink', fs.readlinkSync(p), p);
    else args.push('--dev-bind', p, p);
  }
  args.push('--symlink', target, '/etc/resolv.conf', '--die-with-parent', '--', process.execPath, file);
  const child = spawn('/usr/bin/bwrap', args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SRC: path.resolve(__dirname, '../../../src') } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.once('exit', (code) => (clearTimeout(timer), resolve({ code, out, err })));
  });
}

test('a host whose /etc/resolv.conf is a dangling link: sandboxed starts run with network restricted, enabled and transparent TCP (its resolver answers through the bound resolv.conf); the directory it had to open up looks as on the host', async () => {
  const parent = fs.existsSync('/run/systemd') ? '/run/systemd' : '/run';
  const target = `..${parent}/exec-server-gone-${process.pid}/stub-resolv.conf`;
  const script = `
    const { ExecServer } = require(process.env.SRC + '/server/exec-server.js');
    const { transparentSupport } = require(process.env.SRC + '/server/network/transparent.js');
    const { managedSandbox, workspaceWriteEntries } = require(process.env.SRC + '/protocol/codex-sandbox.js');
    const { pathToFileURL } = require('url');
    const fs = require('fs');
    const W = fs.mkdtempSync(require('os').tmpdir() + '/es-resolv-w-');
    const events = [];
    const s = new ExecServer({});
    const closed = new Map();
    const conn = s.connect({ notify(m, p) { events.push([m, p]); if (m === 'process/closed') closed.get(p.processId)?.(); } }, { label: 'x' });
    // A start's process/closed (already here, or when it comes), bounded at 30 s.
    const closedOf = (id) => events.some(([m, p]) => m === 'process/closed' && p.processId === id) || Promise.race([new Promise((r) => closed.set(id, r)), new Promise((r) => setTimeout(r, 30_000))]);
    const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: false, domains: {}, transparentTcp: true };
    const script = 'exec 2>&1; ls -la /etc/resolv.conf | sed "s/.* -> //"; cat /etc/resolv.conf; getent ahostsv4 name.test | head -1 | cut -d" " -f1; ls -A ${parent} | grep -v exec-server-gone | tr "\\\\n" " "; echo; echo ran';
    const runs = { restricted: {}, enabled: {}, transparent: { enforceManagedNetwork: true, networkProxy: { proxy: PROXY } } };
    (async () => {
      await conn.requestUntyped('initialize', { clientName: 'x' });
      conn.notification('initialized', {});
      const result = { support: transparentSupport(), host: fs.readdirSync(${JSON.stringify(parent)}).filter((n) => !n.startsWith('exec-server-gone')).join(' ') + ' ' };
      for (const [id, extra] of Object.entries(runs)) {
        const network = id === 'restricted' ? 'restricted' : 'enabled';
        try {
          await conn.requestUntyped('process/start', { processId: id, argv: ['/bin/bash', '-c', script], cwd: pathToFileURL(W).href, env: { PATH: '/usr/bin:/bin' }, tty: false, sandbox: managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: pathToFileURL(W).href, network }), ...extra });
        } catch (e) { result[id] = { error: e.message }; continue; }
        await closedOf(id);
        const out = events.filter(([m, p]) => m === 'process/output' && p.processId === id).map(([, p]) => Buffer.from(p.chunk, 'base64').toString()).join('');
        result[id] = { out, exit: events.find(([m, p]) => m === 'process/exited' && p.processId === id)?.[1].exitCode };
      }
      await s.shutdown();
      fs.rmSync(W, { recursive: true, force: true });
      console.log(JSON.stringify(result));
      process.exit(0);
    })().catch((e) => { console.error(e); process.exit(2); });`;
  const r = await withDanglingResolvConf(target, script);
  assert.equal(r.code, 0, r.err);
  const result = JSON.parse(r.out);
  assert.equal(result.support.ok, true, `transparent TCP is needed here: ${JSON.stringify(result.support)}`);
  for (const id of ['restricted', 'enabled']) {
    const lines = String(result[id].out).split('\n');
    assert.equal(result[id].exit, 0, `${id}: ${result[id].out ?? result[id].error}`);
    assert.equal(lines[0], target, `${id}: the host's link, as it is`);
    assert.match(lines[1], /No such file or directory/);
    assert.equal(lines.at(-2), 'ran');
  }
  const out: { out?: string; error?: string; exit?: number } = result.transparent;
  assert.equal(out.exit, 0, `transparent: ${out.out ?? out.error}`);
  const lines = out.out!.split('\n');
  assert.deepEqual(lines.slice(0, 2), [target, 'nameserver 127.0.0.53'], 'the link leads to the executor\'s resolv.conf');
  assert.match(lines[2], /^198\.(18|19)\./, 'a name resolves through the executor\'s resolver');
  assert.equal(lines[3], result.host, `${parent} holds what it holds on the host`);
  assert.equal(lines[4], 'ran');
});
