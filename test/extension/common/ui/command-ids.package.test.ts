// The extension manifest and the VSIX: package.json against the command table
// (src/extension/common/ui/command-ids.ts), activation, contents and size.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DECLARED_ONLY_SETTINGS, SETTING_KEYS } from '../../../../src/extension/common/settings';
import { COMMAND_CATEGORY, COMMANDS, ENVIRONMENTS_VIEW, SEARCH_RESULTS_VIEW, TERMINAL_PROFILE, type CommandContribution } from '../../../../src/extension/common/ui/command-ids';

const repo = process.env.EXEC_SERVER_REPO ?? path.resolve(__dirname, '../../../../..');
const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8'));
/** Every command id the manifest mentions outside contributes.commands (menus, welcome views, walkthrough links). */
function referencedCommands(contributes: Record<string, unknown>): string[] {
  const ids = new Set<string>();
  for (const entries of Object.values((contributes.menus ?? {}) as Record<string, { command: string }[]>)) for (const e of entries) ids.add(e.command);
  const text = JSON.stringify([contributes.viewsWelcome, contributes.walkthroughs]);
  for (const m of text.matchAll(/command:([\w.]+)/g)) ids.add(m[1]);
  return [...ids].sort();
}

describe('extension manifest', () => {
  it('contributes exactly the commands of the command table, with their titles, icons and enablement, under "Exec Server"', () => {
    const contributed = pkg.contributes.commands as (CommandContribution & { command: string; category: string })[];
    const expected = Object.entries(COMMANDS).map(([command, c]) => ({ command, category: COMMAND_CATEGORY, ...c }));
    const byId = (a: { command: string }, b: { command: string }) => a.command.localeCompare(b.command);
    assert.deepEqual([...contributed].sort(byId), [...expected].sort(byId));
    assert.equal(new Set(contributed.map((c) => c.command)).size, contributed.length, 'no command contributed twice');
  });

  it('menus, welcome views and walkthroughs name only commands of the table', () => {
    const referenced = referencedCommands(pkg.contributes);
    assert.ok(referenced.length >= 10, `found ${referenced.length} references`);
    for (const id of referenced) assert.ok(id in COMMANDS, `${id} is referenced in package.json but not in COMMANDS (src/extension/common/ui/command-ids.ts)`);
  });

  it('declares exactly the settings the settings owner reads, all user-scope only (scope: application)', () => {
    const props = pkg.contributes.configuration.properties as Record<string, { scope?: string }>;
    const declared = Object.keys(props).sort();
    const read = [...Object.keys(SETTING_KEYS), ...DECLARED_ONLY_SETTINGS].map((k) => `execServer.${k}`).sort();
    assert.deepEqual(declared, read);
    // An agent can write workspace files: no setting of this extension may come from them.
    for (const [key, p] of Object.entries(props)) assert.equal(p.scope, 'application', `${key} is user-scope only`);
  });

  it('activates after startup (never during it) and declares the terminal profile, view, file system and settings the code uses', () => {
    // onStartupFinished, not '*': a reloaded window re-attaches the shells of remote environments
    // (docs/reliability.md) without delaying the window; activate() itself connects nothing.
    assert.ok(!pkg.activationEvents.includes('*'));
    assert.ok(pkg.activationEvents.includes('onStartupFinished'));
    assert.ok(pkg.activationEvents.includes('onFileSystem:exec-server'));
    assert.deepEqual(pkg.contributes.terminal.profiles.map((p: { id: string }) => p.id), [TERMINAL_PROFILE]);
    assert.ok(pkg.activationEvents.includes(`onTerminalProfile:${TERMINAL_PROFILE}`));
    assert.deepEqual(pkg.contributes.views.execServer.map((v: { id: string }) => v.id), [ENVIRONMENTS_VIEW, SEARCH_RESULTS_VIEW]);
    const props = pkg.contributes.configuration.properties;
    assert.equal(props['execServer.approval.policy'].default, 'askOutsideWorkspace');
    assert.deepEqual(props['execServer.approval.policy'].enum, ['alwaysAsk', 'askOutsideWorkspace', 'neverAsk']);
    assert.equal(props['execServer.approval.timeoutSeconds'].default, 25);
    assert.equal(props['execServer.approval.sandboxAgentCommands'].default, false);
    assert.deepEqual(props['execServer.agentEndpoint.host'].enum, ['127.0.0.1']);
    assert.equal(props['execServer.agentEndpoint.port'].default, 0);
    assert.equal(pkg.capabilities.untrustedWorkspaces.supported, 'limited');
    assert.ok(existsSync(path.join(repo, pkg.icon)));
  });
});

/** Packs the VSIX into a temp dir (extra args to scripts/package-vsix.mjs) and returns its README and the packer's stderr. */
function packedReadme(args: string[]): { readme: string; stderr: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vsix-readme-'));
  try {
    const out = path.join(dir, 'x.vsix');
    const r = spawnSync(process.execPath, [path.join(repo, 'scripts/package-vsix.mjs'), '--target', 'universal', '--out', out, ...args], { cwd: repo, encoding: 'utf8', timeout: 170_000, env: { ...process.env, EXEC_SERVER_VSIX_BASE_URL: '' } });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const readme = spawnSync('unzip', ['-p', out, 'extension/readme.md'], { encoding: 'utf8' });
    assert.equal(readme.status, 0, readme.stderr);
    return { readme: readme.stdout, stderr: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const imagesOf = (markdown: string) => [...markdown.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]);

describe('VSIX', () => {
  it('the VSIX of this machine\'s target is small and holds the bundle and node-pty with its native module (every target: test/package)', { timeout: 180_000 }, () => {
    if (!existsSync(path.join(repo, 'dist/extension.js'))) {
      const b = spawnSync(process.execPath, [path.join(repo, 'esbuild.mjs')], { cwd: repo, encoding: 'utf8' });
      assert.equal(b.status, 0, b.stderr);
    }
    const dir = mkdtempSync(path.join(os.tmpdir(), 'vsix-test-'));
    try {
      const out = path.join(dir, 'x.vsix');
      const r = spawnSync(process.execPath, [path.join(repo, 'scripts/package-vsix.mjs'), '--target', `${process.platform}-${process.arch}`, '--out', out], { cwd: repo, encoding: 'utf8', timeout: 170_000 });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const list = spawnSync('unzip', ['-Z1', out], { encoding: 'utf8' });
      assert.equal(list.status, 0, list.stderr);
      const files = list.stdout.trim().split('\n');
      for (const f of ['extension/package.json', 'extension/dist/extension.js', 'extension/media/icon.png', `extension/node_modules/node-pty/prebuilds/${process.platform}-${process.arch}/pty.node`, 'extension/node_modules/node-pty/lib/index.js']) {
        assert.ok(files.includes(f), `${f} in ${files.join(', ')}`);
      }
      assert.ok(!files.some((f) => /^extension\/(src|test|out|bench)\//.test(f) || f.endsWith('.ts') || f.includes('node_modules/ws/')), 'no sources, tests or bundled deps');
      assert.ok(statSync(out).size < 2 * 1024 * 1024, 'smaller than 2 MiB');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the Details page gets the README screenshots as https URLs under the base URL (what VS Code shows), each naming a file of the repository', { timeout: 180_000 }, () => {
    const local = imagesOf(readFileSync(path.join(repo, 'README.md'), 'utf8'));
    assert.ok(local.length >= 5 && local.every((src) => !src.includes('://')), `README.md has relative screenshots: ${local.join(', ')}`);
    const base = 'https://images.example.test/exec-server/v1/';
    const { readme } = packedReadme(['--base-url', base]);
    assert.deepEqual(imagesOf(readme), local.map((src) => base + src));
    for (const src of local) assert.ok(existsSync(path.join(repo, src)), `${src} exists`);
    assert.ok(!/\]\((docs|src|test)\//.test(readme), 'relative links are absolute too');
  });

  it('without a base URL the README names its images in text and says why; a base URL that is not https is refused', { timeout: 180_000 }, () => {
    const { readme, stderr } = packedReadme([]);
    assert.deepEqual(imagesOf(readme), []);
    assert.match(readme, /\[image: A Local terminal/);
    assert.match(stderr, /no public base URL/);
    const r = spawnSync(process.execPath, [path.join(repo, 'scripts/package-vsix.mjs'), '--target', 'universal', '--out', path.join(os.tmpdir(), 'never.vsix'), '--base-url', 'http://insecure.example.test/'], { cwd: repo, encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /must be an https URL/);
  });
});
