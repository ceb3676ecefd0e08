// The current-environment indicator at the far left of the status bar (next to VS Code's
// remote indicator, whose menu holds Connect to Host… through package.json's
// statusBar/remoteIndicator contribution): `$(remote) <environment>` — the environment the user
// turned to last (the host Connect to Host reached, or the environment of an exec-server: folder
// added to the window) while it is connected, else the environment of the first exec-server:
// workspace folder, else Local. A click opens the remote menu (Connect to Host…, Open Remote Folder…).
import * as vscode from 'vscode';
import { SCHEME } from '../../common';
import type { EnvironmentManager } from '../../environments';
import { LOCAL_ENVIRONMENT, shownState, type EnvironmentStore } from '../../environments';
import { noIcons } from '../../common';
import { DisposableStore } from '../../../rpc/event';

export class CurrentEnvironmentIndicator implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('execServer.currentEnvironment', vscode.StatusBarAlignment.Left, 10_000);
  private last: string | undefined;
  private readonly subs = new DisposableStore();

  constructor(
    private readonly store: EnvironmentStore,
    private readonly manager: EnvironmentManager,
  ) {
    this.item.name = 'Exec Server: Current Environment';
    this.item.command = { title: 'Exec Server remote menu', command: 'workbench.action.remote.showMenu' };
    this.subs.add(
      vscode.workspace.onDidChangeWorkspaceFolders((e) => {
        const added = e.added.find((f) => f.uri.scheme === SCHEME);
        if (added) this.last = this.environmentOf(added.uri.authority);
        this.update();
      }),
    );
    this.subs.add(manager.onDidChangeState(() => this.update()));
    this.update();
    this.item.show();
  }

  /** Connect to Host reached `environment`. */
  connected(environment: string): void {
    this.last = environment;
    this.update();
  }

  /** exec-server:// authorities may come back lower-cased. */
  private environmentOf(authority: string): string {
    return this.store.get(authority)?.name ?? this.store.list().find((e) => e.name.toLowerCase() === authority.toLowerCase())?.name ?? authority;
  }

  /** The environment the window works in now. */
  current(): string {
    if (this.last && this.store.get(this.last) && this.manager.state(this.last) !== 'disconnected') return this.last;
    const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === SCHEME);
    if (folder) return this.environmentOf(folder.uri.authority);
    return LOCAL_ENVIRONMENT;
  }

  update(): void {
    const env = this.current();
    const config = this.store.get(env);
    // The view's words (environments/status-text.ts): Local "ready", others their state.
    const state = shownState(env === LOCAL_ENVIRONMENT ? 'local' : config?.kind, this.manager.state(env));
    // The name may come from a workspace folder's exec-server://<authority> (a .code-workspace
    // file): a `$(icon)` in it is shown as text.
    this.item.text = `$(remote) ${noIcons(env)}`;
    this.item.tooltip = `Exec Server: working in ${env} (${state}). Click: Connect to Host…, Open Remote Folder…`;
    this.item.backgroundColor = state === 'failed' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  dispose(): void {
    this.subs.dispose();
    this.item.dispose();
  }
}
