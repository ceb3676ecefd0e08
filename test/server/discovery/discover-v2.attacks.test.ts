// Attacks on capabilities/discoverV2 (src/server/discovery/discover-v2.ts): a Codex home the
// request's sandbox does not mount, a `none` skill tree reached directly and through a directory
// link, a plugin cache behind a `none` path, a SKILL.md linked to a file outside its root, and a
// SKILL.md far over the 1 MiB bound. None of their contents may appear in the answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { managedSandbox, pathEntry, specialEntry } from '../../../src/protocol/codex-sandbox';
import { discoverV2 } from '../../../src/server/discovery/discover-v2';
import { parseSandbox, type SandboxProfile } from '../../../src/server/sandbox/profile';

const u = (p: string) => pathToFileURL(p).href;
const skill = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\n`;
const NONE: SandboxProfile = { kind: 'none', type: 'absent' };

function fixture() {
  const ws = realpathSync(mkdtempSync(path.join(os.homedir(), '.discv2-attack-')));
  const home = path.join(ws, 'codex-home');
  const file = (p: string, data: string | Buffer) => {
    mkdirSync(path.dirname(path.join(ws, p)), { recursive: true });
    writeFileSync(path.join(ws, p), data);
  };
  file('codex-home/skills/open/SKILL.md', skill('open', 'visible'));
  file('codex-home/skills/secret/SKILL.md', skill('secret', 'SECRET-IN-SKILLS'));
  file('hidden-tree/s/SKILL.md', skill('via-link', 'SECRET-THROUGH-LINK'));
  symlinkSync(path.join(ws, 'hidden-tree'), path.join(home, 'skills/link-to-hidden'));
  file('elsewhere/SKILL.md', skill('linked-file', 'SECRET-LINKED-FILE'));
  mkdirSync(path.join(home, 'skills/filelink'), { recursive: true });
  symlinkSync(path.join(ws, 'elsewhere/SKILL.md'), path.join(home, 'skills/filelink/SKILL.md'));
  file('codex-home/skills/huge/SKILL.md', skill('huge', 'HUGE-SKILL') + 'x'.repeat(2 * 1024 * 1024));
  file('codex-home/plugins/cache/mkt/plug/1.0.0/.codex-plugin/plugin.json', '{"name":"plug"}');
  file('codex-home/plugins/cache/mkt/plug/1.0.0/skills/p/SKILL.md', skill('p', 'SECRET-PLUGIN'));
  return { ws, home, env: { CODEX_HOME: home } as NodeJS.ProcessEnv };
}

function sandbox(ws: string, entries: unknown[]): SandboxProfile {
  const raw = { ...managedSandbox({ entries, cwd: u(ws) }), windowsSandboxLevel: 'disabled' };
  return parseSandbox(raw, { cwd: ws, tmpDir: os.tmpdir(), homeDir: os.homedir() });
}

const text = (v: unknown) => JSON.stringify(v);

test('discoverV2 under a sandbox that does not mount the Codex home: nothing of it, not even a warning naming it', { skip: process.platform !== 'linux' }, async () => {
  const { ws, home, env } = fixture();
  try {
    const r = await discoverV2(sandbox(ws, [pathEntry('file:///usr', 'read')]), env);
    assert.deepEqual(r, { plugins: [], skills: [], warnings: [] });
    assert.ok(!text(r).includes(home));
    // Unsandboxed, the same home is read (the test sees the fixture at all).
    const open = await discoverV2(NONE, env);
    assert.ok(open.skills.some((s) => s.description === 'SECRET-IN-SKILLS'));
    assert.ok(open.plugins.some((p) => p.skills.some((s) => s.description === 'SECRET-PLUGIN')));
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('discoverV2: a `none` skill, a `none` tree reached through a directory link and a `none` plugin cache are not read', { skip: process.platform !== 'linux' }, async () => {
  const { ws, home, env } = fixture();
  try {
    const r = await discoverV2(
      sandbox(ws, [specialEntry('root', 'read'), pathEntry(u(path.join(home, 'skills/secret')), 'none'), pathEntry(u(path.join(ws, 'hidden-tree')), 'none'), pathEntry(u(path.join(home, 'plugins')), 'none')]),
      env,
    );
    const all = text(r);
    for (const secret of ['SECRET-IN-SKILLS', 'SECRET-THROUGH-LINK', 'SECRET-PLUGIN', 'via-link']) assert.ok(!all.includes(secret), `${secret} not in the answer`);
    assert.ok(r.skills.some((s) => s.description === 'visible'), 'what the sandbox shows is still reported');
    assert.deepEqual(r.plugins, []);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('discoverV2: a SKILL.md that is a link out of its root is never read, sandboxed or not', async () => {
  const { ws, env } = fixture();
  try {
    for (const sb of process.platform === 'linux' ? [NONE, sandbox(ws, [specialEntry('root', 'read')])] : [NONE]) {
      const r = await discoverV2(sb, env);
      assert.ok(!text(r).includes('SECRET-LINKED-FILE'), `${sb.kind}: the linked file's contents`);
      assert.ok(!r.skills.some((s) => s.path.includes('filelink')), `${sb.kind}: the link is no skill`);
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('discoverV2: a SKILL.md over the 1 MiB bound is left out with a warning, the answer stays small', async () => {
  const { ws, env } = fixture();
  try {
    const r = await discoverV2(NONE, env);
    assert.ok(!r.skills.some((s) => s.name === 'huge'));
    assert.ok(r.warnings.length >= 1);
    assert.ok(Buffer.byteLength(text(r)) < 64 * 1024, `answer of ${Buffer.byteLength(text(r))} bytes`);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
