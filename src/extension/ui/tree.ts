// The Exec Server view: environments with their state (Local reads "ready": it needs no
// connection), under each the processes this window started or watches (click: reveal its
// terminal; context menu: interrupt / terminate), and the agent endpoint with Start/Stop.
import * as vscode from 'vscode';
import type { EnvironmentManager, EnvironmentState } from '../environments';
import type { CommandId } from '../common/ui';
import type { EnvironmentStore } from '../environments';
import type { ProcessRegistry } from '../terminals';
import { shownState } from '../environments';

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
export interface EndpointNode {
  type: 'endpoint';
}
export type Node = EnvironmentNode | ProcessNode | EndpointNode;

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
    /** The agent endpoint's URL while it runs. */
    private readonly endpointUrl: () => string | undefined,
  ) {}

  refresh(): void {
    this.changeEmitter.fire(undefined);
  }

  getChildren(node?: Node): Node[] {
    if (!node) return [...this.store.list().map((e): Node => ({ type: 'environment', environment: e.name })), { type: 'endpoint' }];
    if (node.type === 'environment') {
      return this.registry.list(node.environment).map((p) => ({ type: 'process', environment: node.environment, key: p.key }));
    }
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.type === 'endpoint') {
      const url = this.endpointUrl();
      const item = new vscode.TreeItem('Agent endpoint', vscode.TreeItemCollapsibleState.None);
      item.id = 'endpoint';
      item.description = url ?? 'stopped';
      item.iconPath = new vscode.ThemeIcon('broadcast', url ? new vscode.ThemeColor('testing.iconPassed') : undefined);
      item.tooltip = url
        ? `Agent endpoint on ${url}: agents (e.g. Codex) use this window's Local environment through it, behind the approval gate.`
        : 'Agent endpoint: stopped. Start it to let an agent (e.g. Codex) run commands here, behind the approval gate.';
      item.contextValue = url ? 'endpoint.running' : 'endpoint.stopped';
      return item;
    }
    if (node.type === 'environment') {
      const config = this.store.get(node.environment);
      const raw = this.manager.state(node.environment);
      const state = shownState(config?.kind, raw);
      const hasProcesses = this.registry.list(node.environment).length > 0;
      const item = new vscode.TreeItem(node.environment, hasProcesses ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
      // The id changes when the first process appears: VS Code keeps the collapsible state of a
      // known id, so an environment first drawn without children would never show its processes.
      item.id = `env:${node.environment}${hasProcesses ? ':processes' : ''}`;
      item.description = state;
      item.iconPath = state === 'ready' ? STATE_ICONS.connected : STATE_ICONS[state];
      const where = config?.kind === 'websocket' ? config.url : config?.kind === 'command' ? [config.command, ...(config.args ?? [])].join(' ') : 'in-process server';
      const err = state === 'failed' ? `\n${this.manager.lastError(node.environment) ?? ''}` : '';
      item.tooltip = `${node.environment} (${config?.kind ?? 'unknown'}): ${where}${err}`;
      const live = raw === 'connected' || raw === 'reconnecting';
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
    item.command = { command: 'execServer.process.reveal' satisfies CommandId, title: 'Show Terminal', arguments: [node] };
    return item;
  }

  dispose(): void {
    this.changeEmitter.dispose();
  }
}
