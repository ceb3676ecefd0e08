// Say it where users look: once per workspace when an exec-server folder is open (until "Don't
// Show Again"), and always in the Remote Search view's welcome text (the hasRemoteFolder context);
// and the remoteWindow context (every folder an exec-server: folder) the keybindings read.
import * as vscode from 'vscode';
import { SCHEME } from '../../common';
import type { CommandContext } from '../../environments/ui';
import { NOT_COVERED, type SearchFolders } from './folders';

const HAS_REMOTE_FOLDER = 'execServer.hasRemoteFolder';
/** Every workspace folder is an exec-server: folder — a remote window: Ctrl+Shift+F, Ctrl+P and Ctrl+` go to the remote versions (package.json keybindings). */
const REMOTE_WINDOW = 'execServer.remoteWindow';
const NOTICE_DISMISSED = 'execServer.search.noticeDismissed';
const NOTICE_SHOWN = 'execServer.search.noticeShown';

export function announceRemoteSearch(d: Pick<CommandContext, 'ctx'>, sf: SearchFolders): void {
  const update = () => {
    const has = sf.open().length > 0;
    void vscode.commands.executeCommand('setContext', HAS_REMOTE_FOLDER, has);
    const folders = vscode.workspace.workspaceFolders ?? [];
    void vscode.commands.executeCommand('setContext', REMOTE_WINDOW, folders.length > 0 && folders.every((f) => f.uri.scheme === SCHEME));
    if (!has || d.ctx.globalState.get(NOTICE_DISMISSED) || d.ctx.workspaceState.get(NOTICE_SHOWN)) return;
    void d.ctx.workspaceState.update(NOTICE_SHOWN, true);
    const find = 'Find in Files';
    const go = 'Go to File';
    const never = "Don't Show Again";
    void vscode.window.showInformationMessage(`Exec Server: ${NOT_COVERED} Use Find in Files (Remote Folder) and Go to File (Remote Folder).`, find, go, never).then((pick) => {
      if (pick === find) void vscode.commands.executeCommand('execServer.findInFiles');
      else if (pick === go) void vscode.commands.executeCommand('execServer.goToFile');
      else if (pick === never) void d.ctx.globalState.update(NOTICE_DISMISSED, true);
    });
  };
  d.ctx.subscriptions.push(vscode.workspace.onDidChangeWorkspaceFolders(update));
  update();
}
