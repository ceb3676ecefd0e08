// The sandbox parameter → profile decoder (src/server/sandbox/profile.ts): special paths,
// subpaths, explicit paths, access precedence and the reference's error messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RpcError } from '../../../src/protocol/errors';
import { accessFor, parseSandbox, type ManagedSandboxProfile } from '../../../src/server/sandbox/profile';

const CTX = { cwd: '/w/proj', tmpDir: '/var/tmp/xyz' };
const special = (kind: string, extra: object = {}) => ({ type: 'special', value: { kind, ...extra } });
const managed = (entries: unknown[], network = 'restricted', more: object = {}) => ({
  permissions: { type: 'managed', file_system: { type: 'restricted', entries }, network },
  cwd: 'file:///w/proj',
  workspaceRoots: ['file:///w/proj', 'file:///w/other%20dir'],
  windowsSandboxLevel: 'disabled',
  ...more,
});
/** Codex's workspace-write profile, verbatim shape (EXEC-SERVER-PROTOCOL.md §6b). */
const WORKSPACE_WRITE = managed([
  { path: special('root'), access: 'read' },
  { path: special('project_roots'), access: 'write' },
  { path: special('slash_tmp'), access: 'write' },
  { path: special('tmpdir'), access: 'write' },
  ...['.git', '.agents', '.codex', '.aws'].map((s) => ({ path: special('project_roots', { subpath: s }), access: 'read', missing_path_behavior: 'skip' })),
]);

function m(raw: unknown, ctx = CTX): ManagedSandboxProfile {
  const p = parseSandbox(raw, ctx);
  assert.equal(p.kind, 'managed');
  return p as ManagedSandboxProfile;
}
function err(fn: () => unknown): { code: number; message: string } {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof RpcError, String(e));
    return { code: e.code, message: e.message };
  }
  throw new Error('expected an error');
}

test('sandbox profile: null/absent/disabled/external are not managed', () => {
  assert.deepEqual(parseSandbox(null, CTX), { kind: 'none', type: 'absent' });
  assert.deepEqual(parseSandbox(undefined, CTX), { kind: 'none', type: 'absent' });
  assert.deepEqual(parseSandbox({ permissions: { type: 'disabled' } }, CTX), { kind: 'none', type: 'disabled' });
  assert.deepEqual(parseSandbox({ permissions: { type: 'external', network: 'restricted' } }, CTX), { kind: 'none', type: 'external' });
});

test('sandbox profile: Codex workspace-write → writable project roots, /tmp, $TMPDIR; protected subpaths read-only', () => {
  const p = m(WORKSPACE_WRITE);
  assert.equal(p.fullRead, true);
  assert.equal(p.fullWrite, false);
  assert.equal(p.network, 'restricted');
  assert.deepEqual(p.writableRoots.slice().sort(), ['/tmp', '/var/tmp/xyz', '/w/other dir', '/w/proj'].sort());
  assert.deepEqual(p.readOnlyCarveouts.slice().sort(), [
    '/w/other dir/.agents', '/w/other dir/.aws', '/w/other dir/.codex', '/w/other dir/.git',
    '/w/proj/.agents', '/w/proj/.aws', '/w/proj/.codex', '/w/proj/.git',
  ].sort());
  assert.ok(p.rules.filter((r) => r.path.endsWith('/.git')).every((r) => r.missing === 'skip'));
  assert.equal(accessFor(p, '/w/proj/src/a.ts'), 'write');
  assert.equal(accessFor(p, '/w/proj/.git/config'), 'read');
  assert.equal(accessFor(p, '/w/proj/.gitignore'), 'write'); // prefix of a name is not containment
  assert.equal(accessFor(p, '/etc/passwd'), 'read');
  assert.equal(accessFor(p, '/w'), 'read');
});

test('sandbox profile: read-only is root read only', () => {
  const p = m(managed([{ path: special('root'), access: 'read' }]));
  assert.deepEqual(p.writableRoots, []);
  assert.equal(p.fullRead, true);
  assert.equal(accessFor(p, '/w/proj/x'), 'read');
});

test('sandbox profile: special kinds map to paths (cwd, tmpdir, slash_tmp, minimal, subpath)', () => {
  const p = m(managed([
    { path: special('current_working_directory'), access: 'write' },
    { path: special('tmpdir', { subpath: 'a/b' }), access: 'write' },
    { path: special('slash_tmp'), access: 'read' },
    { path: special('minimal'), access: 'read' },
  ]));
  assert.equal(p.fullRead, false);
  assert.deepEqual(p.writableRoots, ['/w/proj', '/var/tmp/xyz/a/b']);
  assert.ok(p.readableRoots.includes('/usr') && p.readableRoots.includes('/tmp'));
  assert.equal(accessFor(p, '/root/secret'), 'none'); // nothing grants it
});

test('sandbox profile: explicit paths (URI, percent-encoded, dot segments), none/deny', () => {
  const p = m(managed([
    { path: special('root'), access: 'read' },
    { path: { type: 'path', path: 'file:///data/a%20b/../c' }, access: 'write' },
    { path: { type: 'path', path: 'file:///home/me/.ssh' }, access: 'none' },
    { path: { type: 'path', path: 'file:///home/me/.aws' }, access: 'deny' },
  ]));
  assert.deepEqual(p.writableRoots, ['/data/c']);
  assert.deepEqual(p.unreadable, ['/home/me/.ssh', '/home/me/.aws']);
  assert.equal(accessFor(p, '/home/me/.ssh/id_rsa'), 'none');
});

test('sandbox profile: same path twice → the most restrictive access wins', () => {
  const p = m(managed([
    { path: special('root'), access: 'read' },
    { path: { type: 'path', path: 'file:///x' }, access: 'write' },
    { path: { type: 'path', path: 'file:///x' }, access: 'none' },
  ]));
  assert.equal(accessFor(p, '/x/y'), 'none');
  assert.deepEqual(p.writableRoots, []);
});

test('sandbox profile: project_roots without workspaceRoots is empty (as the reference), ctx roots used as fallback', () => {
  const raw = { ...managed([{ path: special('project_roots'), access: 'write' }]), workspaceRoots: undefined };
  assert.deepEqual(m(raw).writableRoots, []);
  assert.deepEqual(m(raw, { ...CTX, workspaceRoots: ['file:///ws'] } as typeof CTX).writableRoots, ['/ws']);
});

test('sandbox profile: unrestricted file system, network enabled', () => {
  const p = m({ permissions: { type: 'managed', file_system: { type: 'unrestricted' }, network: 'enabled' } });
  assert.equal(p.fullWrite, true);
  assert.equal(p.network, 'enabled');
  assert.deepEqual(p.writableRoots, ['/']);
});

test('sandbox profile: malformed input → -32602 with the reference wording', () => {
  const bad = (entries: unknown[], net = 'restricted') => err(() => parseSandbox(managed(entries, net), CTX));
  assert.deepEqual(bad([{ path: special('bogus'), access: 'read' }]), {
    code: -32602,
    message: 'unknown variant `bogus`, expected one of `root`, `minimal`, `current_working_directory`, `project_roots`, `tmpdir`, `slash_tmp`, `unknown`',
  });
  assert.deepEqual(bad([{ path: special('root'), access: 'bogus' }]), { code: -32602, message: 'unknown variant `bogus`, expected one of `read`, `write`, `deny`, `none`' });
  assert.deepEqual(bad([{ path: special('root'), access: 'read', missing_path_behavior: 'bogus' }]), { code: -32602, message: 'unknown variant `bogus`, expected `skip`' });
  assert.deepEqual(bad([], 'bogus'), { code: -32602, message: 'unknown variant `bogus`, expected `restricted` or `enabled`' });
  assert.deepEqual(err(() => parseSandbox({ permissions: { type: 'bogus' } }, CTX)), { code: -32602, message: 'unknown variant `bogus`, expected one of `managed`, `disabled`, `external`' });
  assert.deepEqual(bad([{ path: { type: 'path', path: 'relative' }, access: 'write' }]), { code: -32602, message: 'invalid URI: relative URL without a base' });
  assert.equal(bad([{ path: special('project_roots', { subpath: '../../etc' }), access: 'write' }]).code, -32602);
  assert.equal(bad([{ path: special('project_roots', { subpath: '/etc' }), access: 'write' }]).code, -32602);
  assert.equal(err(() => parseSandbox({ permissions: null }, CTX)).code, -32602);
  assert.equal(err(() => parseSandbox('managed', CTX)).code, -32602);
});

test('sandbox profile: what cannot be enforced faithfully is refused (-32600), never dropped', () => {
  assert.equal(err(() => parseSandbox(managed([{ path: { type: 'glob_pattern', pattern: '**/.env' }, access: 'none' }]), CTX)).code, -32600);
  assert.equal(err(() => parseSandbox(managed([{ path: special('unknown', { path: 'x' }), access: 'none' }]), CTX)).code, -32600);
  // An unknown grant only narrows access: dropped.
  assert.deepEqual(m(managed([{ path: special('root'), access: 'read' }, { path: special('unknown'), access: 'write' }])).writableRoots, []);
});
