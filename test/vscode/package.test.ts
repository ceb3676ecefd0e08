// The extension manifest and the VSIX: command ids, activation, contents and size.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';

const repo = process.env.EXEC_SERVER_REPO ?? path.resolve(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8'));
const commandsSource = readFileSync(path.join(repo, 'src/vscode/commands.ts'), 'utf8');
const extensionSource = readFileSync(path.join(repo, 'src/vscode/extension.ts'), 'utf8');

describe('extension manifest', () => {
  it('contributes exactly the commands the code registers, all under "Exec Server"', () => {
    const registered = [...commandsSource.matchAll(/reg\('([\w.]+)'/g)].map((m) => m[1]).sort();
    const contributed = (pkg.contributes.commands as { command: string; category: string }[]).map((c) => c.command).sort();
    assert.deepEqual(contributed, registered);
    assert.ok(pkg.contributes.commands.every((c: { category: string }) => c.category === 'Exec Server'));
    for (const id of ['execServer.connect', 'execServer.disconnect', 'execServer.addEnvironment', 'execServer.removeEnvironment', 'execServer.newTerminal', 'execServer.runCommand', 'execServer.openRemoteFolder', 'execServer.revealInExplorer', 'execServer.showProcesses', 'execServer.showLog', 'execServer.startAgentEndpoint', 'execServer.stopAgentEndpoint', 'execServer.copyEndpointToken']) {
      assert.ok(registered.includes(id), id);
    }
  });

  it('activates lazily and declares the terminal profile, view, file system and settings the code uses', () => {
    assert.ok(!pkg.activationEvents.includes('*') && !pkg.activationEvents.includes('onStartupFinished'));
    assert.ok(pkg.activationEvents.includes('onFileSystem:exec-server'));
    const profile = pkg.contributes.terminal.profiles[0].id;
    assert.ok(pkg.activationEvents.includes(`onTerminalProfile:${profile}`));
    assert.ok(extensionSource.includes(`registerTerminalProfileProvider('${profile}'`));
    const view = pkg.contributes.views.execServer[0].id;
    assert.ok(extensionSource.includes(`createTreeView('${view}'`));
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

describe('VSIX', () => {
  it('npm run package produces a small VSIX with the bundle and node-pty native module', { timeout: 180_000 }, () => {
    if (!existsSync(path.join(repo, 'dist/extension.js'))) {
      const b = spawnSync(process.execPath, [path.join(repo, 'esbuild.mjs')], { cwd: repo, encoding: 'utf8' });
      assert.equal(b.status, 0, b.stderr);
    }
    const dir = mkdtempSync(path.join(os.tmpdir(), 'vsix-test-'));
    try {
      const out = path.join(dir, 'x.vsix');
      const r = spawnSync(process.execPath, [path.join(repo, 'scripts/package-vsix.mjs'), '--out', out], { cwd: repo, encoding: 'utf8', timeout: 170_000 });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const list = spawnSync('unzip', ['-Z1', out], { encoding: 'utf8' });
      assert.equal(list.status, 0, list.stderr);
      const files = list.stdout.trim().split('\n');
      for (const f of ['extension/package.json', 'extension/dist/extension.js', 'extension/media/icon.png', 'extension/node_modules/node-pty/build/Release/pty.node', 'extension/node_modules/node-pty/lib/index.js']) {
        assert.ok(files.includes(f), `${f} in ${files.join(', ')}`);
      }
      assert.ok(!files.some((f) => /^extension\/(src|test|out|bench)\//.test(f) || f.endsWith('.ts') || f.includes('node_modules/ws/')), 'no sources, tests or bundled deps');
      assert.ok(statSync(out).size < 2 * 1024 * 1024, 'smaller than 2 MiB');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
