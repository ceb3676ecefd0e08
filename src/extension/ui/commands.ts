// Every command of the extension, registered by area. The ids, palette entries and argument
// types are in ./command-ids.ts (package.json must match it); each area file registers its
// handlers through CommandDeps.register. Each command accepts an optional args object (the
// e2e harness and other extensions call them programmatically); without args it asks with
// pickers/inputs. Tree nodes are valid args too ({environment} / {environment, key}).
import type * as vscode from 'vscode';
import { createCommandDeps, type CommandServices } from './command-deps';
import { registerAgentCommands } from '../agent/ui/commands';
import { registerEnvironmentCommands } from '../environments/ui/commands';
import { registerFolderCommands } from '../files/ui/commands';
import { registerProcessCommands } from '../terminals/ui/process-commands';
import { registerRunCommands } from '../terminals/ui/run-commands';
import { registerSearchCommands } from '../search/ui/commands';

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
