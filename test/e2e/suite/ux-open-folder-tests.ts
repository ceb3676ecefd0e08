// Open Remote Folder as a user meets it (docs/extension.md, "First steps in detail"), through the real quick pick: the
// browser starts in the remote's home directory (an absolute path, not file:///…), Enter goes
// into folders, typing filters, a typed /path jumps there, "Open this folder" picks it, then
// "Open in New Window" / "Add to This Window"; the folder becomes a recent one.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { test } from './framework';
import { RemoteServer } from './remote-server';
import { quickInput, uiScreenshot } from './ux-driver';
import { assert, assertEqual, freshDir, productApi, uniqueName } from './util';

interface InfoClient {
  environmentInfo(): Promise<{ userHomeDir?: string; cwd?: string }>;
}

export function registerUxOpenFolderTests(): void {
  test('ux open remote folder: browse from the remote home, filter, type a path, add to this window, then offered as recent', async () => {
    const server = new RemoteServer();
    const name = uniqueName('ux-folder');
    let added: vscode.Uri | undefined;
    try {
      await server.start(0);
      await vscode.commands.executeCommand('execServer.addEnvironment', { name, url: server.url, token: server.token });
      const root = freshDir('ux-browse');
      for (const d of ['alpha/beta', 'gamma', '.hidden']) mkdirSync(path.join(root, d), { recursive: true });

      const api = await productApi();
      const info = await ((await api.getClient(name)) as InfoClient).environmentInfo();
      const home = new URL(String(info.userHomeDir ?? info.cwd)).pathname;
      assert(home.startsWith('/'), `the server reports a home (${info.userHomeDir})`);

      const done = Promise.resolve(vscode.commands.executeCommand('execServer.openRemoteFolder', { environment: name }));
      let s = await quickInput({ waitTitle: `Open Remote Folder — ${name}`, waitBusy: false, waitItem: 'Open this folder' });
      assert(s.placeholder?.startsWith(`${home} `), `the browser starts in the remote home as a path (placeholder "${s.placeholder}")`);
      assert(s.items.some((i) => i.includes('Open this folder')), `it offers the current folder (items ${JSON.stringify(s.items)})`);

      s = await quickInput({ waitTitle: name, fill: root, press: 'Enter', settleMs: 800 });
      s = await quickInput({ waitTitle: name, waitItem: 'gamma', waitBusy: false });
      assert(s.placeholder?.startsWith(`${root} `), `a typed absolute path goes there (placeholder "${s.placeholder}")`);
      const labels = s.items.join(' | ');
      for (const want of ['Open this folder', '..', 'alpha', 'gamma', '.hidden']) assert(labels.includes(want), `row "${want}" (rows: ${labels})`);
      assert(labels.indexOf('gamma') < labels.indexOf('.hidden'), `hidden folders come last (rows: ${labels})`);
      await uiScreenshot('open-remote-folder');

      s = await quickInput({ waitTitle: name, fill: 'alp', settleMs: 500 });
      assert(s.items.length === 1 && s.items[0].includes('alpha'), `typing filters the rows (rows ${JSON.stringify(s.items)})`);
      await quickInput({ waitTitle: name, press: 'Enter', settleMs: 800 });
      s = await quickInput({ waitTitle: name, waitItem: 'beta', waitBusy: false });
      assert(s.placeholder?.startsWith(`${root}/alpha `), `Enter went into alpha (placeholder "${s.placeholder}")`);

      await quickInput({ waitTitle: name, fill: 'Open this', settleMs: 400 });
      await quickInput({ waitTitle: name, press: 'Enter' });
      s = await quickInput({ waitTitle: `Open ${root}/alpha`, waitItem: 'New Window' });
      assert(s.items.some((i) => i.includes('Add to This Window')), `both choices are offered (${JSON.stringify(s.items)})`);
      await uiScreenshot('open-remote-folder-where');
      await quickInput({ waitTitle: 'Open', fill: 'Add to This', settleMs: 400 });
      await quickInput({ waitTitle: 'Open', press: 'Enter' });
      const uri = (await done) as string | undefined;
      assertEqual(vscode.Uri.parse(String(uri)).path, `${root}/alpha`, 'the path of the folder the command opened');
      added = (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.toString() === uri)?.uri;
      assert(added, `the folder is in the workspace (${(vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString()).join(', ')})`);

      const again = Promise.resolve(vscode.commands.executeCommand('execServer.openRemoteFolder', { environment: name }));
      s = await quickInput({ waitTitle: 'Open Remote Folder', waitItem: `${root}/alpha` });
      assert(s.items.some((i) => i.includes(`Browse ${name}`)), `browsing is still offered (${JSON.stringify(s.items)})`);
      await quickInput({ waitTitle: 'Open Remote Folder', press: 'Escape' });
      assertEqual(await again, undefined, 'Escape opens nothing');
    } finally {
      if (added) {
        const i = (vscode.workspace.workspaceFolders ?? []).findIndex((f) => f.uri.toString() === added!.toString());
        if (i >= 0) vscode.workspace.updateWorkspaceFolders(i, 1);
      }
      await vscode.commands.executeCommand('execServer.removeEnvironment', { name }).then(undefined, () => undefined);
      await server.stop();
    }
  }, 120_000);
}
