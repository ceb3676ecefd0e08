// Every command of the extension, registered by area. The ids, palette entries and argument
// types are in ./command-ids.ts (package.json must match it); each area file registers its
// handlers through CommandDeps.register. Each command accepts an optional args object (the
// e2e harness and other extensions call them programmatically); without args it asks with
// pickers/inputs. Tree nodes are valid args too ({environment} / {environment, key}).
import type * as vscode from 'vscode';
import { createCommandDeps, type CommandServices } from './command-deps';
import { registerAgentCommands } from './commands-agent';
import { registerEnvironmentCommands } from './commands-environments';
import { registerFolderCommands } from './commands-folders';
import { registerProcessCommands } from './commands-processes';
import { registerRunCommands } from './commands-run';
import { registerSearchCommands } from './search';

export type { CommandServices } from './command-deps';

export function registerCommands(ctx: vscode.ExtensionContext, s: CommandServices): void {
  const d = createCommandDeps(ctx, s);
  registerEnvironmentCommands(d);
  registerRunCommands(d);
  registerFolderCommands(d);
  registerProcessCommands(d);
  registerAgentCommands(d);
  registerSearchCommands(d);
}
