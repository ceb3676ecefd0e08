// Commands that start processes in an environment: New Terminal (a PTY shell or argv) and
// Run Command (a pipe process with its output in a terminal).
import * as vscode from 'vscode';
import type { CommandContext } from '../../environments/ui';
import type { TerminalService } from './terminal-service';
import { str, strArray } from '../../common/ui';

export interface RunCommandDeps extends CommandContext {
  terminals: TerminalService;
  /** The approval gate for command lines given programmatically (like the API's run). */
  approve(environment: string, argv: string[], cwd: string): Promise<void>;
}

export function registerRunCommands(d: RunCommandDeps): void {
  d.register('execServer.newTerminal', async (args) => {
    const env = await d.environmentOf(args, 'Environment for the terminal');
    if (!env) return undefined;
    await d.clientFor(env);
    const argv = strArray(args, 'argv');
    return d.terminals.newTerminal(env, {
      cwd: str(args, 'cwd'),
      argv,
      name: str(args, 'name'),
      // A caller-chosen program passes the approval gate; the plain shell is the user's own.
      approve: argv?.length ? (a, cwd) => d.approve(env, a, cwd) : undefined,
    });
  });

  d.register('execServer.runCommand', async (args) => {
    const env = await d.environmentOf(args, 'Environment to run in');
    if (!env) return undefined;
    let command = str(args, 'command');
    const argv = strArray(args, 'argv');
    // A command line given by the caller (not typed by the user here) passes the approval gate.
    const programmatic = !!(command || argv);
    if (!command && !argv) {
      command = await vscode.window.showInputBox({ prompt: `Command to run in ${env}`, placeHolder: 'make test' });
      if (!command) return undefined;
    }
    await d.clientFor(env);
    return d.terminals.runCommand(env, { command, argv, cwd: str(args, 'cwd'), approve: programmatic ? (a, cwd) => d.approve(env, a, cwd) : undefined });
  });
}
