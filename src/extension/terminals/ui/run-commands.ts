// Commands that start processes in an environment: New Terminal (a PTY shell or argv) and
// Run Command (a pipe process with its output in a terminal).
import * as vscode from 'vscode';
import type { CommandContext } from '../../environments/ui';
import type { TerminalService } from './terminal-service';
import { str, strArray } from '../../common/ui';
import { SCHEME } from '../../common';

/**
 * In a remote window (every folder an exec-server: folder): the folder whose environment a
 * terminal opened without naming one belongs to (the profile in the '+' menu), else undefined.
 */
export function remoteWindowFolder(): vscode.WorkspaceFolder | undefined {
  const folders = vscode.workspace.workspaceFolders ?? [];
  return folders.length > 0 && folders.every((f) => f.uri.scheme === SCHEME) ? remoteWorkspaceFolder() : undefined;
}

/** The exec-server: workspace folder of the active editor, else the first one. */
function remoteWorkspaceFolder(): vscode.WorkspaceFolder | undefined {
  const active = vscode.window.activeTextEditor?.document.uri;
  const own = active ? vscode.workspace.getWorkspaceFolder(active) : undefined;
  if (own?.uri.scheme === SCHEME) return own;
  return (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.scheme === SCHEME);
}

/** A folder URI's authority is its environment's name (possibly lower-cased, as in the file system provider). */
function environmentOfAuthority(d: CommandContext, authority: string): string | undefined {
  return d.store.get(authority)?.name ?? d.store.list().find((e) => e.name.toLowerCase() === authority.toLowerCase())?.name;
}

export interface RunCommandDeps extends CommandContext {
  terminals: TerminalService;
  /** The approval gate for command lines given programmatically (like the API's run). */
  approve(environment: string, argv: string[], cwd: string): Promise<void>;
}

export function registerRunCommands(d: RunCommandDeps): void {
  d.register('execServer.newTerminal', async (args) => {
    // `fromWorkspaceFolder` (the remote window's Ctrl+` / Ctrl+Shift+`): the environment and path
    // of the active editor's exec-server folder, else of the first one.
    const folder = args && typeof args === 'object' && (args as Record<string, unknown>).fromWorkspaceFolder === true ? remoteWorkspaceFolder() : undefined;
    const env = folder ? environmentOfAuthority(d, folder.uri.authority) : await d.environmentOf(args, 'Environment for the terminal');
    if (!env) return undefined;
    await d.clientFor(env);
    const argv = strArray(args, 'argv');
    return d.terminals.newTerminal(env, {
      cwd: str(args, 'cwd') ?? folder?.uri.path,
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
