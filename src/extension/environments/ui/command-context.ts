// What every feature's commands share: registering a handler of the command table and turning
// "no argument" into a question about the environment (which one, connected with progress).
// Each feature's register function takes this plus its own services (agent/ui/commands.ts,
// terminals/ui/run-commands.ts, …); the activation (src/extension/ui/commands.ts) builds it once.
import * as vscode from 'vscode';
import type { ExecClient } from '../../../client/api';
import { noIcons } from '../../common';
import type { CommandId } from '../../common/ui';
import { registerCommand, str, type Args, type CommandHandler } from '../../common/ui';
import type { EnvironmentManager } from '../manager';
import { LOCAL_ENVIRONMENT, type EnvironmentStore } from '../store';
import { connectWithProgress } from './connect';

export interface CommandContext {
  ctx: vscode.ExtensionContext;
  log: vscode.LogOutputChannel;
  store: EnvironmentStore;
  manager: EnvironmentManager;
  /** registerCommand for this extension (ctx, log bound). */
  register<K extends CommandId>(id: K, handler: CommandHandler<K>): void;
  /** The name if it is a configured environment, else an error naming it. */
  known(name: string): string;
  /** A picker over the environments passing filter (the only one without asking). */
  pickEnvironment(placeHolder: string, filter?: (name: string) => boolean): Promise<string | undefined>;
  /** args.environment if given (validated), Local when other args are given, else a picker. */
  environmentOf(args: Args, placeHolder: string): Promise<string | undefined>;
  /** The environment's client, connecting with progress and a reported error. */
  clientFor(environment: string): Promise<ExecClient>;
}

export function createCommandContext(ctx: vscode.ExtensionContext, s: { store: EnvironmentStore; manager: EnvironmentManager; log: vscode.LogOutputChannel }): CommandContext {
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

  return {
    ctx,
    log: s.log,
    store: s.store,
    manager: s.manager,
    register: (id, handler) => registerCommand(ctx, s.log, id, handler),
    known,
    pickEnvironment,
    environmentOf,
    clientFor: (env) => connectWithProgress(s.manager, env, s.log),
  };
}
