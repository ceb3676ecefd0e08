// The extension's command table: every command id with its palette entry (title, icon,
// enablement) and, in CommandSignatures, the argument object and result that programmatic
// callers see. package.json's contributes.commands must equal COMMANDS (checked by
// test/extension/common/ui/command-ids.package.test.ts in plain Node, so this file imports nothing from 'vscode' at
// runtime); handlers are registered by id through ./command-registry.ts. Adding a command:
// docs/extension.md#adding-a-command.
import type * as vscode from 'vscode';

/** One `contributes.commands` entry (its category is always "Exec Server"). */
export interface CommandContribution {
  title: string;
  icon: string;
  /** A when-clause; the command is disabled in the palette while it is false. */
  enablement?: string;
}

export const COMMAND_CATEGORY = 'Exec Server';

/** The Exec Server view (contributes.views.execServer) and the terminal profile (contributes.terminal.profiles). */
export const ENVIRONMENTS_VIEW = 'execServer.environments';
export const TERMINAL_PROFILE = 'execServer.terminalProfile';
/** The Remote Search view (contributes.views.execServer): Find in Files rows for exec-server folders (./search.ts). */
export const SEARCH_RESULTS_VIEW = 'execServer.searchResults';

export const COMMANDS = {
  'execServer.connect': { title: 'Connect to Environment', icon: '$(plug)' },
  'execServer.disconnect': { title: 'Disconnect Environment', icon: '$(debug-disconnect)' },
  'execServer.addEnvironment': { title: 'Add Environment', icon: '$(add)' },
  'execServer.removeEnvironment': { title: 'Remove Environment', icon: '$(trash)' },
  'execServer.newTerminal': { title: 'New Terminal', icon: '$(terminal)' },
  'execServer.runCommand': { title: 'Run Command', icon: '$(play)' },
  'execServer.openRemoteFolder': { title: 'Open Remote Folder', icon: '$(folder-opened)' },
  'execServer.revealInExplorer': { title: 'Reveal in Explorer', icon: '$(go-to-file)' },
  'execServer.showProcesses': { title: 'Show Processes', icon: '$(list-tree)' },
  'execServer.showLog': { title: 'Show Log', icon: '$(output)' },
  'execServer.showRequestStatistics': { title: 'Show Request Statistics', icon: '$(graph)' },
  'execServer.startAgentEndpoint': { title: 'Start Agent Endpoint', icon: '$(broadcast)', enablement: 'isWorkspaceTrusted' },
  'execServer.stopAgentEndpoint': { title: 'Stop Agent Endpoint', icon: '$(circle-slash)' },
  'execServer.copyEndpointToken': { title: 'Copy Codex Environment Entry (with Agent Endpoint Token)', icon: '$(key)' },
  'execServer.showAgentAudit': { title: 'Show Agent Audit Log (JSON Lines)', icon: '$(checklist)' },
  'execServer.process.interrupt': { title: 'Interrupt Process', icon: '$(debug-pause)' },
  'execServer.process.terminate': { title: 'Terminate Process', icon: '$(stop-circle)' },
  'execServer.process.reveal': { title: 'Show Process Terminal', icon: '$(terminal)' },
  'execServer.findInFiles': { title: 'Find in Files (Remote Folder)', icon: '$(search)' },
  'execServer.goToFile': { title: 'Go to File (Remote Folder)', icon: '$(go-to-file)' },
  'execServer.clearSearchResults': { title: 'Clear Remote Search Results', icon: '$(clear-all)' },
  'execServer.connectToHost': { title: 'Connect to Host…', icon: '$(remote)' },
  'execServer.connectToContainer': { title: 'Connect to Container…', icon: '$(package)' },
} as const satisfies Record<`execServer.${string}`, CommandContribution>;

export type CommandId = keyof typeof COMMANDS;

/** A process row of the Exec Server view (the process commands' argument). */
export interface ProcessNodeArgs {
  key?: string;
}

/**
 * What each command accepts and resolves with when called through
 * vscode.commands.executeCommand. Every argument is optional (without it the command asks
 * with pickers and inputs) and arrives unchecked: handlers read it through the readers of
 * ./command-registry.ts. Commands invoked by the user resolve with undefined on failure
 * (they show the error themselves).
 */
export interface CommandSignatures {
  'execServer.connect': { args: { environment?: string }; result: { environment: string; sessionId: string } | undefined };
  'execServer.disconnect': { args: { environment?: string }; result: boolean };
  'execServer.addEnvironment': {
    args: { name: string; url?: string; token?: string; command?: string; args?: string[] };
    result: { name: string; kind: string } | undefined;
  };
  'execServer.removeEnvironment': { args: { name?: string; environment?: string }; result: boolean };
  'execServer.newTerminal': { args: { environment?: string; cwd?: string; argv?: string[]; name?: string; fromWorkspaceFolder?: boolean }; result: vscode.Terminal | undefined };
  'execServer.runCommand': { args: { environment?: string; command?: string; argv?: string[]; cwd?: string }; result: { exitCode: number } | undefined };
  'execServer.openRemoteFolder': { args: { environment?: string; path?: string; newWindow?: boolean }; result: string | undefined };
  'execServer.revealInExplorer': { args: { environment?: string; path?: string } | vscode.Uri; result: boolean };
  'execServer.showProcesses': { args: undefined; result: { environment: string; processId: string; label: string; origin: string }[] };
  'execServer.showLog': { args: undefined; result: void };
  'execServer.showRequestStatistics': { args: undefined; result: void };
  /** Without `environment` (and no other argument): a picker of Local and the connected environments; other arguments only: Local. A remote environment's endpoint relays to its server. */
  'execServer.startAgentEndpoint': { args: { quiet?: boolean; environment?: string }; result: { url: string; token: string } | undefined };
  /** Without `environment`: every endpoint. */
  'execServer.stopAgentEndpoint': { args: { environment?: string }; result: boolean };
  /** The Codex entries of every running endpoint; `tokenOnly`: one endpoint's token (Local's unless `environment`). */
  'execServer.copyEndpointToken': { args: { tokenOnly?: boolean; environment?: string }; result: boolean };
  /** Every running endpoint's gate decisions, oldest first, one JSON object a line; resolves with that text. */
  'execServer.showAgentAudit': { args: undefined; result: string };
  'execServer.process.interrupt': { args: ProcessNodeArgs; result: boolean };
  'execServer.process.terminate': { args: ProcessNodeArgs; result: boolean };
  'execServer.process.reveal': { args: ProcessNodeArgs; result: boolean };
  /** Without `query`: an input box; without `folder` (an exec-server: URI string, or the Explorer's folder URI): every exec-server workspace folder. */
  'execServer.findInFiles': {
    args: { query?: string; folder?: string; isRegex?: boolean; caseSensitive?: boolean; wholeWord?: boolean; include?: string[]; maxResults?: number } | vscode.Uri;
    result:
      | {
          summary: string;
          tool?: 'rg' | 'grep';
          matches: number;
          files: number;
          notShown: number;
          cancelled: boolean;
          failure?: string;
          /** The rows may be incomplete (connection lost; Cancel not confirmed by the host). */
          incomplete?: string;
          /** The shown rows; column is 1-based. */
          rows: { uri: string; line: number; column: number; text: string }[];
        }
      | undefined;
  };
  /** A quick pick of the folder's files (prefilled with `query`); resolves with the opened file's URI. */
  'execServer.goToFile': { args: { folder?: string; query?: string } | vscode.Uri; result: string | undefined };
  'execServer.clearSearchResults': { args: undefined; result: boolean };
  /** Without `host`: a quick pick of the ssh config's hosts (or a typed user@host[:port]). `install`: install the CLI without asking when the host has no executor. */
  'execServer.connectToHost': {
    args: { host?: string; name?: string; install?: boolean; trustNewHostKey?: boolean };
    result: { environment: string; executor: 'exec-server' | 'installed' | 'codex'; installed: boolean } | undefined;
  };
  /**
   * Without args: a quick pick of the running containers (podman, docker) and pods (kubectl).
   * `cli` + `container` (podman/docker) or `cli: 'kubectl'` + `namespace`, `pod`, `container?`;
   * `install`: install the CLI without asking when the container has no executor.
   */
  'execServer.connectToContainer': {
    args: { cli?: 'podman' | 'docker' | 'kubectl'; container?: string; namespace?: string; pod?: string; name?: string; install?: boolean };
    result: { environment: string; executor: 'exec-server' | 'installed' | 'codex'; installed: boolean } | undefined;
  };
}

export type CommandArgs<K extends CommandId> = CommandSignatures[K]['args'];
export type CommandResult<K extends CommandId> = CommandSignatures[K]['result'];

// Compile-time check that the table and the signatures name the same commands.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const tableMatchesSignatures: Same<CommandId, keyof CommandSignatures> = true;
void tableMatchesSignatures;
