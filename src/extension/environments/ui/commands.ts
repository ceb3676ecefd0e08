// Environment commands: connect, disconnect, add (quick input with a connection test, or
// args from another extension) and remove.
import * as os from 'node:os';
import * as vscode from 'vscode';
import { askForEnvironment, freshAnswers, testConnection } from './add';
import type { ExecClient } from '../../../client/api';
import type { CommandContext } from './command-context';
import { offerNextSteps, str, strArray } from '../../common/ui';
import { LOCAL_ENVIRONMENT, type AddEnvironmentInput, type EnvironmentConfig } from '../store';

export interface EnvironmentCommandDeps extends CommandContext {
  /** Redraws the views after the list of environments changed. */
  refresh(): void;
  /** The approval gate for command lines given programmatically (Add Environment's command). */
  approve(environment: string, argv: string[], cwd: string): Promise<void>;
  /** A throw-away connection with unsaved settings (Add Environment's connection test). */
  testConnect(config: EnvironmentConfig, token: string | undefined): Promise<ExecClient>;
  /** The environment's processes are gone (disconnected or removed): forget them. */
  forgetProcesses(environment: string): void;
}

export function registerEnvironmentCommands(d: EnvironmentCommandDeps): void {
  d.register('execServer.connect', async (args) => {
    const env = str(args, 'environment') ? d.known(str(args, 'environment')!) : await d.pickEnvironment('Environment to connect');
    if (!env) return undefined;
    const client = await d.clientFor(env);
    return { environment: env, sessionId: client.sessionId };
  });

  d.register('execServer.disconnect', async (args) => {
    const env = str(args, 'environment') ?? (await d.pickEnvironment('Environment to disconnect', (n) => d.manager.state(n) !== 'disconnected'));
    if (!env) return false;
    const was = await d.manager.disconnect(env);
    d.forgetProcesses(env);
    d.log.info(`${env}: disconnected`);
    return was;
  });

  const addDeps = { store: d.store, connect: (c: EnvironmentConfig, t: string | undefined) => d.testConnect(c, t), log: d.log };

  async function save(input: AddEnvironmentInput) {
    const config = await d.store.add(input); // validates first: bad input changes nothing
    // Replacing an entry: drop the live connection so the next use takes the new settings.
    await d.manager.disconnect(config.name);
    d.log.info(`environment ${config.name} saved (${config.kind})`);
    d.refresh();
    return { name: config.name, kind: config.kind };
  }

  d.register('execServer.addEnvironment', async (args) => {
    if (args && str(args, 'name')) {
      const input = { name: str(args, 'name')!, url: str(args, 'url'), token: str(args, 'token'), command: str(args, 'command'), args: strArray(args, 'args') };
      // A command environment runs its command on this machine at connect time: when another
      // extension supplies it (args), it passes the approval gate like any programmatic command line.
      if (input.command) await d.approve(LOCAL_ENVIRONMENT, [input.command, ...(input.args ?? [])], os.homedir());
      return save(input);
    }
    const answers = freshAnswers();
    for (;;) {
      const input = await askForEnvironment(addDeps, answers);
      if (!input) {
        d.log.info('Add Environment: cancelled, nothing saved');
        return undefined;
      }
      const problem = await testConnection(addDeps, input);
      if (problem) {
        d.log.warn(`Add Environment: connection test of ${input.name} failed: ${problem}`);
        const choice = await vscode.window.showErrorMessage(
          `Exec Server: could not connect to ${input.name}: ${problem}`,
          { modal: true, detail: 'Edit the settings, or save them anyway (e.g. the server is not running yet).' },
          'Edit',
          'Save Anyway',
        );
        if (choice === 'Edit') {
          answers.step = 2;
          continue;
        }
        if (choice !== 'Save Anyway') {
          d.log.info('Add Environment: cancelled after the failed connection test, nothing saved');
          return undefined;
        }
      }
      const saved = await save(input);
      offerNextSteps(`Exec Server: environment ${saved.name} saved${problem ? ' (not reachable yet)' : ' — connection tested'}.`, saved.name);
      return saved;
    }
  });

  d.register('execServer.removeEnvironment', async (args) => {
    const env = str(args, 'name') ?? str(args, 'environment') ?? (await d.pickEnvironment('Environment to remove', (n) => n !== LOCAL_ENVIRONMENT));
    if (!env) return false;
    await d.manager.disconnect(env);
    d.forgetProcesses(env);
    const removed = await d.store.remove(env);
    if (!removed) throw new Error(`Exec Server: unknown environment "${env}"`);
    d.refresh();
    return true;
  });
}
