// What the command areas (./commands-*.ts) share: the services they act on and the pickers
// that turn "no argument" into a question (which environment, which process).
import * as vscode from 'vscode';
import type { ExecClient } from '../../client/api';
import type { AgentEndpointService } from '../agent/ui/endpoint-service';
import type { CommandId } from '../common/ui/command-ids';
import { registerCommand, str, type Args, type CommandHandler } from '../common/ui/command-registry';
import type { EnvironmentManager } from '../environments/manager';
import { LOCAL_ENVIRONMENT, type EnvironmentConfig, type EnvironmentStore } from '../environments/store';
import type { ProcessRegistry, TrackedProcess } from '../terminals/process-registry';
import { noIcons } from '../common/notification-text';
import { connectWithProgress } from '../environments/ui/connect';
import type { TerminalService } from '../terminals/ui/terminal-service';

export interface CommandServices {
  store: EnvironmentStore;
  manager: EnvironmentManager;
  registry: ProcessRegistry;
  terminals: TerminalService;
  agent: AgentEndpointService;
  log: vscode.LogOutputChannel;
  refresh(): void;
  /** The approval gate for command lines given programmatically (like the API's run). */
  approve(environment: string, argv: string[], cwd: string): Promise<void>;
  /** Shows per-environment request statistics (./telemetry.ts). */
  showRequestStatistics(): void;
  /** A throw-away connection with unsaved settings (Add Environment's connection test). */
  testConnect(config: EnvironmentConfig, token: string | undefined): Promise<ExecClient>;
}

export interface CommandDeps extends CommandServices {
  ctx: vscode.ExtensionContext;
  /** registerCommand for this extension (ctx, log bound). */
  register<K extends CommandId>(id: K, handler: CommandHandler<K>): void;
  /** The name if it is a configured environment, else an error naming it. */
  known(name: string): string;
  /** A picker over the environments passing filter (the only one without asking). */
  pickEnvironment(placeHolder: string, filter?: (name: string) => boolean): Promise<string | undefined>;
  /** args.environment if given (validated), Local when other args are given, else a picker. */
  environmentOf(args: Args, placeHolder: string): Promise<string | undefined>;
  /** args.key's process, else a picker over the running ones. */
  pickProcess(args: Args, action: string): Promise<TrackedProcess | undefined>;
  /** The environment's client, connecting with progress and a reported error. */
  clientFor(environment: string): Promise<ExecClient>;
}

export function createCommandDeps(ctx: vscode.ExtensionContext, s: CommandServices): CommandDeps {
  const known = (name: string) => {
    if (!s.store.get(name)) throw new Error(`Exec Server: unknown environment "${name}"`);
    return name;
  };

  async function pickEnvironment(placeHolder: string, filter: (name: string) => boolean = () => true): Promise<string | undefined> {
    const envs = s.store.list().filter((e) => filter(e.name));
    if (envs.length === 0) {
      void vscode.window.showInformationMessage('Exec Server: no matching environment');
      return undefined;
    }
    if (envs.length === 1) return envs[0].name;
    const pick = await vscode.window.showQuickPick(
      envs.map((e) => ({ label: noIcons(e.name), description: `${e.kind} · ${s.manager.state(e.name)}`, detail: noIcons(e.url ?? e.command ?? ''), name: e.name })),
      { placeHolder },
    );
    return pick?.name;
  }

  async function environmentOf(args: Args, placeHolder: string): Promise<string | undefined> {
    const named = str(args, 'environment');
    if (named) return known(named);
    if (args) return LOCAL_ENVIRONMENT;
    return pickEnvironment(placeHolder);
  }

  async function pickProcess(args: Args, action: string): Promise<TrackedProcess | undefined> {
    const key = str(args, 'key');
    if (key) return s.registry.get(key);
    // A label holds an agent's argv: `$(icon)` in it is shown as typed, not as an icon.
    const items = s.registry.list().map((p) => ({ label: noIcons(p.label), description: noIcons(`${p.environment} · ${p.origin}`), p }));
    if (!items.length) {
      void vscode.window.showInformationMessage('Exec Server: no running processes');
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { placeHolder: `Process to ${action}` }))?.p;
  }

  return {
    ...s,
    ctx,
    register: (id, handler) => registerCommand(ctx, s.log, id, handler),
    known,
    pickEnvironment,
    environmentOf,
    pickProcess,
    clientFor: (env) => connectWithProgress(s.manager, env, s.log),
  };
}
