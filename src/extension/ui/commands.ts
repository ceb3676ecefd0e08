// Every command of the extension, registered by feature. The ids, palette entries and argument
// types are in common/ui/command-ids.ts (package.json must match it); each feature's register
// function takes the shared CommandContext (environments/ui/command-context.ts: register,
// environment pickers) plus the services it acts on, nothing more. Each command accepts an
// optional args object (the e2e harness and other extensions call them programmatically);
// without args it asks with pickers/inputs. Tree nodes are valid args too ({environment} /
// {environment, key}).
import type * as vscode from 'vscode';
import type { ExecClient } from '../../client/api';
import { registerAgentCommands } from '../agent/ui';
import type { AgentEndpointService } from '../agent/ui';
import type { EnvironmentManager } from '../environments';
import type { EnvironmentConfig, EnvironmentStore } from '../environments';
import { createCommandContext } from '../environments/ui';
import { registerEnvironmentCommands } from '../environments/ui';
import { registerFolderCommands } from '../files/ui';
import { registerSearchCommands } from '../search/ui';
import type { ProcessRegistry } from '../terminals';
import { registerProcessCommands } from '../terminals/ui';
import { registerRunCommands } from '../terminals/ui';
import type { TerminalService } from '../terminals/ui';

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
  /** Shows per-environment request statistics (common/ui/telemetry.ts). */
  showRequestStatistics(): void;
  /** A throw-away connection with unsaved settings (Add Environment's connection test). */
  testConnect(config: EnvironmentConfig, token: string | undefined): Promise<ExecClient>;
}

export function registerCommands(ctx: vscode.ExtensionContext, s: CommandServices): void {
  const c = createCommandContext(ctx, s);
  registerEnvironmentCommands({ ...c, refresh: s.refresh, approve: s.approve, testConnect: s.testConnect, forgetProcesses: (env) => s.registry.forgetEnvironment(env) });
  registerRunCommands({ ...c, terminals: s.terminals, approve: s.approve });
  registerFolderCommands(c);
  registerProcessCommands({ register: c.register, log: c.log, registry: s.registry, showRequestStatistics: s.showRequestStatistics });
  registerAgentCommands({ register: c.register, pickEnvironment: c.pickEnvironment, connected: (e) => c.manager.state(e) === 'connected', agent: s.agent });
  registerSearchCommands(c);
}
