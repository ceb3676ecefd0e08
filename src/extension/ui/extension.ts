// Entry point of the VS Code extension: wires the environments, terminals, file system,
// views, agent endpoint and commands, and returns the exported API (see ./api.ts).
import * as path from 'node:path';
import * as vscode from 'vscode';
import { AgentEndpointService, vscodeAgentGateHost, vscodeApprovalHost } from '../agent/ui';
import type { ExecServerApi } from './api';
import { ENVIRONMENTS_VIEW, TERMINAL_PROFILE } from '../common/ui';
import { registerCommands } from './commands';
import { registerCommand } from '../common/ui';
import { lazyAskpass, registerSshCommands } from '../ssh/ui';
import { ApprovalGate, environmentNetworkQuestions } from '../approval';
import { createConnector, EnvironmentManager } from '../environments';
import { EnvironmentStore, LOCAL_ENVIRONMENT, parseEnvironments, type EnvironmentSetting } from '../environments';
import { ProcessRegistry } from '../terminals';
import { connectWithProgress, LocalServerHolder, showReconnecting, StatusBar } from '../environments/ui';
import { ExecFileSystemProvider } from '../files/ui';
import { keepRemoteDefaultProfile, remoteWindowFolder, TerminalService } from '../terminals/ui';
import { SCHEME } from '../common';
import { TerminalRecords } from '../terminals';
import { isStdioFallback, persistentSshRoute, persistentSshSpec, sshRelayRoutes } from '../ssh';
import { createSettingsOwner } from '../common/ui';
import { ExecServerTree } from './tree';
import { registerRequestTelemetry } from '../common/ui';
import { DEFAULT_KEEP_SESSION_SEC, noLinks, type SettingsOwner } from '../common';
import { registerContainerCommands } from '../containers/ui';
import { containerRoute, restorableContainer } from '../containers';
import { localUnsupported } from '../environments';

let cleanup: (() => Promise<void>) | undefined;

export function activate(ctx: vscode.ExtensionContext): ExecServerApi {
  const log = vscode.window.createOutputChannel('Exec Server', { log: true });
  ctx.subscriptions.push(log);
  // Windows: Local cannot run yet; say so once, plainly (remote environments still work).
  const unsupported = localUnsupported();
  if (unsupported) {
    log.warn(unsupported);
    void vscode.window.showWarningMessage(`Exec Server: ${unsupported}`);
  }

  // Every setting through one owner, user scope only (./settings.ts); it refreshes itself on
  // configuration changes and after its own writes, and tells onDidChange listeners.
  const settings = createSettingsOwner(ctx);
  const store = createStore(ctx, settings, log);

  const { telemetry, showStatistics } = registerRequestTelemetry(ctx, settings, log);
  const local = new LocalServerHolder(log, () => telemetry.server());
  // ssh's password / passphrase / keyboard-interactive questions as input boxes (ssh/askpass.ts).
  const askpass = lazyAskpass(ctx, log);
  // execServer.ssh.keepSessionSeconds, passed to a --detach that starts a server only when not
  // the CLI's own default (an older CLI on a host does not know --session-ttl).
  const keepSession = () => (settings.current.ssh.keepSessionSec === DEFAULT_KEEP_SESSION_SEC ? undefined : settings.current.ssh.keepSessionSec);
  // The agent gate's UI also asks the network questions of the environments the user drives.
  const agentGateHost = vscodeAgentGateHost(ctx, settings, log);
  ctx.subscriptions.push(agentGateHost);
  const connector = createConnector(local, (env) => telemetry.client(env), [containerRoute((level, message) => log[level](message)), persistentSshRoute((level, message) => log[level](message), askpass, keepSession)], networkQuestions(agentGateHost, log));
  const manager = new EnvironmentManager(store, connector, {
    log: (level, message) => log[level](message),
  });
  const registry = new ProcessRegistry();
  const gate = new ApprovalGate(vscodeApprovalHost(settings, log));
  const statusBar = new StatusBar(store, manager);
  const terminals = createTerminals(ctx, store, manager, registry, log);
  const agent = new AgentEndpointService({
    gateHost: agentGateHost, terminals, statusBar, log, settings, serverTelemetry: () => telemetry.server(),
    persistence: { secrets: ctx.secrets, globalState: ctx.globalState, workspaceState: ctx.workspaceState },
    store,
    // Agent relays log in to ssh hosts as Connect to Host does (password prompts, the detached server that survives a drop).
    relayRoutes: sshRelayRoutes(askpass, keepSession, (level, message) => log[level](message)),
    // The audit logs outlive a reload (and the window: one file per environment).
    auditDir: path.join(ctx.globalStorageUri.fsPath, 'agent-audit'),
  });
  const tree = new ExecServerTree(store, manager, registry, () => agent.running?.url);
  ctx.subscriptions.push(statusBar, terminals, agent, tree);

  const refresh = wireViews(ctx, { tree, statusBar, manager, registry, settings, log });
  const resolveEnvironment = registerFileSystem(ctx, store, manager, log);
  registerTerminalProfile(ctx, store, terminals, resolveEnvironment);
  // The '+' button (VS Code's default profile) opens that profile too in a remote window.
  keepRemoteDefaultProfile(ctx, log);

  const approve: Approve = async (environment, argv, cwd) => {
    const d = await gate.check({ kind: 'run', argv, cwd, environment }, 'api');
    if (!d.allowed) throw new Error(`Exec Server: running ${argv.join(' ')} was not approved (${d.reason})`);
  };
  registerCommands(ctx, { store, manager, registry, terminals, agent, log, refresh, approve, showRequestStatistics: showStatistics,
    testConnect: (c, token) => connector.connect(c, token),
  });
  const indicator = registerSshCommands({ ctx, log, store, manager, refresh, approve, register: (id, handler) => registerCommand(ctx, log, id, handler),
    sshOptions: () => ({ sshPath: settings.current.ssh.path || undefined, configFile: settings.current.ssh.configFile || undefined }),
    askpass,
  });
  registerContainerCommands({ ctx, log, store, manager, refresh, approve, register: (id, handler) => registerCommand(ctx, log, id, handler), settings: () => settings.current.containers,
    connected: (environment) => indicator.connected(environment),
  });
  const api = createApi(ctx, store, manager, terminals, approve);

  // After a window reload: re-attach the shells of remote environments whose session lives on.
  void terminals.restoreTerminals().catch((e: unknown) => log.warn(`re-attaching terminals: ${e instanceof Error ? e.message : String(e)}`));
  // …and the agent endpoint, with the same port and token, if it was running.
  void agent.restoreAfterReload().catch((e: unknown) => log.warn(`restarting the agent endpoint: ${e instanceof Error ? e.message : String(e)}`));

  cleanup = async () => {
    // First: closing the connections must not end (or forget) the shells a reloaded window re-attaches.
    terminals.detachAll();
    await agent.stop({ shutdown: true }).catch(() => undefined);
    await manager.dispose().catch(() => undefined);
    await local.shutdown().catch(() => undefined);
    await telemetry.shutdown().catch(() => undefined);
    registry.dispose();
  };
  log.info(`Exec Server ${api.version} activated`);
  return api;
}

export async function deactivate(): Promise<void> {
  const c = cleanup;
  cleanup = undefined;
  await c?.();
}

/** The environments list (user settings) and tokens (secret storage); a problem in the list is logged, not fatal. */
function createStore(ctx: vscode.ExtensionContext, settings: SettingsOwner, log: vscode.LogOutputChannel): EnvironmentStore {
  const store = new EnvironmentStore(
    {
      // User settings only: a workspace (which an agent can write) must not add commands to run.
      read: () => settings.current.environments,
      // Writes the user (global) list: never copies workspace-level entries into it.
      write: (value: EnvironmentSetting[]) => settings.write('environments', value),
    },
    {
      get: (k) => Promise.resolve(ctx.secrets.get(k)),
      store: (k, v) => Promise.resolve(ctx.secrets.store(k, v)),
      delete: (k) => Promise.resolve(ctx.secrets.delete(k)),
    },
  );
  for (const p of store.problems()) log.warn(`settings: ${p}`);
  return store;
}

/**
 * A proxied command's network/policyRequest (another extension's process/start behind the
 * managed proxy) becomes the user's question, as an agent command's does (docs/security.md).
 */
function networkQuestions(agentGateHost: ReturnType<typeof vscodeAgentGateHost>, log: vscode.LogOutputChannel) {
  return (environment: string) =>
    environmentNetworkQuestions(environment, {
      policy: agentGateHost.policy,
      allowedDomains: () => agentGateHost.allowedDomains?.() ?? [],
      timeoutMs: agentGateHost.timeoutMs,
      ask: (q) => agentGateHost.ask(q),
      timedOut: (q, seconds) => agentGateHost.timedOut?.(q, seconds),
      late: (q, choice) => agentGateHost.late?.(q, choice),
      log: (level, message) => log[level](message),
    });
}

function createTerminals(ctx: vscode.ExtensionContext, store: EnvironmentStore, manager: EnvironmentManager, registry: ProcessRegistry, log: vscode.LogOutputChannel): TerminalService {
  return new TerminalService({
    getClient: (env) => connectWithProgress(manager, env, log),
    registry,
    log,
    // Shells of websocket environments outlive a window reload (the server keeps a detached
    // session), and those of Connect to Host environments with a persistent server (src/extension/ssh/persist.ts).
    records: new TerminalRecords(ctx.workspaceState),
    // Not one that fell back to stdio (AllowTcpForwarding no, an older CLI): its shells are not
    // recorded, so a reload does not bring back terminals that cannot be re-attached.
    restorable: (env) => {
      const c = store.get(env);
      return c?.kind === 'websocket' || (!!c && !!persistentSshSpec(c) && !isStdioFallback(manager.connectedClient(env))) || restorableContainer(c, manager.connectedClient(env));
    },
    resumeClient: (env, sessionId) => manager.getClient(env, { resumeSessionId: sessionId }),
  });
}

/** Keeps the Environments view and the status bar in step with connections, processes and settings; returns their refresh. */
function wireViews(
  ctx: vscode.ExtensionContext,
  { tree, statusBar, manager, registry, settings, log }: { tree: ExecServerTree; statusBar: StatusBar; manager: EnvironmentManager; registry: ProcessRegistry; settings: SettingsOwner; log: vscode.LogOutputChannel },
): () => void {
  const refresh = () => {
    tree.refresh();
    statusBar.update();
  };
  ctx.subscriptions.push(
    manager.onDidChangeState(refresh),
    registry.onDidChange(refresh),
    statusBar.onDidChangeEndpoint(() => tree.refresh()),
    manager.onDidLoseConnection(({ environment, reason }) => {
      registry.forgetEnvironment(environment);
      // The reason may quote the host (the command's stderr): no [x](command:…) link in a notification.
      showReconnecting(manager, environment, reason);
    }),
    manager.onDidGiveUp(({ environment, reason }) => {
      void vscode.window.showErrorMessage(`Exec Server: could not reconnect to ${environment} (${noLinks(reason)})`, 'Retry').then((c) => {
        if (c === 'Retry') void vscode.commands.executeCommand('execServer.connect', { environment });
      });
    }),
    manager.onDidReconnect(({ environment }) => log.info(`${environment}: reconnected with a new session`)),
    settings.onDidChange(({ changed, previous, current }) => {
      if (!changed.has('environments')) return;
      const now = parseEnvironments(current.environments);
      for (const p of now.problems) log.warn(`settings: ${p}`);
      // An environment edited or removed in the settings (by hand or by a command): drop its live connection.
      const entry = new Map(now.configs.map((e) => [e.name, JSON.stringify(e)]));
      for (const was of parseEnvironments(previous.environments).configs) {
        if (entry.get(was.name) !== JSON.stringify(was) && manager.state(was.name) !== 'disconnected') {
          log.info(`${was.name}: settings changed; disconnecting`);
          registry.forgetEnvironment(was.name);
          void manager.disconnect(was.name);
        }
      }
      refresh();
    }),
    vscode.window.createTreeView(ENVIRONMENTS_VIEW, { treeDataProvider: tree, showCollapseAll: false }),
  );
  return refresh;
}

/** exec-server://<environment>/<abs path>; returns how an authority names an environment (authorities may come back lower-cased). */
function registerFileSystem(ctx: vscode.ExtensionContext, store: EnvironmentStore, manager: EnvironmentManager, log: vscode.LogOutputChannel): (authority: string) => string {
  const resolveEnvironment = (authority: string) =>
    store.get(authority)?.name ?? store.list().find((e) => e.name.toLowerCase() === authority.toLowerCase())?.name ?? authority;
  const fsProvider = new ExecFileSystemProvider({ getClient: (env) => manager.getClient(env) }, resolveEnvironment, log);
  ctx.subscriptions.push(vscode.workspace.registerFileSystemProvider(SCHEME, fsProvider, { isCaseSensitive: true }), fsProvider);
  return resolveEnvironment;
}

/** The "Exec Server" terminal profile: the remote window's folder environment, else Local (or a pick when there are several). */
function registerTerminalProfile(ctx: vscode.ExtensionContext, store: EnvironmentStore, terminals: TerminalService, resolveEnvironment: (authority: string) => string): void {
  ctx.subscriptions.push(
    vscode.window.registerTerminalProfileProvider(TERMINAL_PROFILE, {
      async provideTerminalProfile() {
        const envs = store.list();
        // A remote window's terminal is the folder's, unasked (as Ctrl+` there).
        const folder = remoteWindowFolder();
        let env = folder ? resolveEnvironment(folder.uri.authority) : LOCAL_ENVIRONMENT;
        if (!folder && envs.length > 1) {
          const pick = await vscode.window.showQuickPick(envs.map((e) => e.name), { placeHolder: 'Environment for the terminal' });
          if (!pick) return undefined;
          env = pick;
        }
        const { name, pty } = await terminals.profilePty(env);
        return new vscode.TerminalProfile({ name, pty, iconPath: new vscode.ThemeIcon('server-process') });
      },
    }),
  );
}

type Approve = (environment: string, argv: string[], cwd: string) => Promise<void>;

function createApi(ctx: vscode.ExtensionContext, store: EnvironmentStore, manager: EnvironmentManager, terminals: TerminalService, approve: Approve): ExecServerApi {
  return {
    version: String((ctx.extension.packageJSON as { version?: string }).version ?? '0.0.0'),
    getEnvironments: () => store.list().map((e) => ({ name: e.name, kind: e.kind, state: manager.state(e.name) })),
    getClient: (environment) => manager.getClient(environment),
    // Connect first without the progress/error UI (API callers handle their own failures);
    // TerminalService then resolves the default cwd/argv and asks the gate with the final ones.
    async run(environment, argv, opts = {}) {
      await manager.getClient(environment);
      return terminals.run(environment, argv, { ...opts, approve: (a, c) => approve(environment, a, c) });
    },
    async openTerminal(environment, opts = {}) {
      await manager.getClient(environment);
      return terminals.newTerminal(environment, { ...opts, origin: 'api', approve: (a, c) => approve(environment, a, c) });
    },
  };
}
