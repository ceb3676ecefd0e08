// Environments in the UI: the in-process Local server, lazy
// connects with progress, clear notifications on failures, and the status-bar item.
import * as vscode from 'vscode';
import { markReported } from '../../common';
import type { ExecClient } from '../../../client/api';
import type { CommandId } from '../../common/ui';
import { ExecServer } from '../../../server/exec-server';
import { EnvironmentConnectError, EnvironmentManager } from '../manager';
import { EnvironmentStore, LOCAL_ENVIRONMENT } from '../store';
import type { ServerTelemetry } from '../../../telemetry/api';
import { shownState, statusText } from '../status-text';
import { noLinks } from '../../common';

/** The in-process server behind `Local` (the agent endpoint runs its own); created on first use. */
export class LocalServerHolder implements vscode.Disposable {
  private server: ExecServer | undefined;
  constructor(
    private readonly log: vscode.LogOutputChannel,
    /** Server spans of the Local server (read when it is created). */
    private readonly telemetry?: () => ServerTelemetry,
  ) {}
  get(): ExecServer {
    this.server ??= new ExecServer({
      log: (level, message) => this.log[level](`[local server] ${message}`),
      telemetry: this.telemetry?.(),
    });
    return this.server;
  }
  async shutdown(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    await s?.shutdown();
  }
  dispose(): void {
    void this.shutdown();
  }
}

/** Connect with a progress notification and a clear error message (rethrown for callers, marked as reported). */
export async function connectWithProgress(manager: EnvironmentManager, name: string, log: vscode.LogOutputChannel): Promise<ExecClient> {
  const live = manager.connectedClient(name);
  if (live) return live;
  try {
    return await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Exec Server: connecting to ${name}…` },
      () => manager.getClient(name),
    );
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    log.error(msg);
    markReported(e);
    const hint = e instanceof EnvironmentConnectError && e.kind === 'unauthorized' ? 'Add Environment' : undefined;
    // noLinks: msg may quote the command's stderr (an ssh host's words); notifications make [x](command:…) a link.
    void vscode.window.showErrorMessage(`Exec Server: ${noLinks(msg)}`, ...(hint ? [hint, 'Show Log'] : ['Show Log'])).then((choice) => {
      if (choice === 'Show Log') log.show();
      if (choice === 'Add Environment') void vscode.commands.executeCommand('execServer.addEnvironment' satisfies CommandId);
    });
    throw e;
  }
}

/** Status bar: connected environments and the agent endpoint (its changes also refresh the view). */
export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('execServer.status', vscode.StatusBarAlignment.Left, 50);
  private endpointPort: number | undefined;
  private readonly endpointEmitter = new vscode.EventEmitter<number | undefined>();
  /** The agent endpoint started (its port) or stopped (undefined). */
  readonly onDidChangeEndpoint = this.endpointEmitter.event;

  constructor(
    private readonly store: EnvironmentStore,
    private readonly manager: EnvironmentManager,
  ) {
    this.item.name = 'Exec Server';
    this.item.command = 'execServer.showProcesses' satisfies CommandId;
    this.update();
    this.item.show();
  }

  setEndpoint(port: number | undefined): void {
    this.endpointPort = port;
    this.update();
    this.endpointEmitter.fire(port);
  }

  get endpoint(): number | undefined {
    return this.endpointPort;
  }

  update(): void {
    const envs = this.store.list().map((e) => ({ name: e.name, kind: e.kind, state: this.manager.state(e.name) }));
    this.item.text = statusText({ envs, endpointPort: this.endpointPort });
    const lines = envs.map(({ name, kind, state }) => {
      const error = state === 'failed' ? this.manager.lastError(name) : undefined;
      return `${name}: ${shownState(kind, state)}${error ? ` — ${error}` : ''}`;
    });
    lines.push(this.endpointPort !== undefined ? `Agent endpoint: ws://127.0.0.1:${this.endpointPort}` : 'Agent endpoint: stopped');
    this.item.tooltip = `Exec Server (click: the Exec Server view)\n${lines.join('\n')}`;
    this.item.backgroundColor = envs.some((e) => e.state === 'failed') ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  dispose(): void {
    this.endpointEmitter.dispose();
    this.item.dispose();
  }
}

export { LOCAL_ENVIRONMENT };
