// Conformance of `capabilityRoots/discoverV1` and `capabilityDiscoverySandbox`
// (REFERENCE-CAPABILITIES §3.2) against every reference version and ours, on the same fixture
// and the same requests: plugin manifests (.codex/.claude/.cursor, first regular file wins),
// .mcp.json / .app.json, SKILL.md + agents/openai.yaml, namespace manifests, depth 6, byte
// order, symlinked directories followed once, symlinked files left out, the 1 MiB file and
// 16 MiB bundle bounds, 128 roots, the params errors, and each root read under its sandbox
// (not mounted → the root's ENOENT error; `none` subtree, manifest dir, file → warnings).
// Also what environment/info says next to it (providerId's shape, the flags).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { managedSandbox, pathEntry, specialEntry } from '../../src/protocol/codex-sandbox';
import { ourServer, referenceServers, type ServerCommand } from '../support/reference';
import { exchange, initialized, type Reply } from '../support/wire';

const cacheDir = process.env.EXEC_SERVER_CACHE ?? path.join(os.homedir(), '.cache', 'exec-server');

/** The fixture (outside /tmp: a managed sandbox's temp roots), shared by every server: discovery only reads. */
function fixture(): string {
  const ws = path.join(cacheDir, `caproots-${randomBytes(4).toString('hex')}`);
  const file = (p: string, data: string | Buffer) => {
    mkdirSync(path.dirname(path.join(ws, p)), { recursive: true });
    writeFileSync(path.join(ws, p), data);
  };
  file('plug/.codex-plugin/plugin.json', '{"name":"demo-plugin","version":"1.0.0"}\n');
  file('plug/.claude-plugin/plugin.json', '{"name":"second"}\n');
  file('plug/.mcp.json', '{"mcpServers":{"x":{"command":"echo","args":["hi"]}}}\n');
  file('plug/.app.json', '{"apps":{}}\n');
  file('plug/skills/one/SKILL.md', '---\nname: one\ndescription: first\n---\nbody\n');
  file('plug/skills/one/agents/openai.yaml', 'interface:\n  display_name: One\n');
  file('plug/skills/two/SKILL.md', 'no front matter\n');
  file('plug/nested/.claude-plugin/plugin.json', '{"name":"nested"}\n');
  file('plug/nested/deeper/.codex-plugin/plugin.json', 'not json\n');
  file('plug/.hidden/h/SKILL.md', 'hidden dir\n');
  file('plug/B/SKILL.md', 'upper case sorts first\n');
  mkdirSync(path.join(ws, 'plug/dirskill/SKILL.md'), { recursive: true });
  file('plain/.mcp.json', '{}\n'); // no manifest: no plugin, .mcp.json not read
  file('plain/SKILL.md', 'top\n');
  let d = path.join(ws, 'depth');
  for (let i = 1; i <= 8; i++) {
    d = path.join(d, `d${i}`);
    mkdirSync(d, { recursive: true });
    writeFileSync(path.join(d, 'SKILL.md'), `L${i}\n`);
  }
  file('outside/os/SKILL.md', 'reached through a directory link\n');
  file('links/real/SKILL.md', 'real\n');
  mkdirSync(path.join(ws, 'links/filelink'), { recursive: true });
  symlinkSync(path.join(ws, 'links/real/SKILL.md'), path.join(ws, 'links/filelink/SKILL.md'));
  symlinkSync(path.join(ws, 'outside'), path.join(ws, 'links/out'));
  mkdirSync(path.join(ws, 'links/loop'), { recursive: true });
  symlinkSync('..', path.join(ws, 'links/loop/up'));
  file('big/small/SKILL.md', 'small\n');
  file('big/huge/SKILL.md', Buffer.alloc(1024 * 1024 + 1, 0x61));
  file('big/exact/SKILL.md', Buffer.alloc(1024 * 1024, 0x62));
  file('big/small/agents/openai.yaml', Buffer.alloc(1024 * 1024 + 1, 0x79));
  for (let i = 0; i < 18; i++) file(`bundle/s${String(i).padStart(2, '0')}/SKILL.md`, Buffer.alloc(1000 * 1000, 0x63));
  file('file.txt', 'not a directory\n');
  file('sb/.codex-plugin/plugin.json', '{"name":"sb"}\n');
  file('sb/.mcp.json', '{}\n');
  file('sb/skills/a/SKILL.md', 'a\n');
  file('sb/skills/hid/SKILL.md', 'hid\n');
  file('sb/secret/s/SKILL.md', 'secret\n');
  symlinkSync(path.join(ws, 'sb/secret'), path.join(ws, 'sb/skills/lnsec'));
  return ws;
}

/** The sandboxed roots (request ids 30 + index). */
function sandboxedRoots(ws: string): object[] {
  const u = (p: string) => pathToFileURL(path.join(ws, p)).href;
  const root = (id: string, p: string, sandbox: object) => ({ id, path: u(p), sandbox });
  const ctx = (entries: unknown[]) => {
    const { permissions } = managedSandbox({ entries, cwd: u('sb') });
    return { permissions, cwd: u('sb'), workspaceRoots: [u('sb')], windowsSandboxLevel: 'disabled', useLegacyLandlock: false };
  };
  const rootRead = specialEntry('root', 'read');
  return [
        root('usr', 'sb', ctx([pathEntry('file:///usr', 'read')])),
        root('hid', 'sb', ctx([rootRead, pathEntry(u('sb/skills/hid'), 'none')])),
        root('sec', 'sb', ctx([rootRead, pathEntry(u('sb/secret'), 'none')])),
        root('mani', 'sb', ctx([rootRead, pathEntry(u('sb/.codex-plugin'), 'none')])),
        root('mcp', 'sb', ctx([rootRead, pathEntry(u('sb/.mcp.json'), 'none')])),
        root('rootnone', 'sb', ctx([rootRead, pathEntry(u('sb'), 'none')])),
        root('file', 'sb', ctx([rootRead, pathEntry(u('sb/skills/a/SKILL.md'), 'none')])),
        root('plain', 'sb', ctx([rootRead])),
        root('unrestricted', 'sb', { ...ctx([]), permissions: { type: 'managed', file_system: { type: 'unrestricted' }, network: 'restricted' } }),
        root('project', 'sb', ctx([specialEntry('project_roots', 'read')])),
      ];
}

function requests(ws: string): object[][] {
  const u = (p: string) => pathToFileURL(path.join(ws, p)).href;
  const root = (id: string, p: string, sandbox?: object) => ({ id, path: u(p), ...(sandbox ? { sandbox } : {}) });
  const discover = (id: number, roots: unknown) => ({ id, method: 'capabilityRoots/discoverV1', params: { roots } });
  const missing = Array.from({ length: 129 }, (_, i) => root(`m${i}`, 'missing'));
  return [
    ...initialized([
      { id: 1, method: 'environment/info', params: null },
      discover(2, [root('plug', 'plug'), root('plain', 'plain'), root('depth', 'depth'), root('links', 'links'), root('missing', 'missing'), root('file', 'file.txt'), root('', 'plug/../plain'), root('plain', 'plain')]),
      discover(3, [root('big', 'big'), root('bundle', 'bundle')]),
      discover(4, []),
      discover(5, missing.slice(0, 128)),
      discover(6, missing),
      { id: 7, method: 'capabilityRoots/discoverV1', params: {} },
      { id: 8, method: 'capabilityRoots/discoverV1', params: null },
      discover(9, 'x'),
      discover(10, ['x']),
      discover(11, [{ path: u('plug') }]),
      discover(12, [{ id: 'x' }]),
      discover(13, [{ id: 1, path: u('plug') }]),
      discover(14, [{ id: 'x', path: 'rel/p' }]),
      discover(15, [{ id: 'x', path: 'http://h/p' }]),
      discover(16, [{ id: 'x', path: u('a%00b') }]),
      discover(17, [root('x', 'plug', {})]),
      discover(18, [root('x', 'plug', { permissions: { type: 'disabled' } })]),
      discover(19, [root('x', 'plug', { permissions: { type: 'disabled' }, windowsSandboxLevel: 'bogus' })]),
      discover(20, [root('x', 'plug', { permissions: { type: 'bogus' }, windowsSandboxLevel: 'disabled' })]),
      { id: 21, method: 'capabilityRoots/discoverV1', params: { roots: [{ id: 'x', path: u('plug'), sandbox: 'x' }] } },
      discover(22, [root('x', 'plug', { permissions: { type: 'disabled' }, windowsSandboxLevel: 'disabled' })]),
    ]),
    // Under managed sandboxes: one root per request (the reference starts its sandbox helper for each).
    ...sandboxedRoots(ws).map((r, i) => [discover(30 + i, [r])]),
  ];
}

const shape = (r: Reply | undefined) => (r?.error ? { error: { code: r.error.code, message: r.error.message } } : { result: r?.result });

test('capabilityRoots/discoverV1 + capabilityDiscoverySandbox: the same answers as every reference version on the same roots and sandboxes', async () => {
  const ws = fixture();
  try {
    const ours = await exchange(ourServer, requests(ws));
    // What must hold on ours whatever the reference says (so the comparison cannot pass on two equal mistakes).
    const info = ours.get(1)!.result as { providerId: string; prependPathDirs: unknown; capabilities: Record<string, boolean> };
    assert.match(info.providerId, /^sha256:[0-9a-f]{64}$/);
    assert.deepEqual(info.prependPathDirs, []);
    assert.equal(info.capabilities.capabilityDiscoverySandbox, true);
    type Root = { id: string; skills: { instructions: { path: string; contents: string } }[]; warnings: string[]; error: string | null; plugin: unknown };
    const rootsOf = (id: number) => (ours.get(id)!.result as { roots: Root[] }).roots;
    const byId = (id: number, rid: string) => rootsOf(id).find((r) => r.id === rid)!;
    const skillPaths = (r: Root) => r.skills.map((s) => s.instructions.path.slice(pathToFileURL(ws).href.length + 1));
    assert.deepEqual(skillPaths(byId(2, 'depth')), ['d1', 'd1/d2', 'd1/d2/d3', 'd1/d2/d3/d4', 'd1/d2/d3/d4/d5', 'd1/d2/d3/d4/d5/d6'].map((d) => `depth/${d}/SKILL.md`));
    assert.deepEqual(skillPaths(byId(2, 'links')), ['links/out/os/SKILL.md', 'links/real/SKILL.md'], 'a directory link followed once, a file link never');
    assert.equal(byId(3, 'bundle').skills.length, 16);
    assert.deepEqual(shape(ours.get(6)), { error: { code: -32600, message: 'capability root discovery accepts at most 128 roots' } });
    const SANDBOXED = ['usr', 'hid', 'sec', 'mani', 'mcp', 'rootnone', 'file', 'plain', 'unrestricted', 'project'];
    const sandboxed = (rid: string) => rootsOf(30 + SANDBOXED.indexOf(rid))[0];
    assert.match(sandboxed('usr').error ?? '', /No such file or directory \(os error 2\)$/);
    for (const rid of ['hid', 'sec', 'rootnone', 'file']) {
      const contents = sandboxed(rid).skills.map((s) => s.instructions.contents);
      assert.ok(!contents.includes(rid === 'hid' ? 'hid\n' : rid === 'file' ? 'a\n' : 'secret\n'), `${rid}: a hidden file's contents never answered`);
    }
    assert.ok(!sandboxed('sec').skills.some((s) => s.instructions.contents === 'secret\n'), 'not through the link to the hidden directory either');
    for (const ref of referenceServers()) {
      const theirs = await exchange(ref, requests(ws));
      const tinfo = theirs.get(1)!.result as { providerId: string; capabilities: Record<string, boolean> };
      assert.equal(tinfo.capabilities.capabilityDiscoverySandbox, true, `${ref.name} advertises capabilityDiscoverySandbox`);
      assert.match(tinfo.providerId, /^sha256:[0-9a-f]{64}$/, `${ref.name}: providerId shape`);
      for (const id of [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, ...SANDBOXED.map((_, i) => 30 + i)]) {
        assert.deepEqual(shape(ours.get(id)), shape(theirs.get(id)), `id ${id} vs ${ref.name}`);
      }
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
