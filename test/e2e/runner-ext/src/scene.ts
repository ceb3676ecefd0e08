// The README screenshot scene (test/e2e/screenshots.mjs), played in the real extension host
// through the product's commands and API. After setting up each view it writes
// <controlDir>/scene-<shot>.ready and waits for the harness to write scene-<shot>.taken
// (the harness checks the workbench DOM, then takes the PNG). The end is scene.done.json.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { answerApproval, restoreApprovalPolicy, setApprovalPolicy } from '../../suite/approval';
import type { E2EConfig } from '../../suite/config';
import { RemoteServer } from '../../suite/remote-server';
import { productApi, waitFor } from '../../suite/util';

const REMOTE = 'devbox';

/** A small project to list, browse and open. */
const DEMO_FILES: Record<string, string> = {
  'README.md': '# demo-app\n\nA tiny HTTP service used in the Exec Server screenshots.\n',
  'package.json': JSON.stringify({ name: 'demo-app', version: '1.0.0', type: 'module', scripts: { start: 'node src/server.js', test: 'node --test' } }, null, 2) + '\n',
  '.gitignore': 'node_modules/\n',
  'src/server.js': [
    "import http from 'node:http';",
    "import { route } from './routes.js';",
    '',
    '// Serves the demo API on 127.0.0.1 only.',
    'const server = http.createServer((req, res) => {',
    '  const { status, body } = route(req.method, req.url);',
    "  res.writeHead(status, { 'content-type': 'application/json' });",
    '  res.end(JSON.stringify(body));',
    '});',
    '',
    "server.listen(8080, '127.0.0.1', () => {",
    "  console.log('listening on http://127.0.0.1:8080');",
    '});',
    '',
  ].join('\n'),
  'src/routes.js': "export function route(method, url) {\n  if (method === 'GET' && url === '/health') return { status: 200, body: { ok: true } };\n  return { status: 404, body: { error: 'not found' } };\n}\n",
  'test/routes.test.js': "import test from 'node:test';\nimport assert from 'node:assert';\nimport { route } from '../src/routes.js';\n\ntest('health', () => assert.equal(route('GET', '/health').status, 200));\n",
};

function writeDemo(dir: string): void {
  for (const [rel, text] of Object.entries(DEMO_FILES)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  }
}

/**
 * Tells the harness the view is ready and waits until it took the screenshot. `meanwhile` runs on
 * every poll until the harness saw the view: an idempotent step the workbench may drop (a reveal),
 * repeated until its effect is in the DOM.
 */
async function shot(cfg: E2EConfig, name: string, log: (l: string) => void, meanwhile?: () => Thenable<unknown>): Promise<void> {
  // The harness shoots once the view shows what it must (screenshots.mjs SHOTS): no pause here.
  writeFileSync(path.join(cfg.controlDir, `scene-${name}.ready`), name);
  log(`scene: ${name} ready`);
  await waitFor(`the harness to take ${name}`, async () => {
    if (existsSync(path.join(cfg.controlDir, `scene-${name}.taken`))) return true;
    // Not while the harness shoots: once it saw the view (scene-<shot>.seen) the view is left alone.
    if (!existsSync(path.join(cfg.controlDir, `scene-${name}.seen`))) await meanwhile?.();
    return false;
  }, 90_000, 200);
}

export async function runScene(cfg: E2EConfig, log: (line: string) => void): Promise<void> {
  const server = new RemoteServer();
  const terminals: vscode.Terminal[] = [];
  try {
    const api = await productApi();
    const demo = path.join(cfg.workDir, 'demo-app');
    writeDemo(demo);

    // The remote environment first, so the Environments view lists it next to Local.
    const url = await server.start(0);
    await vscode.commands.executeCommand('execServer.addEnvironment', { name: REMOTE, url, token: server.token });
    await vscode.commands.executeCommand('execServer.connect', { environment: REMOTE });

    // 1. A Local terminal with visible output, next to the Environments view.
    await vscode.commands.executeCommand('workbench.view.extension.execServer');
    // The picture shows the command after the shell's first prompt, and a pseudoterminal's output
    // has no event in the extension host: the shell says so itself, from PROMPT_COMMAND, just
    // before it prints that prompt (typed ahead, the command would be echoed above it).
    const prompted = path.join(cfg.workDir, 'scene-prompted');
    const rc = path.join(cfg.workDir, 'scene-bashrc');
    writeFileSync(rc, `[ -f ~/.bashrc ] && . ~/.bashrc\nPROMPT_COMMAND='touch ${prompted}; unset PROMPT_COMMAND'\n`);
    const terminal = await vscode.commands.executeCommand<vscode.Terminal>('execServer.newTerminal', { environment: 'Local', cwd: demo, name: 'Local', argv: ['/bin/bash', '--rcfile', rc] });
    terminals.push(terminal);
    terminal.show(false);
    await vscode.commands.executeCommand('workbench.action.toggleMaximizedPanel');
    await waitFor('the shell\'s first prompt', () => existsSync(prompted), 20_000, 50);
    // Opening the panel may add VS Code's own default shell terminal: only ours is in the picture.
    for (const t of vscode.window.terminals) if (t !== terminal) t.dispose();
    terminal.sendText('ls -la; stty size');
    await shot(cfg, 'terminal', log);
    await vscode.commands.executeCommand('workbench.action.toggleMaximizedPanel');
    await vscode.commands.executeCommand('workbench.action.closePanel');

    // 2. The remote folder through the exec-server:// FileSystemProvider, with a file open.
    const folderUri = await vscode.commands.executeCommand<string>('execServer.openRemoteFolder', { environment: REMOTE, path: demo });
    await waitFor('the remote workspace folder', () => vscode.workspace.workspaceFolders?.some((f) => f.uri.toString() === folderUri), 20_000);
    const file = vscode.Uri.parse(folderUri).with({ path: path.posix.join(demo, 'src', 'server.js') });
    await vscode.commands.executeCommand('workbench.view.explorer');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(file), { preview: false });
    // A reveal before the Explorer lists the new root, or right after, can be dropped by the tree:
    // repeated (it is idempotent) until the harness sees the file's row. The folder's own notice
    // (Search does not cover it) is not in this picture.
    await shot(cfg, 'remote-explorer', log, async () => {
      await vscode.commands.executeCommand('revealInExplorer', file);
      await vscode.commands.executeCommand('notifications.clearAll');
    });

    // 3. An API run() under alwaysAsk: the approval notification, answered Deny after the shot.
    await setApprovalPolicy('alwaysAsk');
    const run = api.run(REMOTE, ['npm', 'run', 'deploy'], { cwd: demo }).then(
      () => 'ran',
      (err: Error) => `rejected: ${err.message}`,
    );
    await shot(cfg, 'approval', log);
    await answerApproval('Deny');
    const outcome = await run;
    log(`scene: run() after Deny: ${outcome}`);
    if (outcome === 'ran') throw new Error('run() ran although the approval was denied');
    writeFileSync(path.join(cfg.controlDir, 'scene.done.json'), JSON.stringify({ ok: true, afterDeny: outcome }));
  } catch (err) {
    const message = err instanceof Error ? err.stack ?? err.message : String(err);
    log(`scene failed: ${message}`);
    writeFileSync(path.join(cfg.controlDir, 'scene.done.json'), JSON.stringify({ ok: false, error: message }));
  } finally {
    await restoreApprovalPolicy().then(undefined, () => {});
    for (const t of terminals) t.dispose();
    await vscode.commands.executeCommand('execServer.removeEnvironment', { name: REMOTE }).then(undefined, () => {});
    await server.stop();
  }
}
