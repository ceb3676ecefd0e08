// Every command of the extension. Each accepts an optional args object (the e2e harness and
// other extensions call them programmatically); without args it asks with pickers/inputs.
// Tree nodes are valid args too ({environment} / {environment, key}).
import * as os from 'node:os';
import * as vscode from 'vscode';
import { codexEnvironmentEntry, type AgentEndpointService } from './agent';
import type { EnvironmentManager } from './core/environment-manager';
import { LOCAL_ENVIRONMENT, type EnvironmentStore } from './core/environment-store';
import type { ProcessRegistry, TrackedProcess } from './core/process-registry';
import { connectWithProgress } from './environments';
import { remoteUri } from './file-system-provider';
import { SCHEME, type TerminalService } from './terminals';

export interface CommandServices {
  store: EnvironmentStore;
  manager: EnvironmentManager;
  registry: ProcessRegistry;
  terminals: TerminalService;
  agent: AgentEndpointService;
  log: vscode.LogOutputChannel;
  refresh(): void;
  /** The commands changed the settings themselves (their connections are already handled). */
  settingsWritten(): void;
  /** The approval gate for command lines given programmatically (like the API's run). */
  approve(environment: string, argv: string[], cwd: string): Promise<void>;
  /** Shows per-environment request statistics (./telemetry.ts). */
  showRequestStatistics(): void;
}

type Args = Record<string, unknown> | undefined;

function asArgs(a: unknown): Args {
  return a && typeof a === 'object' && !(a instanceof vscode.Uri) ? (a as Record<string, unknown>) : undefined;
}
function str(a: Args, key: string): string | undefined {
  const v = a?.[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}
function strArray(a: Args, key: string): string[] | undefined {
  const v = a?.[key];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error(`"${key}" must be an array of strings`);
  return v as string[];
}

export function registerCommands(ctx: vscode.ExtensionContext, s: CommandServices): void {
  const reg = (id: string, f: (args: Args, raw: unknown) => unknown) =>
    ctx.subscriptions.push(vscode.commands.registerCommand(id, (raw: unknown) => f(asArgs(raw), raw)));

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
      envs.map((e) => ({ label: e.name, description: `${e.kind} · ${s.manager.state(e.name)}`, detail: e.url ?? e.command })),
      { placeHolder },
    );
    return pick?.label;
  }

  /** args.environment if given (validated), Local when other args are given, else a picker. */
  async function environmentOf(args: Args, placeHolder: string): Promise<string | undefined> {
    const named = str(args, 'environment');
    if (named) return known(named);
    if (args) return LOCAL_ENVIRONMENT;
    return pickEnvironment(placeHolder);
  }

  const clientFor = (env: string) => connectWithProgress(s.manager, env, s.log);

  reg('execServer.connect', async (args) => {
    const env = str(args, 'environment') ? known(str(args, 'environment')!) : await pickEnvironment('Environment to connect');
    if (!env) return undefined;
    const client = await clientFor(env);
    return { environment: env, sessionId: client.sessionId };
  });

  reg('execServer.disconnect', async (args) => {
    const env = str(args, 'environment') ?? (await pickEnvironment('Environment to disconnect', (n) => s.manager.state(n) !== 'disconnected'));
    if (!env) return false;
    const was = await s.manager.disconnect(env);
    s.registry.forgetEnvironment(env);
    s.log.info(`${env}: disconnected`);
    return was;
  });

  reg('execServer.addEnvironment', async (args) => {
    let input = args && str(args, 'name') ? { name: str(args, 'name')!, url: str(args, 'url'), token: str(args, 'token'), command: str(args, 'command'), args: strArray(args, 'args') } : undefined;
    if (!input) {
      const name = await vscode.window.showInputBox({ prompt: 'Name of the environment', placeHolder: 'devbox' });
      if (!name) return undefined;
      const where = await vscode.window.showInputBox({
        prompt: 'A websocket URL (ws://host:port) or a command that speaks the protocol on stdio',
        placeHolder: 'ws://127.0.0.1:8765   or   ssh devbox npx exec-server --listen stdio',
      });
      if (!where) return undefined;
      if (/^wss?:\/\//i.test(where.trim())) {
        const token = await vscode.window.showInputBox({ prompt: 'Connection token (optional; kept in SecretStorage)', password: true });
        input = { name, url: where.trim(), token: token || undefined, command: undefined, args: undefined };
      } else {
        const parts = where.trim().split(/\s+/);
        input = { name, url: undefined, token: undefined, command: parts[0], args: parts.slice(1) };
      }
    }
    // A command environment runs its command on this machine at connect time: when another
    // extension supplies it (args), it passes the approval gate like any programmatic command line.
    if (args && input.command) await s.approve(LOCAL_ENVIRONMENT, [input.command, ...(input.args ?? [])], os.homedir());
    const config = await s.store.add(input); // validates first: bad input changes nothing
    // Replacing an entry: drop the live connection so the next use takes the new settings.
    await s.manager.disconnect(config.name);
    s.settingsWritten();
    s.log.info(`environment ${config.name} saved (${config.kind})`);
    s.refresh();
    return { name: config.name, kind: config.kind };
  });

  reg('execServer.removeEnvironment', async (args) => {
    const env = str(args, 'name') ?? str(args, 'environment') ?? (await pickEnvironment('Environment to remove', (n) => n !== LOCAL_ENVIRONMENT));
    if (!env) return false;
    await s.manager.disconnect(env);
    s.registry.forgetEnvironment(env);
    const removed = await s.store.remove(env);
    s.settingsWritten();
    if (!removed) throw new Error(`Exec Server: unknown environment "${env}"`);
    s.refresh();
    return true;
  });

  reg('execServer.newTerminal', async (args) => {
    const env = await environmentOf(args, 'Environment for the terminal');
    if (!env) return undefined;
    await clientFor(env);
    const argv = strArray(args, 'argv');
    return s.terminals.newTerminal(env, {
      cwd: str(args, 'cwd'),
      argv,
      name: str(args, 'name'),
      // A caller-chosen program passes the approval gate; the plain shell is the user's own.
      approve: argv?.length ? (a, cwd) => s.approve(env, a, cwd) : undefined,
    });
  });

  reg('execServer.runCommand', async (args) => {
    const env = await environmentOf(args, 'Environment to run in');
    if (!env) return undefined;
    let command = str(args, 'command');
    const argv = strArray(args, 'argv');
    // A command line given by the caller (not typed by the user here) passes the approval gate.
    const programmatic = !!(command || argv);
    if (!command && !argv) {
      command = await vscode.window.showInputBox({ prompt: `Command to run in ${env}`, placeHolder: 'make test' });
      if (!command) return undefined;
    }
    await clientFor(env);
    return s.terminals.runCommand(env, { command, argv, cwd: str(args, 'cwd'), approve: programmatic ? (a, cwd) => s.approve(env, a, cwd) : undefined });
  });

  reg('execServer.openRemoteFolder', async (args) => {
    const env = str(args, 'environment') ? known(str(args, 'environment')!) : await pickEnvironment('Environment of the folder');
    if (!env) return undefined;
    const client = await clientFor(env);
    let folder = str(args, 'path');
    if (!folder) {
      folder = await vscode.window.showInputBox({ prompt: `Absolute folder path in ${env}`, value: await s.terminals.defaultCwd(env, client) });
      if (!folder) return undefined;
    }
    if (!folder.startsWith('/')) throw new Error(`Exec Server: "${folder}" is not an absolute path`);
    const meta = await client.fs.stat(folder).catch((e: Error) => {
      throw new Error(`Exec Server: cannot open ${folder} in ${env}: ${e.message}`);
    });
    if (!meta.isDirectory) throw new Error(`Exec Server: ${folder} in ${env} is not a folder`);
    const uri = remoteUri(env, folder);
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (!folders.some((f) => f.uri.toString() === uri.toString())) {
      const base = folder.replace(/\/+$/, '').split('/').pop() || '/';
      const ok = vscode.workspace.updateWorkspaceFolders(folders.length, 0, { uri, name: `${base} (${env})` });
      if (!ok) throw new Error('Exec Server: VS Code refused to add the workspace folder');
    }
    return uri.toString();
  });

  reg('execServer.revealInExplorer', async (args, raw) => {
    let uri: vscode.Uri | undefined = raw instanceof vscode.Uri ? raw : undefined;
    if (!uri && str(args, 'environment') && str(args, 'path')) uri = remoteUri(known(str(args, 'environment')!), str(args, 'path')!);
    uri ??= vscode.window.activeTextEditor?.document.uri;
    if (!uri || uri.scheme !== SCHEME) {
      void vscode.window.showInformationMessage('Exec Server: nothing to reveal (open a file of a remote folder first)');
      return false;
    }
    await vscode.commands.executeCommand('revealInExplorer', uri);
    return true;
  });

  async function pickProcess(args: Args, action: string): Promise<TrackedProcess | undefined> {
    const key = str(args, 'key');
    if (key) return s.registry.get(key);
    const items = s.registry.list().map((p) => ({ label: p.label, description: `${p.environment} · ${p.origin}`, p }));
    if (!items.length) {
      void vscode.window.showInformationMessage('Exec Server: no running processes');
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { placeHolder: `Process to ${action}` }))?.p;
  }

  reg('execServer.process.interrupt', async (args) => {
    const p = await pickProcess(args, 'interrupt');
    if (p) await p.handle.interrupt();
    return !!p;
  });
  reg('execServer.process.terminate', async (args) => {
    const p = await pickProcess(args, 'terminate');
    return p ? p.handle.terminate() : false;
  });

  reg('execServer.showProcesses', async () => {
    await vscode.commands.executeCommand('execServer.environments.focus');
    return s.registry.list().map((p) => ({ environment: p.environment, processId: p.handle.processId, label: p.label, origin: p.origin }));
  });

  reg('execServer.showLog', () => s.log.show());
  reg('execServer.showRequestStatistics', () => s.showRequestStatistics());

  reg('execServer.startAgentEndpoint', async (args) => {
    const r = await s.agent.start();
    if (!args?.quiet) {
      void vscode.window.showInformationMessage(`Exec Server: agent endpoint on ${r.url}`, 'Copy Codex Entry', 'Copy Token', 'Copy URL').then((c) => {
        if (c === 'Copy Codex Entry') void vscode.env.clipboard.writeText(codexEnvironmentEntry(r.url, r.token));
        if (c === 'Copy Token') void vscode.env.clipboard.writeText(r.token);
        if (c === 'Copy URL') void vscode.env.clipboard.writeText(r.url);
      });
    }
    return r;
  });
  reg('execServer.stopAgentEndpoint', () => s.agent.stop());
  // Codex 0.169 reads the token only from its environments.toml entry (auth_bearer_token), so
  // the whole entry is copied; {tokenOnly: true} copies the bare token.
  reg('execServer.copyEndpointToken', async (args) => {
    const r = s.agent.running;
    if (!r) {
      void vscode.window.showWarningMessage('Exec Server: the agent endpoint is not running (Exec Server: Start Agent Endpoint)');
      return false;
    }
    const tokenOnly = args?.tokenOnly === true;
    await vscode.env.clipboard.writeText(tokenOnly ? r.token : codexEnvironmentEntry(r.url, r.token));
    void vscode.window.showInformationMessage(
      tokenOnly
        ? `Exec Server: token of ${r.url} copied`
        : `Exec Server: Codex environments.toml entry for ${r.url} copied (it holds the token: paste it into $CODEX_HOME/environments.toml)`,
    );
    return true;
  });
}
