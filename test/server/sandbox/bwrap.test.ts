// Profile → bubblewrap argv (src/server/sandbox/bwrap.ts), argument by argument, over a fake
// filesystem; symlink resolution of rules (resolve.ts); the sandboxDenied heuristic (denial.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLOSE_FDS_SCRIPT, PROXIED_SCRIPT, READY_PREFIX, bwrapArgs, wrapArgv } from '../../../src/server/sandbox/bwrap';
import { looksLikeSandboxDenial, sandboxDenied } from '../../../src/server/sandbox/denial';
import { seccompProgram } from '../../../src/server/sandbox/seccomp';
import { parseSandbox, type ManagedSandboxProfile } from '../../../src/server/sandbox/profile';
import { resolvePath, resolveProfile } from '../../../src/server/sandbox/resolve';
import { fakeFs } from '../../support/fake-fs';


const FS = fakeFs({
  '/': 'directory',
  '/w': 'directory',
  '/w/proj': 'directory',
  '/w/proj/.git': 'directory',
  '/w/proj/.codex': 'directory',
  '/w/proj/secret.env': 'file',
  '/w/proj/link-out': 'symlink:/etc',
  '/tmp': 'directory',
  '/var': 'directory',
  '/var/tmp': 'directory',
  '/etc': 'directory',
  '/usr': 'directory',
  '/bin': 'symlink:usr/bin',
  '/lib': 'symlink:usr/lib',
  '/lib64': 'symlink:usr/lib64',
  '/home': 'directory',
  '/home/me': 'directory',
  '/home/me/.ssh': 'directory',
  '/data': 'symlink:/w/proj',
});
const CTX = { cwd: '/w/proj', tmpDir: '/var/tmp' };
const special = (kind: string, extra: object = {}) => ({ type: 'special', value: { kind, ...extra } });
const TOOLS = { bwrap: '/usr/bin/bwrap', env: '/usr/bin/env', bash: '/bin/bash', sh: '/bin/sh', privateDir: '/run/es', denyFile: '/run/es/deny' };

function profile(entries: unknown[], network = 'restricted'): ManagedSandboxProfile {
  const p = parseSandbox(
    { permissions: { type: 'managed', file_system: { type: 'restricted', entries }, network }, workspaceRoots: ['file:///w/proj'] },
    CTX,
  );
  assert.equal(p.kind, 'managed');
  return resolveProfile(p as ManagedSandboxProfile, FS);
}
const args = (p: ManagedSandboxProfile) => bwrapArgs(p, '/w/proj', TOOLS, FS);
const NS_TAIL = ['--unshare-user', '--unshare-pid', '--unshare-ipc'];
const END = ['--cap-drop', 'ALL', '--die-with-parent', '--chdir', '/w/proj'];

test('bwrap: read-only (root read) → --ro-bind / /, fresh /dev and /proc, namespaces, no network, caps dropped', () => {
  assert.deepEqual(args(profile([{ path: special('root'), access: 'read' }])), [
    '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', ...NS_TAIL, '--unshare-net', ...END,
  ]);
});

test('bwrap: network enabled → no --unshare-net', () => {
  const a = args(profile([{ path: special('root'), access: 'read' }], 'enabled'));
  assert.ok(!a.includes('--unshare-net'));
  assert.deepEqual(a.slice(-8), [...NS_TAIL, ...END]);
});

test('bwrap: workspace-write → writable binds, then the protected subpaths that exist re-bound read-only (deeper last)', () => {
  const a = args(
    profile([
      { path: special('root'), access: 'read' },
      { path: special('project_roots'), access: 'write' },
      { path: special('slash_tmp'), access: 'write' },
      { path: special('tmpdir'), access: 'write' },
      ...['.git', '.agents', '.codex', '.aws'].map((s) => ({ path: special('project_roots', { subpath: s }), access: 'read', missing_path_behavior: 'skip' })),
    ]),
  );
  assert.deepEqual(a, [
    '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc',
    '--bind', '/tmp', '/tmp',
    '--bind', '/var/tmp', '/var/tmp',
    '--bind', '/w/proj', '/w/proj',
    '--ro-bind', '/w/proj/.codex', '/w/proj/.codex', // .agents and .aws do not exist: skipped
    '--ro-bind', '/w/proj/.git', '/w/proj/.git',
    ...NS_TAIL, '--unshare-net', ...END,
  ]);
});

test('bwrap: access none → an empty mode-000 read-only tmpfs over a directory, the deny file over a file', () => {
  const a = args(
    profile([
      { path: special('root'), access: 'read' },
      { path: { type: 'path', path: 'file:///home/me/.ssh' }, access: 'none' },
      { path: { type: 'path', path: 'file:///w/proj/secret.env' }, access: 'none' },
    ]),
  );
  assert.deepEqual(a.slice(7, -9), [
    '--perms', '0000', '--tmpfs', '/home/me/.ssh',
    '--ro-bind', '/run/es/deny', '/w/proj/secret.env',
    '--remount-ro', '/home/me/.ssh',
  ]);
});

test('bwrap: missing paths are skipped whatever missing_path_behavior says (as the reference)', () => {
  const a = args(
    profile([
      { path: special('root'), access: 'read' },
      { path: { type: 'path', path: 'file:///nope' }, access: 'write' },
      { path: { type: 'path', path: 'file:///nope2' }, access: 'none', missing_path_behavior: 'skip' },
    ]),
  );
  assert.ok(!a.some((x) => x.startsWith('/nope')));
});

test('bwrap: explicit path through a symlink is bound at its real location', () => {
  const a = args(profile([{ path: special('root'), access: 'read' }, { path: { type: 'path', path: 'file:///data' }, access: 'write' }]));
  assert.deepEqual(a.slice(7, 10), ['--bind', '/w/proj', '/w/proj']);
});

test('bwrap: pid namespace inherit (--linux-sandbox-pid-namespace) → no --unshare-pid, the host\'s /proc read-only instead of a fresh one; the rest unchanged', () => {
  const p = profile([{ path: special('root'), access: 'read' }]);
  assert.deepEqual(bwrapArgs(p, '/w/proj', TOOLS, FS, 'isolate'), args(p), 'isolate is the default');
  assert.deepEqual(bwrapArgs(p, '/w/proj', TOOLS, FS, 'inherit'), [
    '--ro-bind', '/', '/', '--dev', '/dev', '--ro-bind', '/proc', '/proc', '--unshare-user', '--unshare-ipc', '--unshare-net', ...END,
  ]);
  // No root read: /proc still there (the descriptor-closing wrapper reads /proc/self/fd).
  const minimal = bwrapArgs(profile([{ path: special('project_roots'), access: 'write' }]), '/w/proj', TOOLS, FS, 'inherit');
  assert.deepEqual(minimal.slice(minimal.indexOf('--dev'), minimal.indexOf('--dev') + 5), ['--dev', '/dev', '--ro-bind', '/proc', '/proc']);
  assert.ok(!minimal.includes('--proc') && !minimal.includes('--unshare-pid'));
  const w = wrapArgv(p, { argv: ['true'], cwd: '/w/proj' }, TOOLS, FS, 'inherit');
  assert.ok(!w.includes('--unshare-pid') && w.includes('--unshare-user'));
  assert.ok(wrapArgv(p, { argv: ['true'], cwd: '/w/proj' }, TOOLS, FS).includes('--unshare-pid'));
});

test('bwrap: /proc and /dev rules are never bound over the sandbox\'s own', () => {
  const a = args(profile([{ path: special('root'), access: 'read' }, { path: { type: 'path', path: 'file:///proc/1' }, access: 'write' }]));
  assert.ok(!a.includes('/proc/1'));
});

test('bwrap: no root read → program directories only (symlinks kept), then the profile\'s paths', () => {
  const a = args(profile([{ path: special('project_roots'), access: 'write' }]));
  assert.deepEqual(a, [
    '--symlink', 'usr/bin', '/bin', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64',
    '--dev', '/dev', '--proc', '/proc', '--bind', '/w/proj', '/w/proj', ...NS_TAIL, '--unshare-net', ...END,
  ]);
});

test('bwrap: full wrap: env ignores tty signals around bwrap, restores them for the command; descriptors above 2 closed first; arg0 via bash exec -a', () => {
  const p = profile([{ path: special('root'), access: 'read' }]);
  const w = wrapArgv(p, { argv: ['ls', '-l'], cwd: '/w/proj' }, TOOLS, FS);
  assert.deepEqual(w.slice(0, 3), ['/usr/bin/env', '--ignore-signal=INT,QUIT,TSTP', '/usr/bin/bwrap']);
  // '2': where the first program says the sandbox is set up (a pipe child's is changed to its own pipe, setup-retry.ts).
  const closeFds = ['/bin/bash', '--norc', '-p', '-c', READY_PREFIX + CLOSE_FDS_SCRIPT, 'exec-server-close-fds', '2'];
  assert.deepEqual(w.slice(w.indexOf('--')), ['--', ...closeFds, '/usr/bin/env', '--default-signal=INT,QUIT,TSTP', 'ls', '-l']);
  const w0 = wrapArgv(p, { argv: ['ls', '-l'], cwd: '/w/proj', arg0: 'my-ls' }, TOOLS, FS);
  assert.deepEqual(w0.slice(w0.indexOf('--')), ['--', ...closeFds, '/usr/bin/env', '--default-signal=INT,QUIT,TSTP', '/bin/bash', '--norc', '-c', 'exec -a "$0" -- "$@"', 'my-ls', 'ls', '-l']);
});

test('bwrap: no process of its own around bubblewrap: the seccomp program is opened by the sh that execs it (tied to the server by --die-with-parent); the first program says when the sandbox is set up, before the relay or the command', () => {
  const p = profile([{ path: special('root'), access: 'read' }]);
  const tools = { ...TOOLS, seccomp: { restricted: '/run/es/sr.bpf', enabled: '/run/es/se.bpf', proxied: '/run/es/sp.bpf' } };
  const w = wrapArgv(p, { argv: ['ls', '-l'], cwd: '/w/proj' }, tools, FS);
  assert.deepEqual(w.slice(0, 7), ['/bin/sh', '-c', 'exec 3<"$0" && exec "$@"', '/run/es/sr.bpf', '/usr/bin/env', '--ignore-signal=INT,QUIT,TSTP', '/usr/bin/bwrap']);
  assert.deepEqual(w.slice(w.lastIndexOf('--') - 2, w.lastIndexOf('--')), ['--seccomp', '3'], 'the program reaches bwrap on fd 3');
  assert.deepEqual(w.slice(w.lastIndexOf('--')), ['--', '/bin/bash', '--norc', '-p', '-c', READY_PREFIX + CLOSE_FDS_SCRIPT, 'exec-server-close-fds', '2', '/usr/bin/env', '--default-signal=INT,QUIT,TSTP', 'ls', '-l']);
  const proxied = wrapArgv(p, { argv: ['true'], cwd: '/w/proj', proxied: { node: '/usr/bin/node', relaySource: 'x', httpKeys: ['HTTP_PROXY'], socksKeys: ['ALL_PROXY'], socksScheme: 'socks5h' } }, tools, FS);
  assert.equal(proxied[3], '/run/es/sp.bpf');
  assert.deepEqual(proxied.slice(proxied.indexOf(READY_PREFIX + PROXIED_SCRIPT) + 1).slice(0, 3), ['exec-server-relay', '2', '/usr/bin/env']);
});

test('resolve: links anywhere (absolute, relative, dangling, `..` after a link) land where the kernel would', () => {
  assert.deepEqual(resolvePath('/w/proj/link-out/passwd', FS), { path: '/etc/passwd', exists: false });
  assert.deepEqual(resolvePath('/data/.git', FS), { path: '/w/proj/.git', exists: true });
  assert.deepEqual(resolvePath('/bin/sh', FS), { path: '/usr/bin/sh', exists: false });
  assert.deepEqual(resolvePath('/w/proj/link-out/../home', FS), { path: '/home', exists: true });
  const loop = fakeFs({ '/': 'directory', '/a': 'symlink:/b', '/b': 'symlink:/a' });
  assert.throws(() => resolvePath('/a/x', loop), /ELOOP/);
  const dangling = fakeFs({ '/': 'directory', '/w': 'directory', '/w/l': 'symlink:/etc/new' });
  assert.deepEqual(resolvePath('/w/l', dangling), { path: '/etc/new', exists: false });
});

test('sandboxDenied heuristic: non-zero exit + a denial message; exit 0 or unsandboxed → false', () => {
  for (const msg of [
    "touch: cannot touch '/x': Read-only file system",
    'bash: /root/x: Permission denied',
    'mkdir: cannot create directory: Operation not permitted',
    'connect: Network is unreachable',
    'curl: (6) Could not resolve host: example.com',
    'ping: example.com: Temporary failure in name resolution',
    "Error: EROFS: read-only file system, open '/x'",
  ]) {
    assert.ok(looksLikeSandboxDenial(msg), msg);
    assert.equal(sandboxDenied(true, 1, () => msg), true, msg);
    assert.equal(sandboxDenied(true, 0, () => msg), false, msg);
    assert.equal(sandboxDenied(false, 1, () => msg), false, msg);
  }
  for (const msg of ['ls: cannot access x: No such file or directory', 'error: tests failed', '']) {
    assert.equal(sandboxDenied(true, 2, () => msg), false, msg);
  }
});

test('bwrap: the server\'s private dir is hidden (tmpfs) from a sandbox that could write it; seccomp program on fd 3 through sh', () => {
  const fsWithPrivate = fakeFs({ '/': 'directory', '/run': 'directory', '/run/es': 'directory', '/w': 'directory', '/w/proj': 'directory', '/usr': 'directory' });
  const tools = { ...TOOLS, seccomp: { restricted: '/run/es/sr.bpf', enabled: '/run/es/se.bpf', proxied: '/run/es/sp.bpf' } };
  const mk = (entries: unknown[], network = 'restricted') =>
    resolveProfile(parseSandbox({ permissions: { type: 'managed', file_system: { type: 'restricted', entries }, network }, workspaceRoots: ['file:///w/proj'] }, CTX) as ManagedSandboxProfile, fsWithPrivate);
  const canWrite = mk([{ path: special('root'), access: 'read' }, { path: { type: 'path', path: 'file:///run' }, access: 'write' }]);
  const a = bwrapArgs(canWrite, '/w/proj', tools, fsWithPrivate);
  assert.deepEqual(a.slice(a.indexOf('--bind'), a.indexOf('--unshare-user')), ['--bind', '/run', '/run', '--tmpfs', '/run/es']);
  assert.deepEqual(a.slice(-2), ['--seccomp', '3']);
  const readOnly = bwrapArgs(mk([{ path: special('root'), access: 'read' }]), '/w/proj', tools, fsWithPrivate);
  assert.ok(!readOnly.includes('--tmpfs'));
  const w = wrapArgv(mk([{ path: special('root'), access: 'read' }]), { argv: ['true'], cwd: '/w/proj' }, tools, fsWithPrivate);
  assert.deepEqual(w.slice(0, 6), ['/bin/sh', '-c', 'exec 3<"$0" && exec "$@"', '/run/es/sr.bpf', '/usr/bin/env', '--ignore-signal=INT,QUIT,TSTP']);
  const we = wrapArgv(mk([{ path: special('root'), access: 'read' }], 'enabled'), { argv: ['true'], cwd: '/w/proj' }, tools, fsWithPrivate);
  assert.equal(we[3], '/run/es/se.bpf');
});

test('seccomp program: arch check first, every instruction well-formed, jumps inside the program', () => {
  for (const arch of ['x64', 'arm64']) {
    for (const net of [true, false]) {
      const prog = seccompProgram(arch, net)!;
      assert.equal(prog.length % 8, 0);
      const n = prog.length / 8;
      assert.equal(prog.readUInt16LE(0), 0x20); // ld [arch]
      assert.equal(prog.readUInt32LE(4), 4);
      for (let i = 0; i < n; i++) {
        const code = prog.readUInt16LE(i * 8);
        assert.ok([0x20, 0x15, 0x35, 0x06, 0x54].includes(code), `insn ${i} code ${code}`);
        if (code === 0x15 || code === 0x35) {
          assert.ok(i + 1 + prog.readUInt8(i * 8 + 2) < n && i + 1 + prog.readUInt8(i * 8 + 3) < n, `insn ${i} jumps out`);
        }
      }
      assert.equal(prog.readUInt16LE((n - 1) * 8), 0x06); // ends with a return
      assert.equal(prog.readUInt32LE((n - 1) * 8 + 4), 0x7fff0000);
    }
  }
  assert.equal(seccompProgram('ia32', true), undefined);
});

test('bwrap: a writable path below a `none` directory gets its mount point before the directory is made read-only', () => {
  const a = args(
    profile([
      { path: special('root'), access: 'read' },
      { path: { type: 'path', path: 'file:///w' }, access: 'none' },
      { path: special('project_roots'), access: 'write' },
    ]),
  );
  // Search-only (0111): /w/proj stays reachable, /w itself cannot be listed.
  assert.deepEqual(a.slice(7, -9), ['--perms', '0111', '--tmpfs', '/w', '--bind', '/w/proj', '/w/proj', '--remount-ro', '/w']);
});
