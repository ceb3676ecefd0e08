// The current-environment indicator at the far left of the status bar (next to VS Code's
// remote indicator, whose menu holds Connect to Host… through package.json's
// statusBar/remoteIndicator contribution): `$(remote) <environment>` — the environment of the
// first exec-server: workspace folder, else the host Connect to Host reached last while it is
// connected, else Local. A click opens the remote menu (Connect to Host…, Open Remote Folder…).
import * as vscode from 'vscode';
import type { EnvironmentManager } from './core/environment-manager';
import { LOCAL_ENVIRONMENT, type EnvironmentStore } from './core/environment-store';

const SCHEME = 'exec-server';

export class CurrentEnvironmentIndicator implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('execServer.currentEnvironment', vscode.StatusBarAlignment.Left, 10_000);
  private last: string | undefined;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    private readonly store: EnvironmentStore,
    private readonly manager: EnvironmentManager,
  ) {
    this.item.name = 'Exec Server: Current Environment';
    this.item.command = { title: 'Exec Server remote menu', command: 'workbench.action.remote.showMenu' };
    this.subs.push(
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.update()),
      manager.onDidChangeState(() => this.update()),
    );
    this.update();
    this.item.show();
  }

  /** Connect to Host reached `environment`. */
  connected(environment: string): void {
    this.last = environment;
    this.update();
  }

  /** The environment the window works in now. */
  current(): string {
    const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === SCHEME);
    if (folder) {
      const a = folder.uri.authority;
      return this.store.get(a)?.name ?? this.store.list().find((e) => e.name.toLowerCase() === a.toLowerCase())?.name ?? a;
    }
    if (this.last && this.store.get(this.last) && this.manager.state(this.last) !== 'disconnected') return this.last;
    return LOCAL_ENVIRONMENT;
  }

  update(): void {
    const env = this.current();
    const state = env === LOCAL_ENVIRONMENT ? 'ready' : this.manager.state(env);
    this.item.text = `$(remote) ${env}`;
    this.item.tooltip = `Exec Server: working in ${env} (${state}). Click: Connect to Host…, Open Remote Folder…`;
    this.item.backgroundColor = state === 'failed' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.item.dispose();
  }
}
