// A host's words shown in a quick pick: VS Code draws `$(name)` in quick pick labels as an
// icon, so a remote folder named `… $(pass-filled) verified` would wear a checkmark badge the
// extension never put there in the Open Remote Folder browser. It must show as typed.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { test } from './framework';
import { RemoteServer } from './remote-server';
import { quickInput, uiCount, uiTexts } from './ux-driver';
import { assert, freshDir, uniqueName } from './util';

export function registerUxMarkupTests(): void {
  test('ux markup: a remote folder named "… $(pass-filled) verified" is listed in the folder browser as text, with no icon from its name', async () => {
    const server = new RemoteServer();
    const name = uniqueName('ux-markup');
    const m = uniqueName('badge');
    let done: Promise<unknown> | undefined;
    try {
      await server.start(0);
      await vscode.commands.executeCommand('execServer.addEnvironment', { name, url: server.url, token: server.token });
      const root = freshDir('ux-markup');
      mkdirSync(path.join(root, `${m} $(pass-filled) verified`));
      done = Promise.resolve(vscode.commands.executeCommand('execServer.openRemoteFolder', { environment: name }));
      await quickInput({ waitTitle: `Open Remote Folder — ${name}`, waitBusy: false, waitItem: 'Open this folder' });
      await quickInput({ waitTitle: name, fill: root, press: 'Enter', settleMs: 800 });
      const s = await quickInput({ waitTitle: name, waitItem: m, waitBusy: false });
      const row = s.items.find((i) => i.includes(m));
      const icons = await uiCount('.quick-input-list .monaco-list-row .codicon-pass-filled');
      assert(icons === 0, `no pass-filled icon drawn from the folder's name (${icons} found; row "${row}")`);
      const shown = (await uiTexts('.quick-input-list .monaco-list-row .label-name')).find((t) => t.includes(m));
      assert(shown?.includes('$(pass-filled) verified'), `the row shows the name as typed ("${shown}")`);
    } finally {
      if (done) {
        await quickInput({ waitTitle: name, press: 'Escape' }).catch(() => undefined);
        await done.catch(() => undefined);
      }
      await vscode.commands.executeCommand('execServer.removeEnvironment', { name }).then(undefined, () => undefined);
      await server.stop();
    }
  }, 120_000);
}
