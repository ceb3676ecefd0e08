// Open Remote Folder: recent remote folders, a folder browser over fs/readDirectory (starting in
// the remote's home directory from environment/info), then "open in a new window" or "add to
// this window" — with a warning when adding would reload the window and close Exec Server
// terminals. Path logic and the recent list live in src/extension/files/remote-folders.ts.
import * as vscode from 'vscode';
import type { ExecClient } from '../../../client/api';
import { infoPath } from '../../environments';
import { noIcons } from '../../common';
import { addingFolderReloads, addRecentFolder, browserRows, normalizePath, readRecentFolders, typedPath, type BrowserRow, type RecentFolder } from '../remote-folders';
import { remoteUri } from './file-system-provider';
import { oneAnswer } from '../../common/ui';

export const RECENT_KEY = 'execServer.recentFolders';

export type OpenWhere = 'newWindow' | 'addToWorkspace';

export interface OpenRemoteFolderDeps {
  globalState: vscode.Memento;
  environments(): { name: string; state: string }[];
  clientFor(environment: string): Promise<ExecClient>;
  log: vscode.LogOutputChannel;
  /** The workspace file of the folder's own window (Open in New Window): the folder, and the terminal '+' button on its environment. */
  windowWorkspace(environment: string, folder: string, uri: vscode.Uri): Promise<vscode.Uri>;
}

export function recentFolders(deps: Pick<OpenRemoteFolderDeps, 'globalState'>): RecentFolder[] {
  return readRecentFolders(deps.globalState.get(RECENT_KEY));
}

type Start = { kind: 'recent'; folder: RecentFolder } | { kind: 'browse'; environment: string };

/** First question: a recent folder, or an environment to browse. Skipped when there is nothing to choose. */
export async function pickStart(deps: OpenRemoteFolderDeps, environment?: string): Promise<Start | undefined> {
  const envs = deps.environments().map((e) => e.name);
  const recent = recentFolders(deps).filter((f) => envs.includes(f.environment) && (!environment || f.environment === environment));
  if (!recent.length) {
    if (environment) return { kind: 'browse', environment };
    if (envs.length === 1) return { kind: 'browse', environment: envs[0] };
  }
  type Item = vscode.QuickPickItem & { start?: Start };
  const items: Item[] = [];
  if (recent.length) {
    items.push({ label: 'recent', kind: vscode.QuickPickItemKind.Separator });
    for (const f of recent) items.push({ label: `$(history) ${noIcons(f.path)}`, description: noIcons(f.environment), start: { kind: 'recent', folder: f } });
    items.push({ label: 'browse', kind: vscode.QuickPickItemKind.Separator });
  }
  for (const e of deps.environments()) {
    if (environment && e.name !== environment) continue;
    items.push({ label: `$(folder-opened) Browse ${noIcons(e.name)}…`, description: e.state, start: { kind: 'browse', environment: e.name } });
  }
  const pick = await vscode.window.showQuickPick(items, { title: 'Exec Server: Open Remote Folder', placeHolder: 'A recent folder, or an environment to browse' });
  return pick?.start;
}

/** The folder the browser starts in: the remote's home (or its cwd), as an absolute path. */
export async function startFolder(client: ExecClient): Promise<string> {
  const info = await client.environmentInfo().catch(() => undefined);
  return infoPath(info?.userHomeDir) ?? infoPath(info?.cwd) ?? '/';
}

type RowItem = vscode.QuickPickItem & { row?: BrowserRow };

function rowItem(row: BrowserRow): RowItem {
  // Not alwaysShow: while the user filters, Enter takes the first matching folder.
  if (row.kind === 'accept') return { label: '$(check) Open this folder', description: noIcons(row.path), row };
  if (row.kind === 'up') return { label: '$(arrow-up) ..', description: noIcons(row.path), row };
  // A remote folder's name is the host's words: `$(icon)` in it is shown as typed.
  return { label: `$(folder) ${noIcons(row.name)}`, row };
}

/**
 * The browser: Enter on a folder goes into it, on ".." up, on "Open this folder" picks the
 * current one; typing filters, a typed /absolute/path + Enter goes there. Escape: undefined.
 */
export function browseFolder(environment: string, client: ExecClient, start: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const pick = vscode.window.createQuickPick<RowItem>();
    pick.title = `Exec Server: Open Remote Folder — ${environment}`;
    pick.ignoreFocusOut = true;
    pick.matchOnDescription = false;
    let current = '/';
    let generation = 0;
    const answer = oneAnswer<string | undefined>(pick, resolve);
    const finish = answer.finish;
    const go = async (dir: string) => {
      const my = ++generation;
      pick.busy = true;
      pick.value = '';
      try {
        const entries = await client.fs.readDirectory(dir);
        if (my !== generation) return;
        current = normalizePath(dir);
        pick.items = browserRows(current, entries).map(rowItem);
        pick.placeholder = `${current} — type to filter, or /a/path + Enter to go there`;
      } catch (e) {
        if (my !== generation) return;
        pick.placeholder = `Cannot list ${dir}: ${(e as Error).message} — still in ${current}`;
      } finally {
        if (my === generation) pick.busy = false;
      }
    };
    pick.onDidAccept(() => {
      const typed = typedPath(pick.value);
      const [active] = pick.activeItems;
      if (typed && active?.row?.kind !== 'folder') {
        void go(typed);
        return;
      }
      const row = active?.row;
      if (!row) return;
      if (row.kind === 'accept') finish(row.path);
      else void go(row.path);
    });
    pick.onDidHide(() => finish(undefined));
    pick.show();
    void go(start).then(() => {
      // A start folder that cannot be listed (no home?): fall back to /.
      if (!answer.done && pick.items.length === 0) void go('/');
    });
  });
}

/** "New window" or "this window"; a reload of this window (closing its terminals) is said up front. */
export async function pickWhere(folderLabel: string): Promise<OpenWhere | undefined> {
  const reloads = addingFolderReloads(vscode.workspace.workspaceFolders?.length ?? 0, !!vscode.workspace.workspaceFile);
  const items: (vscode.QuickPickItem & { where: OpenWhere })[] = [
    { label: '$(empty-window) Open in New Window', detail: 'This window stays as it is.', where: 'newWindow' },
    {
      label: '$(add) Add to This Window',
      detail: reloads ? 'Adds it as a workspace folder — VS Code reloads this window (its terminals close).' : 'Adds it as a workspace folder of this window.',
      where: 'addToWorkspace',
    },
  ];
  const pick = await vscode.window.showQuickPick(items, { title: `Exec Server: Open ${folderLabel}`, placeHolder: 'Where to open the folder' });
  return pick?.where;
}

/** Exec Server terminals of this window (their processes end when the window reloads). */
export function execServerTerminalCount(): number {
  return vscode.window.terminals.filter((t) => {
    const o = t.creationOptions as vscode.ExtensionTerminalOptions;
    return !!o && 'pty' in o && t.exitStatus === undefined;
  }).length;
}

/** Opens `folder` of `environment` where asked; resolves with the folder URI, or undefined if the user backed out. */
export async function openFolder(deps: OpenRemoteFolderDeps, environment: string, folder: string, where: OpenWhere, confirmReload: boolean): Promise<vscode.Uri | undefined> {
  const uri = remoteUri(environment, folder);
  const base = folder.replace(/\/+$/, '').split('/').pop() || '/';
  await deps.globalState.update(RECENT_KEY, addRecentFolder(deps.globalState.get(RECENT_KEY), { environment, path: folder }));
  if (where === 'newWindow') {
    const workspace = await deps.windowWorkspace(environment, folder, uri);
    await vscode.commands.executeCommand('vscode.openFolder', workspace, { forceNewWindow: true });
    deps.log.info(`${environment}: opened ${folder} in a new window (${workspace.fsPath})`);
    return uri;
  }
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.some((f) => f.uri.toString() === uri.toString())) return uri;
  if (confirmReload && addingFolderReloads(folders.length, !!vscode.workspace.workspaceFile)) {
    const n = execServerTerminalCount();
    if (n > 0) {
      const choice = await vscode.window.showWarningMessage(
        `Exec Server: adding ${folder} reloads this window and closes ${n} Exec Server terminal${n === 1 ? '' : 's'} (their processes end).`,
        { modal: true },
        'Add and Reload',
        'Open in New Window',
      );
      if (choice === 'Open in New Window') return openFolder(deps, environment, folder, 'newWindow', false);
      if (choice !== 'Add and Reload') return undefined;
    }
  }
  const ok = vscode.workspace.updateWorkspaceFolders(folders.length, 0, { uri, name: `${base} (${environment})` });
  if (!ok) throw new Error('Exec Server: VS Code refused to add the workspace folder');
  deps.log.info(`${environment}: added ${folder} to the workspace`);
  return uri;
}
