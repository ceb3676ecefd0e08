// The Exec Server view: environments with their state, and under each the processes this
// window started or watches (context menu: interrupt / terminate).
import * as vscode from 'vscode';
import type { EnvironmentManager, EnvironmentState } from './core/environment-manager';
import type { EnvironmentStore } from './core/environment-store';
import type { ProcessRegistry } from './core/process-registry';

/** Tree nodes double as command arguments: `{environment}` / `{environment, key}`. */
export interface EnvironmentNode {
  type: 'environment';
  environment: string;
}
export interface ProcessNode {
  type: 'process';
  environment: string;
  key: string;
}
export type Node = EnvironmentNode | ProcessNode;

const STATE_ICONS: Record<EnvironmentState, vscode.ThemeIcon> = {
  connected: new vscode.ThemeIcon('vm-active', new vscode.ThemeColor('testing.iconPassed')),
  connecting: new vscode.ThemeIcon('sync~spin'),
  reconnecting: new vscode.ThemeIcon('sync~spin'),
  disconnected: new vscode.ThemeIcon('vm-outline'),
  failed: new vscode.ThemeIcon('error', new vscode.ThemeColor('testing.iconFailed')),
};

export class ExecServerTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;

  constructor(
    private readonly store: EnvironmentStore,
    private readonly manager: EnvironmentManager,
    private readonly registry: ProcessRegistry,
  ) {}

  refresh(): void {
    this.changeEmitter.fire(undefined);
  }

  getChildren(node?: Node): Node[] {
    if (!node) return this.store.list().map((e) => ({ type: 'environment', environment: e.name }));
    if (node.type === 'environment') {
      return this.registry.list(node.environment).map((p) => ({ type: 'process', environment: node.environment, key: p.key }));
    }
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.type === 'environment') {
      const config = this.store.get(node.environment);
      const state = this.manager.state(node.environment);
      const hasProcesses = this.registry.list(node.environment).length > 0;
      const item = new vscode.TreeItem(node.environment, hasProcesses ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
      item.id = `env:${node.environment}`;
      item.description = state;
      item.iconPath = STATE_ICONS[state];
      const where = config?.kind === 'websocket' ? config.url : config?.kind === 'command' ? [config.command, ...(config.args ?? [])].join(' ') : 'in-process server';
      const err = state === 'failed' ? `\n${this.manager.lastError(node.environment) ?? ''}` : '';
      item.tooltip = `${node.environment} (${config?.kind ?? 'unknown'}): ${where}${err}`;
      const live = state === 'connected' || state === 'reconnecting';
      item.contextValue = `environment.${live ? 'connected' : 'disconnected'}${config?.kind === 'local' ? '.local' : ''}`;
      return item;
    }
    const p = this.registry.get(node.key);
    const item = new vscode.TreeItem(p?.label ?? 'process', vscode.TreeItemCollapsibleState.None);
    item.id = `proc:${node.key}`;
    item.description = p ? `${p.origin} · ${p.handle.exitCode === undefined ? 'running' : `exited ${p.handle.exitCode}`}` : '';
    item.tooltip = p ? `${p.label}\nprocess id ${p.handle.processId} in ${p.environment}\nstarted ${new Date(p.startedAt).toLocaleTimeString()}` : undefined;
    item.iconPath = new vscode.ThemeIcon(p?.origin === 'agent' ? 'hubot' : p?.origin === 'command' ? 'play' : 'terminal');
    item.contextValue = 'process';
    return item;
  }

  dispose(): void {
    this.changeEmitter.dispose();
  }
}
