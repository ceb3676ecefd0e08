// Conformance of `capabilities/discoverV2` (flag `capabilityDiscoveryV2`, REFERENCE-CAPABILITIES
// §3.1) against every reference version and ours, each given the same CODEX_HOME and HOME:
// SKILL.md front matter (name from the directory, folded values, the name bound, the repair of
// unquoted values, invalid YAML, duplicate keys, a byte-order mark, CRLF, non-UTF-8), depth 6,
// hidden and linked directories, linked files, agents/openai.yaml dependencies and policy,
// ~/.agents/skills, installed plugins (version choice, `local`, display names, namespaced
// skills, a manifest that is not JSON, a plugin without one), the one warning per location,
// the 2000-directory traversal limit, the params errors, and discovery under managed sandboxes (a home
// not mounted, a `none` skills tree, skill, file and plugin cache).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { managedSandbox, pathEntry, specialEntry } from '../../src/protocol/codex-sandbox';
import { ourServer, referenceServers } from '../support/reference';
import { exchange, initialized, type Reply } from '../support/wire';

const cacheDir = process.env.EXEC_SERVER_CACHE ?? path.join(os.homedir(), '.cache', 'exec-server');
const u = (p: string) => pathToFileURL(p).href;

const skill = (name: string, description = 'x', extra = '') => `---\nname: ${name}\ndescription: ${description}\n${extra}---\n`;

/** A Codex home, a user home and a workspace (outside /tmp: a managed sandbox's temp roots). */
function fixture(): { ws: string; home: string; userHome: string } {
  const ws = path.join(cacheDir, `discv2-${randomBytes(4).toString('hex')}`);
  const home = path.join(ws, 'codex-home');
  const userHome = path.join(ws, 'user');
  const file = (p: string, data: string | Buffer) => {
    mkdirSync(path.dirname(path.join(ws, p)), { recursive: true });
    writeFileSync(path.join(ws, p), data);
  };
  const s = (p: string, data: string | Buffer) => file(`codex-home/skills/${p}/SKILL.md`, data);
  s('a-ok', '---\nname: zeta\ndescription: "multi\n  line   desc"\nmetadata:\n  short-description: short one\n---\nbody\n');
  s('b-noclose', '---\nname: bad\n');
  s('c-badyaml', '---\nname: [unclosed\ndescription: x\n---\n');
  s('d-nodesc', '---\nname: nodesc\n---\n');
  s('e-longname', skill('n'.repeat(65)));
  s('f-name64', skill('n'.repeat(64)));
  s('f-name64-wide', skill('é'.repeat(64)));
  s('g-alias', skill('g', 'x', 'metadata:\n  shortDescription: alias form\n'));
  s('h-longshort', skill('h', 'd'.repeat(1025), `metadata:\n  short-description: ${'s'.repeat(1025)}\n`));
  s('i-extra', skill('i', 'x', 'foo: bar\nallowed-tools: [a]\ntags: [next,@supabase/ssr]\n'));
  s('j-scalars', skill('123', 'true'));
  s('k-emptyname', '---\nname: ""\ndescription: x\n---\n');
  s('k-nullname', '---\nname: ~\ndescription: x\n---\n');
  s('l-crlf', '---\r\nname: l\r\ndescription: crlf\r\n---\r\n');
  s('m-deep/x/y/z/w/v', skill('depth6'));
  s('m-deep/x/y/z/w/v/u', skill('depth7'));
  s('n-dup', skill('zeta', 'dup name'));
  s('o-colon', skill('o', 'Build for AWS: ECS', "metadata:\n  short-description: What's included: builds\n"));
  s('o-block', '---\nname: ob\ndescription: |\n  line one\n  line two: colon\n---\n');
  s('p-seqdesc', skill('p', '[a, b]'));
  s('p-metascalar', skill('pm', 'x', 'metadata: scalar\n'));
  s('q-unterminated', '---\nname: "q\ndescription: x\n---\n');
  s('q-seqdoc', '---\n- a\n- b\n---\n');
  s('q-dupkey', '---\nname: q\ndescription: x\nname: again\n---\n');
  s('r-bom', '\ufeff---\nname: r\ndescription: bom\n---\n');
  s('r-leadblank', '\n---\nname: r\ndescription: x\n---\n');
  s('r-indentdelim', '  ---  \nname: ri\ndescription: x\n  ---\n');
  s('r-spaces', '---\nname: "  spaced   name "\ndescription: "   "\n---\n');
  s('r-spaces2', '---\nname: "  spaced   name "\ndescription: x\n---\n');
  s('s-utf8', Buffer.concat([Buffer.from('---\nname: s\ndescription: "'), Buffer.from([0xff]), Buffer.from(' bad"\n---\n')]));
  s('s-nested', skill('s-outer'));
  s('s-nested/inner', skill('s-inner'));
  s('.hidden/h', skill('hidden'));
  file('codex-home/skills/SKILL.md', skill('top'));
  mkdirSync(path.join(home, 'skills/t-filelink'), { recursive: true });
  symlinkSync(path.join(home, 'skills/a-ok/SKILL.md'), path.join(home, 'skills/t-filelink/SKILL.md'));
  file('outside/os/SKILL.md', skill('outside', 'via a directory link'));
  symlinkSync(path.join(ws, 'outside'), path.join(home, 'skills/u-dirlink'));
  // agents/openai.yaml
  const meta = (dir: string, yaml: string) => {
    s(dir, skill(dir));
    file(`codex-home/skills/${dir}/agents/openai.yaml`, yaml);
  };
  meta('y1', 'dependencies:\n  tools:\n    - type: env_var\n      value: TOKEN\n    - value: no-type\n    - type: mcp\n    - type: cli\n      value: x\n      transport: stdio\n      command: run\n      url: http://u\n      oauth_callback_port: 8080\n');
  meta('y2', 'policy:\n  products: [codex, CHATGPT, atlas]\n');
  meta('y3', 'policy:\n  allow_implicit_invocation: true\n  products: [bogus]\n');
  meta('y4', 'dependencies: {}\npolicy: {}\n');
  meta('y5', 'interface:\n  display_name: X\npolicy:\n  allow_implicit_invocation: false\n');
  meta('y6', 'dependencies: 5\n');
  meta('y7', ': : :\n[');
  // ~/.agents/skills
  file('user/.agents/skills/b/SKILL.md', skill('user-agent'));
  file('user/.agents/skills/bad/SKILL.md', 'no front matter\n');
  // installed plugins
  const plugin = (p: string, manifest: string, dir = '.codex-plugin') => file(`codex-home/plugins/cache/${p}/${dir}/plugin.json`, manifest);
  plugin('m1/two/1.9.0', '{"name":"two"}');
  plugin('m1/two/1.10.0', '{"name":"two"}');
  plugin('m1/two/1.10.0-beta', '{"name":"two"}');
  file('codex-home/plugins/cache/m1/two/1.10.0/skills/ps/SKILL.md', skill('ps', 'plugin skill'));
  file('codex-home/plugins/cache/m1/two/1.10.0/.mcp.json', '{"mcpServers":{}}\n');
  plugin('m1/loc/zzz', '{"name":"loc"}');
  plugin('m1/loc/local', '{}');
  plugin('m1/renamed/v1', '{"name":"other-name","interface":{"displayName":"Pretty"}}', '.claude-plugin');
  plugin('m2/badskill/1', '{"name":"badskill"}');
  file('codex-home/plugins/cache/m2/badskill/1/skills/b/SKILL.md', 'no front matter\n');
  plugin('m2/badjson/1', 'not json');
  file('codex-home/plugins/cache/m2/nomani/1/skills/x/SKILL.md', skill('x'));
  plugin('m2/flat', '{"name":"flat"}');
  plugin('m2/longns/1', JSON.stringify({ name: 'n'.repeat(70) }));
  file('codex-home/plugins/cache/m2/longns/1/skills/l/SKILL.md', skill('l'.repeat(60)));
  return { ws, home, userHome };
}

/** A second home: more skill directories than a location's traversal limit (2000 directories, its root included). */
function bigHome(ws: string): string {
  const home = path.join(ws, 'big-home');
  for (let i = 0; i < 2001; i++) {
    const d = path.join(home, 'skills', `s${String(i).padStart(4, '0')}`);
    mkdirSync(d, { recursive: true });
    writeFileSync(path.join(d, 'SKILL.md'), skill(`s${i}`));
  }
  return home;
}

function requests(ws: string, home: string): object[][] {
  const W = u(ws);
  const ctx = (entries: unknown[]) => ({ ...managedSandbox({ entries, cwd: W }), windowsSandboxLevel: 'disabled', useLegacyLandlock: false });
  const rootRead = specialEntry('root', 'read');
  const discover = (id: number, params: unknown) => ({ id, method: 'capabilities/discoverV2', params });
  return initialized([
    { id: 1, method: 'environment/info', params: null },
    discover(2, { cwd: W }),
    discover(3, {}),
    discover(4, null),
    discover(5, { cwd: 'rel' }),
    discover(6, { cwd: 'http://h/p' }),
    discover(7, { cwd: 5 }),
    discover(8, { cwd: u(path.join(ws, 'missing')), extra: 1 }),
    discover(9, { cwd: W, sandbox: null }),
    discover(10, { cwd: W, sandbox: 'x' }),
    discover(11, { cwd: W, sandbox: {} }),
    discover(12, { cwd: W, sandbox: { permissions: { type: 'disabled' } } }),
    discover(13, { cwd: W, sandbox: { permissions: { type: 'disabled' }, cwd: W } }),
    discover(14, { cwd: W, sandbox: { permissions: { type: 'bogus' }, cwd: W, windowsSandboxLevel: 'disabled' } }),
    discover(15, { cwd: W, sandbox: { permissions: { type: 'disabled' }, cwd: 'rel', windowsSandboxLevel: 'disabled' } }),
    discover(16, { cwd: W, sandbox: { permissions: { type: 'disabled' }, cwd: W, windowsSandboxLevel: 'disabled' } }),
    // Managed sandboxes.
    discover(20, { cwd: W, sandbox: ctx([pathEntry('file:///usr', 'read')]) }),
    discover(21, { cwd: W, sandbox: ctx([rootRead, pathEntry(u(path.join(home, 'skills/a-ok')), 'none')]) }),
    discover(22, { cwd: W, sandbox: ctx([rootRead, pathEntry(u(path.join(home, 'plugins')), 'none')]) }),
    discover(23, { cwd: W, sandbox: ctx([rootRead, pathEntry(u(path.join(home, 'skills')), 'none')]) }),
    discover(24, { cwd: W, sandbox: ctx([rootRead, pathEntry(u(path.join(home, 'skills/f-name64/SKILL.md')), 'none')]) }),
    discover(25, { cwd: W, sandbox: ctx([rootRead, pathEntry(u(path.join(ws, 'outside')), 'none')]) }),
    discover(26, { cwd: W, sandbox: ctx([rootRead]) }),
  ]);
}

const shape = (r: Reply | undefined) => (r?.error ? { error: { code: r.error.code, message: r.error.message } } : { result: r?.result });
type Skill = { name: string; path: string; description: string };
type Result = { plugins: { id: string; skills: Skill[] }[]; skills: Skill[]; warnings: string[] };

test('capabilities/discoverV2: the same skills, plugins, warnings and errors as every reference version, on the same homes and sandboxes', async () => {
  const { ws, home, userHome } = fixture();
  const big = bigHome(ws);
  const env = { CODEX_HOME: home, HOME: userHome };
  const bigReqs = initialized([{ id: 1, method: 'capabilities/discoverV2', params: { cwd: u(ws) } }]);
  try {
    const ours = await exchange(ourServer, requests(ws, home), env);
    const oursBig = await exchange(ourServer, bigReqs, { CODEX_HOME: big, HOME: path.join(ws, 'empty-home') });
    // What must hold on ours whatever the reference says (so the comparison cannot pass on two equal mistakes).
    const info = ours.get(1)!.result as { capabilities: Record<string, boolean> };
    assert.equal(info.capabilities.capabilityDiscoveryV2, true);
    const all = ours.get(2)!.result as Result;
    const names = all.skills.map((s) => s.name);
    assert.ok(names.includes('zeta') && names.includes('k-emptyname') && names.includes('depth6') && names.includes('outside'), names.join());
    for (const out of ['bad', 'nodesc', 'depth7', 'p', 'q', 'r', 'user-agent-bad']) assert.ok(!names.includes(out), `${out} left out`);
    assert.ok(!all.skills.some((s) => s.path.includes('t-filelink')), 'a linked SKILL.md is never read');
    assert.deepEqual(all.plugins.map((p) => p.id), ['badskill@m2', 'loc@m1', 'longns@m2', 'renamed@m1', 'two@m1']);
    assert.deepEqual(all.plugins.find((p) => p.id === 'two@m1')!.skills.map((s) => s.name), ['two:ps']);
    const sandboxed = (id: number) => ours.get(id)!.result as Result;
    assert.deepEqual(sandboxed(20), { plugins: [], skills: [], warnings: [] }, 'a home the sandbox does not mount: nothing');
    assert.ok(!sandboxed(21).skills.some((s) => s.name === 'zeta' && s.description === 'multi line desc'), 'a `none` skill is not read');
    assert.ok(!sandboxed(23).skills.some((s) => s.path.includes('/codex-home/skills/')), 'a `none` skills tree is not read');
    assert.ok(!sandboxed(25).skills.some((s) => s.name === 'outside'), 'not through a directory link into a `none` tree');
    const bigResult = oursBig.get(1)!.result as Result;
    assert.deepEqual([bigResult.skills.length, bigResult.warnings.length], [1999, 1], 'the traversal limit: 1999 skill directories below the root, one warning');
    for (const ref of referenceServers()) {
      const theirs = await exchange(ref, requests(ws, home), env);
      const tinfo = theirs.get(1)!.result as { capabilities: Record<string, boolean> };
      assert.equal(tinfo.capabilities.capabilityDiscoveryV2, true, `${ref.name} advertises capabilityDiscoveryV2`);
      for (const id of [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 21, 22, 23, 24, 25, 26]) {
        assert.deepEqual(shape(ours.get(id)), shape(theirs.get(id)), `id ${id} vs ${ref.name}`);
      }
      const theirsBig = await exchange(ref, bigReqs, { CODEX_HOME: big, HOME: path.join(ws, 'empty-home') });
      assert.deepEqual(shape(oursBig.get(1)), shape(theirsBig.get(1)), `2100 skills vs ${ref.name}`);
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
