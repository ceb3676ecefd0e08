// A remote-folder window acts remote (docs/extension.md, "What it does"): in a window whose only folder is an
// exec-server: folder ("Open in New Window" from Open Remote Folder, driven as a user would, by
// keys), Ctrl+Shift+F opens Find in Files (Remote Folder), Ctrl+P Go to File (Remote Folder), and
// Ctrl+` a shell in the folder's environment — its parent is the remote server, not VS Code —
// and so does the terminal '+' menu's "Exec Server" profile, without asking for an environment,
// and the '+' button itself (VS Code's default profile: the window's workspace file names ours;
// the user's settings are not touched).
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
      const userDefault = () => vscode.workspace.getConfiguration().inspect('terminal.integrated.defaultProfile.linux')?.globalValue;
      const userBefore = userDefault();
      await vscode.commands.executeCommand('execServer.openRemoteFolder', { environment: name, path: `${root}/project`, newWindow: true });
      await uiPages('remote-windows', 20_000);
      const other = async (req: Parameters<typeof uiOnOtherWindow>[0], what: string) => {
        const r = await uiOnOtherWindow(req);
        if (!r.ok) throw new Error(`${what}: ${r.error} (${JSON.stringify(r.state ?? r.texts ?? '')})`);
        return r;
      };
      await waitFor('the other window to load', async () => (await uiOnOtherWindow({ op: 'text', selector: '.explorer-folders-view, .pane-header', contains: 'project', giveUpMs: 2_000 })).ok, 90_000, 1_000);
      // The extension there has activated (its context key is set) once its Remote Search view exists.
      // The window is the folder's workspace file: its Explorer shows the folder as a root row
      // (expanded: explorer.expandSingleFolderWorkspaces), opened with a click if collapsed.
      await waitFor('the extension in the other window', async () => {
        if ((await uiOnOtherWindow({ op: 'text', selector: '.explorer-folders-view .monaco-list-row', contains: 'remote-only.txt', giveUpMs: 2_000 })).ok) return true;
        await uiOnOtherWindow({ op: 'click', selector: '.explorer-folders-view .monaco-list-row .monaco-tl-twistie.collapsible.collapsed' });
        return undefined;
      }, 120_000, 1_000);

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
      await other({ op: 'keys', press: [...`echo $$:$PPID:$PWD > ${out}`.split('').map((c) => (c === ' ' ? 'Space' : c)), 'Enter'], settleMs: 500 }, 'type in the terminal');
      const [first, ppid, cwd] = (await waitForFile(out, (s) => s.includes(':'), 30_000)).trim().split(':');
      // Each shell below is a new one (typing into an earlier terminal would prove nothing).
      const shells = new Set([first]);
      const tabs = async () => ((await uiOnOtherWindow({ op: 'count', selector: '.terminal-tabs-entry' })) as { count?: number }).count ?? 0;
      assert(ancestors(Number(ppid)).includes(server.pid!), `the shell (parent ${ppid}) runs under the remote server ${server.pid} (the folder's environment), not VS Code`);
      assertEqual(cwd, `${root}/project`, 'it starts in the folder');

      // The '+' menu's "Exec Server" profile there opens the folder's shell too, without asking
      // which environment (Local and this one exist: elsewhere it asks).
      const shellIn = async (what: string, file: string) => {
        await other({ op: 'text', selector: '.terminal .xterm-rows', giveUpMs: 30_000 }, what);
        // The new terminal is there (and focused, as every new one) before typing.
        await waitFor(`${what} to open`, async () => (await tabs()) > shells.size || undefined, 30_000, 500);
        await other({ op: 'keys', press: [...`echo $$:$PPID:$PWD > ${file}`.split('').map((c) => (c === ' ' ? 'Space' : c)), 'Enter'], settleMs: 500 }, `type in ${what}`);
        const [shell, p, d] = (await waitForFile(file, (s) => s.includes(':'), 30_000)).trim().split(':');
        assert(!shells.has(shell), `${what}: a new shell (${shell}), not one of ${[...shells].join(', ')}`);
        shells.add(shell);
        assert(ancestors(Number(p)).includes(server.pid!), `${what}: the shell (parent ${p}) runs under the remote server ${server.pid}`);
        assertEqual(d, `${root}/project`, `${what} starts in the folder`);
      };
      // (Its entry reads "Exec Server (Default)" once the window's default profile is ours.)
      await other({ op: 'click', selector: '.part.panel .monaco-dropdown-with-primary .dropdown-action-container .action-label' }, "the '+' menu");
      await other({ op: 'text', selector: '.monaco-menu .action-label', contains: 'Exec Server', giveUpMs: 10_000 }, 'the menu lists the Exec Server profile');
      await other({ op: 'click', selector: '.monaco-menu .action-label:has-text("Exec Server")' }, 'its Exec Server entry');
      assert(!(await uiOnOtherWindow({ op: 'quickInput', waitTitle: '', waitItem: 'Local', giveUpMs: 2_000 })).ok, 'no environment picker');
      await shellIn("the '+' menu's Exec Server terminal", path.join(root, 'ppid-profile'));

      // The '+' button itself (not its menu): VS Code's default profile, which is ours here.
      await other({ op: 'click', selector: '.part.panel .monaco-dropdown-with-primary > .action-container .action-label' }, "the '+' button");
      assert(!(await uiOnOtherWindow({ op: 'quickInput', waitTitle: '', waitItem: 'Local', giveUpMs: 2_000 })).ok, 'no environment picker');
      await shellIn("the '+' button's terminal", path.join(root, 'ppid-plus'));
      assertEqual(userDefault(), userBefore, "the user's terminal.integrated.defaultProfile.linux");
    } finally {
      await uiCloseOtherWindows().catch(() => undefined);
      await vscode.commands.executeCommand('execServer.removeEnvironment', { name }).then(undefined, () => undefined);
      await server.stop();
    }
  }, 240_000);
}
