// A remote-folder window acts remote (issue 22 §3): in a window whose only folder is an
// exec-server: folder ("Open in New Window" from Open Remote Folder, driven as a user would, by
// keys), Ctrl+Shift+F opens Find in Files (Remote Folder), Ctrl+P Go to File (Remote Folder), and
// Ctrl+` a shell in the folder's environment — its parent is the remote server, not VS Code.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { test } from './framework';
import { RemoteServer } from './remote-server';
import { uiCloseOtherWindows, uiOnOtherWindow, uiPages } from './ux-driver';
import { assert, assertEqual, freshDir, uniqueName, waitFor, waitForFile } from './util';

/** `pid` and its ancestors (from /proc). */
function ancestors(pid: number): number[] {
  const chain: number[] = [];
  for (let p = pid; p > 1 && chain.length < 50; ) {
    chain.push(p);
    try {
      p = Number(readFileSync(`/proc/${p}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1]);
    } catch {
      break;
    }
  }
  return chain;
}

export function registerRemoteWindowTests(): void {
  test('remote window: in a window of exec-server: folders Ctrl+Shift+F, Ctrl+P and Ctrl+` reach the remote Find in Files, Go to File and a shell in the folder\'s environment', async () => {
    const server = new RemoteServer();
    const name = uniqueName('rwin');
    try {
      await server.start(0);
      await vscode.commands.executeCommand('execServer.addEnvironment', { name, url: server.url, token: server.token });
      const root = freshDir('rwin');
      mkdirSync(path.join(root, 'project'), { recursive: true });
      writeFileSync(path.join(root, 'project', 'remote-only.txt'), 'x\n');
      await vscode.commands.executeCommand('execServer.openRemoteFolder', { environment: name, path: `${root}/project`, newWindow: true });
      await uiPages('folder=', 20_000);
      const other = async (req: Parameters<typeof uiOnOtherWindow>[0], what: string) => {
        const r = await uiOnOtherWindow(req);
        if (!r.ok) throw new Error(`${what}: ${r.error} (${JSON.stringify(r.state ?? r.texts ?? '')})`);
        return r;
      };
      await waitFor('the other window to load', async () => (await uiOnOtherWindow({ op: 'text', selector: '.explorer-folders-view, .pane-header', contains: 'project', giveUpMs: 2_000 })).ok, 90_000, 1_000);
      // The extension there has activated (its context key is set) once its Remote Search view exists.
      await waitFor('the extension in the other window', async () => (await uiOnOtherWindow({ op: 'text', selector: '.explorer-folders-view .monaco-list-row', contains: 'remote-only.txt', giveUpMs: 2_000 })).ok, 60_000, 1_000);

      await other({ op: 'keys', press: 'Control+Shift+F', settleMs: 1000 }, 'Ctrl+Shift+F');
      const find = await other({ op: 'quickInput', waitTitle: 'Find in Files (Remote Folder)', giveUpMs: 15_000 }, 'the remote Find in Files');
      assert(/Find in Files \(Remote Folder\)/.test(find.state?.title ?? ''), `Ctrl+Shift+F opened ${JSON.stringify(find.state?.title)}`);
      await other({ op: 'keys', press: 'Escape', settleMs: 600 }, 'close it');

      await other({ op: 'keys', press: 'Control+P', settleMs: 1000 }, 'Ctrl+P');
      const go = await other({ op: 'quickInput', waitTitle: 'Go to File (Remote Folder)', waitItem: 'remote-only.txt', giveUpMs: 20_000 }, 'the remote Go to File');
      assert(go.state?.items.some((i) => i.includes('remote-only.txt')), `Go to File lists the remote folder's file: ${JSON.stringify(go.state?.items)}`);
      await other({ op: 'keys', press: 'Escape', settleMs: 600 }, 'close it');

      // No terminal yet in that window: Ctrl+` opens one in the folder's environment, in the folder.
      await other({ op: 'keys', press: 'Control+Backquote', settleMs: 3000 }, 'Ctrl+`');
      await other({ op: 'text', selector: '.terminal .xterm-rows', giveUpMs: 30_000 }, 'the terminal');
      const out = path.join(root, 'ppid');
      await other({ op: 'keys', press: [...`echo $PPID:$PWD > ${out}`.split('').map((c) => (c === ' ' ? 'Space' : c)), 'Enter'], settleMs: 500 }, 'type in the terminal');
      const [ppid, cwd] = (await waitForFile(out, (s) => s.includes(':'), 30_000)).trim().split(':');
      assert(ancestors(Number(ppid)).includes(server.pid!), `the shell (parent ${ppid}) runs under the remote server ${server.pid} (the folder's environment), not VS Code`);
      assertEqual(cwd, `${root}/project`, 'it starts in the folder');
    } finally {
      await uiCloseOtherWindows().catch(() => undefined);
      await vscode.commands.executeCommand('execServer.removeEnvironment', { name }).then(undefined, () => undefined);
      await server.stop();
    }
  }, 240_000);
}
