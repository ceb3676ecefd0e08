// Every command of the extension. Each accepts an optional args object (the e2e harness and
// other extensions call them programmatically); without args it asks with pickers/inputs.
// Tree nodes are valid args too ({environment} / {environment, key}).
import * as os from 'node:os';
import * as vscode from 'vscode';
import { codexEnvironmentEntry, type AgentEndpointService } from './agent';
import type { EnvironmentManager } from './core/environment-manager';
import { LOCAL_ENVIRONMENT, type AddEnvironmentInput, type EnvironmentStore } from './core/environment-store';
import type { ProcessRegistry, TrackedProcess } from './core/process-registry';
import { askForEnvironment, freshAnswers, testConnection } from './add-environment';
import type { ExecClient } from '../client/api';
import type { EnvironmentConfig } from './core/environment-store';
import { connectWithProgress, wasReported } from './environments';
import { browseFolder, openFolder, pickStart, pickWhere, startFolder, type OpenWhere } from './open-remote-folder';
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
  /** A throw-away connection with unsaved settings (Add Environment's connection test). */
  testConnect(config: EnvironmentConfig, token: string | undefined): Promise<ExecClient>;
}

/**
 * Invoked by the user (palette, menu, view, walkthrough link) rather than by code: no args,
 * or a tree node. Such calls report their errors once themselves and resolve with undefined;
 * VS Code would otherwise add its own "Error running command" toast to ours.
 */
function interactive(raw: unknown): boolean {
  return raw === undefined || raw === null || (typeof raw === 'object' && !(raw instanceof vscode.Uri) && typeof (raw as { type?: unknown }).type === 'string');
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
    ctx.subscriptions.push(
      vscode.commands.registerCommand(id, async (raw: unknown) => {
        try {
          return await f(asArgs(raw), raw);
        } catch (e) {
          if (!interactive(raw)) throw e; // programmatic callers handle their own failures
          const msg = e instanceof Error ? e.message : String(e);
          s.log.error(`${id}: ${msg}`);
          if (!wasReported(e)) void vscode.window.showErrorMessage(msg.startsWith('Exec Server:') ? msg : `Exec Server: ${msg}`);
          return undefined;
        }
      }),
    );

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

  const addDeps = { store: s.store, connect: (c: EnvironmentConfig, t: string | undefined) => s.testConnect(c, t), log: s.log };

  async function save(input: AddEnvironmentInput) {
    const config = await s.store.add(input); // validates first: bad input changes nothing
    // Replacing an entry: drop the live connection so the next use takes the new settings.
    await s.manager.disconnect(config.name);
    s.settingsWritten();
    s.log.info(`environment ${config.name} saved (${config.kind})`);
    s.refresh();
    return { name: config.name, kind: config.kind };
  }

  reg('execServer.addEnvironment', async (args) => {
    if (args && str(args, 'name')) {
      const input = { name: str(args, 'name')!, url: str(args, 'url'), token: str(args, 'token'), command: str(args, 'command'), args: strArray(args, 'args') };
      // A command environment runs its command on this machine at connect time: when another
      // extension supplies it (args), it passes the approval gate like any programmatic command line.
      if (input.command) await s.approve(LOCAL_ENVIRONMENT, [input.command, ...(input.args ?? [])], os.homedir());
      return save(input);
    }
    const answers = freshAnswers();
    for (;;) {
      const input = await askForEnvironment(addDeps, answers);
      if (!input) {
        s.log.info('Add Environment: cancelled, nothing saved');
        return undefined;
      }
      const problem = await testConnection(addDeps, input);
      if (problem) {
        s.log.warn(`Add Environment: connection test of ${input.name} failed: ${problem}`);
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
          s.log.info('Add Environment: cancelled after the failed connection test, nothing saved');
          return undefined;
        }
      }
      const saved = await save(input);
      void vscode.window.showInformationMessage(`Exec Server: environment ${saved.name} saved${problem ? ' (not reachable yet)' : ' — connection tested'}.`, 'New Terminal', 'Open Remote Folder').then((c) => {
        if (c === 'New Terminal') void vscode.commands.executeCommand('execServer.newTerminal', { environment: saved.name });
        if (c === 'Open Remote Folder') void vscode.commands.executeCommand('execServer.openRemoteFolder', { environment: saved.name });
      });
      return saved;
    }
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

  const folderDeps = {
    globalState: ctx.globalState,
    environments: () => s.store.list().map((e) => ({ name: e.name, state: s.manager.state(e.name) })),
    clientFor,
    log: s.log,
  };

  // Args: {environment, path, newWindow?}: opens without asking (adds to this window unless
  // newWindow); {environment} alone browses that environment.
  reg('execServer.openRemoteFolder', async (args) => {
    const named = str(args, 'environment') ? known(str(args, 'environment')!) : undefined;
    let env: string;
    let folder = str(args, 'path');
    if (folder && named) env = named;
    else {
      const start = await pickStart(folderDeps, named);
      if (!start) return undefined;
      if (start.kind === 'recent') {
        env = start.folder.environment;
        folder = start.folder.path;
      } else {
        env = start.environment;
        const client = await clientFor(env);
        folder = await browseFolder(env, client, await startFolder(client));
        if (!folder) return undefined;
      }
    }
    if (!folder.startsWith('/')) throw new Error(`Exec Server: "${folder}" is not an absolute path`);
    const client = await clientFor(env);
    const meta = await client.fs.stat(folder).catch((e: Error) => {
      throw new Error(`Exec Server: cannot open ${folder} in ${env}: ${e.message}`);
    });
    if (!meta.isDirectory) throw new Error(`Exec Server: ${folder} in ${env} is not a folder`);
    let where: OpenWhere | undefined;
    if (str(args, 'path')) where = args?.newWindow === true ? 'newWindow' : 'addToWorkspace';
    else where = await pickWhere(`${folder} (${env})`);
    if (!where) return undefined;
    const uri = await openFolder(folderDeps, env, folder, where, !str(args, 'path'));
    return uri?.toString();
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

  // A process row's click: the terminal that shows it (PTY terminals and Run Command).
  reg('execServer.process.reveal', async (args) => {
    const p = await pickProcess(args, 'show');
    if (!p) return false;
    const terminal = vscode.window.terminals.find((t) => {
      const pty = (t.creationOptions as vscode.ExtensionTerminalOptions).pty as { processHandle?: unknown } | undefined;
      return t.exitStatus === undefined && pty?.processHandle === p.handle;
    });
    if (!terminal) {
      void vscode.window.showInformationMessage(`Exec Server: ${p.label} (${p.origin}) has no terminal in this window`);
      return false;
    }
    terminal.show();
    return true;
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
