// The agent endpoint in the UI: start/stop, the token and the Codex environments.toml entry,
// the approval questions (a notification that stays until answered + a read-only details
// editor for long requests), sandbox-denial notices, workspace trust. Every approval setting
// is read from the USER settings only: an agent can write workspace files, so workspace (and
// folder) values must never loosen the policy.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { codexEnvironmentEntries, type EndpointEntry } from '../codex-entry';
import { AgentEndpoint, MIN_AGENT_TOKEN_LENGTH, newAgentToken } from '../endpoint';
import { relayTargetOf, type RelayRoutes } from '../relay-targets';
import { AuditLog, auditFileOf } from '../audit';
import type { AgentGateHost, AgentQuestion } from '../gate';
import type { ApprovalHost } from '../../approval';
import { commandLine, timedOutText } from '../../approval';
import { LOCAL_ENVIRONMENT, type EnvironmentStore } from '../../environments';
import { QuestionPacer } from '../../approval';
import type { SettingsOwner } from '../../common';
import type { ServerTelemetry } from '../../../telemetry/api';
import type { StatusBar } from '../../environments/ui';
import { workspaceFolderPaths, type TerminalService } from '../../terminals/ui';

/** Reads the approval settings and shows the approval notification (API / programmatic commands). */
export function vscodeApprovalHost(settings: SettingsOwner, log: vscode.LogOutputChannel): ApprovalHost {
  return {
    policy: () => settings.current.approvalPolicy,
    timeoutMs: () => settings.current.approvalTimeoutMs,
    workspaceRoots: (environment?: string) => workspaceFolderPaths(environment ?? LOCAL_ENVIRONMENT),
    prompt: (message, choices) => Promise.resolve(vscode.window.showWarningMessage(message, ...choices)),
    log: (m) => log.info(m),
  };
}

/** Scheme of the read-only details documents of approval questions. */
export const APPROVAL_DETAILS_SCHEME = 'exec-server-approval';
/** Notification text above this length is cut (VS Code cuts at 1000) and the details open. */
const MAX_MESSAGE = 600;

class ApprovalDetails implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  uriFor(q: AgentQuestion): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: APPROVAL_DETAILS_SCHEME, path: `/approval-${q.id}.txt` });
    this.texts.set(uri.path, q.detail);
    if (this.texts.size > 200) this.texts.delete(this.texts.keys().next().value as string);
    return uri;
  }
  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? 'This approval question is no longer available.';
  }
}

/**
 * The agent gate's UI. The question is an error-severity notification because VS Code keeps
 * only those (with buttons) on screen until answered; its text is plain (agent text is
 * shell-quoted by the core, so it forms no link). Long or detailed requests also open a
 * read-only plain-text editor with the full request (argv one per line, env, sandbox...).
 */
export function vscodeAgentGateHost(ctx: vscode.ExtensionContext, settings: SettingsOwner, log: vscode.LogOutputChannel): AgentGateHost & vscode.Disposable {
  const details = new ApprovalDetails();
  const registration = vscode.workspace.registerTextDocumentContentProvider(APPROVAL_DETAILS_SCHEME, details);
  // VS Code's user settings (…/User) and installed extensions: an agent must not edit them silently.
  const userDir = path.dirname(path.dirname(ctx.globalStorageUri.fsPath));
  // Only a real extensions folder: an extension under development lives next to arbitrary projects.
  const parent = path.dirname(ctx.extensionUri.fsPath);
  const extensionsDir = path.basename(parent) === 'extensions' ? [parent] : [];
  const pacer = new QuestionPacer();
  const waiting = new OpenQuestions();
  return {
    policy: () => settings.current.approvalPolicy,
    sandboxAll: () => settings.current.sandboxAgentCommands,
    allowedDomains: () => settings.current.networkAllowedDomains,
    timeoutMs: () => settings.current.approvalTimeoutMs,
    workspaceRoots: () => workspaceFolderPaths(LOCAL_ENVIRONMENT),
    protectedRoots: () => [userDir, ...extensionsDir],
    ask(q) {
      let message = q.message;
      const open = !q.complete || [...message].length > MAX_MESSAGE;
      if (open) {
        if ([...message].length > MAX_MESSAGE) message = `${[...message].slice(0, MAX_MESSAGE).join('')} … (cut)`;
        message += ` — full request in the editor tab "approval-${q.id}.txt"`;
      }
      waiting.add(q);
      return new Promise<string | undefined>((resolve) => {
        let settled = false;
        let shown = false;
        void q.settled.then(() => {
          settled = true;
          waiting.remove(q);
          if (!shown) resolve(undefined); // never shown: nothing to click late
        });
        // Paced: a burst of questions must not trip VS Code's toast spam guard (question-pacer.ts).
        pacer.schedule(
          () => {
            shown = true;
            if (open) {
              void vscode.workspace.openTextDocument(details.uriFor(q)).then(
                (doc) => vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true, viewColumn: vscode.ViewColumn.Beside }),
                () => undefined,
              );
            }
            const answered = vscode.window.showErrorMessage(message, ...q.choices).then(resolve, () => resolve(undefined));
            // On screen until answered, or until the answer no longer matters (its toast may linger).
            return Promise.race([answered, q.settled]);
          },
          () => settled,
          q.connection,
        );
      });
    },
    timedOut(q, seconds) {
      // VS Code has no way to take a shown notification (or its buttons) back: the question's
      // toast may stay on screen with live-looking buttons, whose click then only says it changed
      // nothing (late). So the denial is said at once, next to it, as a warning without buttons.
      const say = q.kind === 'network' ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
      void say(`Exec Server: approval #${q.id}: ${timedOutText(seconds)} — ${q.message.replace(/^Exec Server: /, '')}`);
    },
    late(q, choice) {
      void vscode.window.showInformationMessage(
        `Exec Server: approval #${q.id} had already been refused (timed out or the agent left); "${choice}" changed nothing.`,
      );
    },
    log: (level, m) => log[level](m),
    dispose: () => {
      registration.dispose();
      waiting.dispose();
    },
  };
}

/**
 * A status bar item while agent questions are open ("3 agent questions"): a question hidden
 * from the toasts (Escape, Do Not Disturb, more than fit) is still in the notification
 * center, which a click opens.
 */
class OpenQuestions implements vscode.Disposable {
  private readonly open = new Set<number>();
  private readonly item = vscode.window.createStatusBarItem('execServer.questions', vscode.StatusBarAlignment.Left, 49);

  constructor() {
    this.item.name = 'Exec Server agent questions';
    this.item.command = 'notifications.showList';
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
  }

  add(q: AgentQuestion): void {
    this.open.add(q.id);
    this.update();
  }

  remove(q: AgentQuestion): void {
    this.open.delete(q.id);
    this.update();
  }

  private update(): void {
    const n = this.open.size;
    if (n === 0) return void this.item.hide();
    this.item.text = `$(bell-dot) ${n} agent question${n === 1 ? '' : 's'}`;
    this.item.tooltip = `Exec Server: an agent waits for your answer to ${n === 1 ? 'a question' : `${n} questions`} (click: the notifications)`;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}

export interface AgentServiceDeps {
  gateHost: AgentGateHost;
  terminals: TerminalService;
  statusBar: StatusBar;
  log: vscode.LogOutputChannel;
  /** The port setting is read at each start. */
  settings: SettingsOwner;
  /** Server spans/metrics of the endpoint's own engine (execServer.telemetry.*), read at each start. */
  serverTelemetry?: () => ServerTelemetry;
  /**
   * Stable across reloads (docs/reliability.md): the token in SecretStorage, the last port (used again
   * when the port setting is 0 and it is free) in globalState, and whether the endpoint was
   * running when this window went away in workspaceState. Absent: a fresh token and port per start.
   */
  persistence?: { secrets: vscode.SecretStorage; globalState: vscode.Memento; workspaceState: vscode.Memento };
  /** The configured environments (a remote environment's endpoint relays to its server). */
  store?: EnvironmentStore;
  /** How the relay reaches a command environment the way the connector does (ssh: the user's login questions, the detached server). */
  relayRoutes?: RelayRoutes;
  /** The folder the endpoints' audit logs are kept in across reloads (audit.ts); absent: memory only. */
  auditDir?: string;
}

const TOKEN_SECRET = 'execServer.agentEndpoint.token';
const LAST_PORT_KEY = 'execServer.agentEndpoint.lastPort';
const RUNNING_KEY = 'execServer.agentEndpoint.running';

export class AgentEndpointService implements vscode.Disposable {
  private endpoint: AgentEndpoint | undefined;
  private starting: Promise<AgentEndpoint> | undefined;
  /** Endpoints of remote environments (relay.ts), by environment name: a free port and a fresh token each, for this window's life. */
  private readonly remotes = new Map<string, Promise<AgentEndpoint>>();

  constructor(private readonly deps: AgentServiceDeps) {}

  /** Local's endpoint. */
  get running(): { url: string; token: string } | undefined {
    return this.endpoint ? { url: this.endpoint.url, token: this.endpoint.token } : undefined;
  }

  /** Every running endpoint, Local first. */
  async endpoints(): Promise<EndpointEntry[]> {
    const out: EndpointEntry[] = this.endpoint ? [{ environment: LOCAL_ENVIRONMENT, url: this.endpoint.url, token: this.endpoint.token }] : [];
    for (const [environment, p] of this.remotes) {
      const ep = await p.catch(() => undefined);
      if (ep) out.push({ environment, url: ep.url, token: ep.token });
    }
    return out;
  }

  /** The Codex environments.toml entries of every running endpoint (one `[[environments]]` each). */
  async codexEntries(): Promise<string> {
    return codexEnvironmentEntries(await this.endpoints(), LOCAL_ENVIRONMENT);
  }

  /** The gate decisions of every running endpoint (audit.ts), Local first, then those kept of endpoints not running now, as JSON Lines. */
  async auditJsonLines(): Promise<string> {
    const eps = [...(this.endpoint ? [this.endpoint] : [])];
    for (const p of this.remotes.values()) {
      const ep = await p.catch(() => undefined);
      if (ep) eps.push(ep);
    }
    const running = new Set(eps.map((ep) => ep.audit.environment));
    const kept: string[] = [];
    const dir = this.deps.auditDir;
    let files: string[] = [];
    try {
      files = dir ? fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort() : [];
    } catch {
      /* no log kept yet */
    }
    for (const f of files) {
      let environment: string;
      try {
        environment = decodeURIComponent(f.slice(0, -'.jsonl'.length));
      } catch {
        continue;
      }
      if (!running.has(environment)) kept.push(new AuditLog(environment, undefined, path.join(dir!, f)).toJsonLines());
    }
    return eps.map((ep) => ep.audit.toJsonLines()).join('') + kept.join('');
  }

  /** Starts (or gives) the endpoint of `environment` (default Local). */
  async start(environment: string = LOCAL_ENVIRONMENT): Promise<{ url: string; token: string }> {
    if (!vscode.workspace.isTrusted) {
      throw new Error('Exec Server: the agent endpoint is off in untrusted workspaces (trust the workspace first)');
    }
    if (environment !== LOCAL_ENVIRONMENT) {
      const ep = await this.startRemote(environment);
      return { url: ep.url, token: ep.token };
    }
    if (this.endpoint) return { url: this.endpoint.url, token: this.endpoint.token };
    this.starting ??= this.listen().finally(() => (this.starting = undefined));
    const ep = await this.starting;
    return { url: ep.url, token: ep.token };
  }

  /**
   * `shutdown`: the window is going away — the endpoint comes back with the reloaded window
   * (restoreAfterReload). Otherwise the user stopped it: it stays stopped.
   */
  async stop(opts: { shutdown?: boolean; environment?: string } = {}): Promise<boolean> {
    if (opts.environment !== undefined && opts.environment !== LOCAL_ENVIRONMENT) return this.stopRemote(opts.environment);
    // All of them (the window goes away, or Stop without naming one).
    if (opts.environment === undefined) for (const name of [...this.remotes.keys()]) await this.stopRemote(name);
    if (!opts.shutdown) await this.deps.persistence?.workspaceState.update(RUNNING_KEY, undefined);
    const ep = this.endpoint ?? (await this.starting?.catch(() => undefined));
    this.endpoint = undefined;
    this.deps.statusBar.setEndpoint(undefined);
    if (!ep) return false;
    // Its own engine: every agent process ends with it; grants die with its connections.
    await ep.stop();
    this.deps.log.info('agent endpoint stopped');
    return true;
  }

  dispose(): void {
    void this.stop({ shutdown: true });
  }

  private startRemote(environment: string): Promise<AgentEndpoint> {
    const known = this.remotes.get(environment);
    if (known) return known;
    const store = this.deps.store;
    const config = store?.get(environment);
    if (!store || !config) return Promise.reject(new Error(`Exec Server: unknown environment "${environment}"`));
    const log = this.deps.log;
    const starting = AgentEndpoint.start({
      port: 0,
      relay: relayTargetOf(config, () => store.token(environment), (level, m) => log[level](`[agent endpoint ${environment}] ${m}`), this.deps.relayRoutes),
      // The same questions and settings as Local, against the folders open for that environment (paths on its host).
      gate: { ...this.deps.gateHost, workspaceRoots: () => workspaceFolderPaths(environment), protectedRoots: () => [] },
      onProcessStarted: (p) => this.deps.terminals.showAgentProcess(p),
      onSandboxDenied: (d) => this.sandboxDenied(d),
      auditFile: this.deps.auditDir ? auditFileOf(this.deps.auditDir, environment) : undefined,
      log: (level, message) => log[level](`[agent endpoint ${environment}] ${message}`),
    });
    this.remotes.set(environment, starting);
    starting.then(
      (ep) => log.info(`agent endpoint for ${environment} listening on ${ep.url} (relayed to its server)`),
      () => this.remotes.get(environment) === starting && this.remotes.delete(environment),
    );
    return starting;
  }

  private async stopRemote(environment: string): Promise<boolean> {
    const p = this.remotes.get(environment);
    this.remotes.delete(environment);
    const ep = await p?.catch(() => undefined);
    if (!ep) return false;
    await ep.stop();
    this.deps.log.info(`agent endpoint for ${environment} stopped`);
    return true;
  }

  /** The connection's label names the host for a remote endpoint ("agent connection #1 (…) → "devbox""). */
  private sandboxDenied({ connection, argv, exitCode }: { connection: string; argv: string[]; exitCode: number }): void {
    this.deps.log.warn(`[agent endpoint] sandbox denied: ${connection}: ${commandLine(argv)} (exit code ${exitCode})`);
    void vscode.window.showWarningMessage(
      `Exec Server: the sandbox blocked ${commandLine(argv)} (${connection}, exit code ${exitCode}). If the agent retries it without the sandbox, you will be asked first.`,
    );
  }

  /** After a window reload: start the endpoint again if it was running (same port and token when possible). */
  async restoreAfterReload(): Promise<void> {
    if (!this.deps.persistence?.workspaceState.get(RUNNING_KEY) || !vscode.workspace.isTrusted) return;
    const { url } = await this.start();
    this.deps.log.info(`agent endpoint restarted after the window reload on ${url}`);
  }

  /** The token kept in SecretStorage (created on first use); a malformed one is replaced. */
  private async token(): Promise<string | undefined> {
    const secrets = this.deps.persistence?.secrets;
    if (!secrets) return undefined;
    const kept = await secrets.get(TOKEN_SECRET);
    if (kept && kept.length >= MIN_AGENT_TOKEN_LENGTH && /^[A-Za-z0-9_-]+$/.test(kept)) return kept;
    const fresh = newAgentToken();
    await secrets.store(TOKEN_SECRET, fresh);
    return fresh;
  }

  private async listen(): Promise<AgentEndpoint> {
    const p = this.deps.persistence;
    const token = await this.token();
    const configured = this.deps.settings.current.agentEndpointPort;
    const last = p?.globalState.get<number>(LAST_PORT_KEY);
    const reuse = configured === 0 && Number.isInteger(last) && last! > 0 && last! < 65536 ? last! : undefined;
    let ep: AgentEndpoint;
    try {
      ep = await this.listenOn(reuse ?? configured, token);
    } catch (e) {
      // The last port is taken by something else now: any free one (the agent's entry then changes).
      if (reuse === undefined || !/EADDRINUSE/.test(String((e as Error)?.message ?? e))) throw e;
      this.deps.log.warn(`agent endpoint: port ${reuse} is taken; using a free one`);
      ep = await this.listenOn(0, token);
    }
    await p?.globalState.update(LAST_PORT_KEY, ep.port);
    await p?.workspaceState.update(RUNNING_KEY, true);
    return ep;
  }

  private async listenOn(port: number, token: string | undefined): Promise<AgentEndpoint> {
    const log = this.deps.log;
    const ep = await AgentEndpoint.start({
      port,
      token,
      gate: this.deps.gateHost,
      serverOptions: { telemetry: this.deps.serverTelemetry?.() },
      onProcessStarted: (p) => this.deps.terminals.showAgentProcess(p),
      onSandboxDenied: (d) => this.sandboxDenied(d),
      auditFile: this.deps.auditDir ? auditFileOf(this.deps.auditDir, LOCAL_ENVIRONMENT) : undefined,
      log: (level, message) => log[level](`[agent endpoint] ${message}`),
    });
    this.endpoint = ep;
    this.deps.statusBar.setEndpoint(ep.port);
    log.info(`agent endpoint listening on ${ep.url}`);
    return ep;
  }
}
