// The agent endpoint in the UI: start/stop, the token, the approval prompt, workspace trust.
import * as vscode from 'vscode';
import { AgentEndpoint } from './core/agent-endpoint';
import { APPROVAL_POLICIES, type ApprovalGate, type ApprovalHost, type ApprovalPolicy } from './core/approval';
import { LOCAL_ENVIRONMENT } from './core/environment-store';
import type { LocalServerHolder, StatusBar } from './environments';
import { workspaceFolderPaths, type TerminalService } from './terminals';

/** Reads the approval settings and shows the approval notification (exact wording and buttons). */
export function vscodeApprovalHost(log: vscode.LogOutputChannel): ApprovalHost {
  return {
    policy(): ApprovalPolicy {
      const v = vscode.workspace.getConfiguration('execServer').get<string>('approval.policy');
      return (APPROVAL_POLICIES as readonly string[]).includes(v ?? '') ? (v as ApprovalPolicy) : 'askOutsideWorkspace';
    },
    timeoutMs(): number {
      const s = vscode.workspace.getConfiguration('execServer').get<number>('approval.timeoutSeconds');
      return (typeof s === 'number' && s > 0 ? s : 60) * 1000;
    },
    workspaceRoots: (environment?: string) => workspaceFolderPaths(environment ?? LOCAL_ENVIRONMENT),
    prompt: (message, choices) => Promise.resolve(vscode.window.showWarningMessage(message, ...choices)),
    log: (m) => log.info(m),
  };
}

export interface AgentServiceDeps {
  local: LocalServerHolder;
  gate: ApprovalGate;
  terminals: TerminalService;
  statusBar: StatusBar;
  log: vscode.LogOutputChannel;
}

export class AgentEndpointService implements vscode.Disposable {
  private endpoint: AgentEndpoint | undefined;
  private starting: Promise<AgentEndpoint> | undefined;

  constructor(private readonly deps: AgentServiceDeps) {}

  get running(): { url: string; token: string } | undefined {
    return this.endpoint ? { url: this.endpoint.url, token: this.endpoint.token } : undefined;
  }

  async start(): Promise<{ url: string; token: string }> {
    if (!vscode.workspace.isTrusted) {
      throw new Error('Exec Server: the agent endpoint is off in untrusted workspaces (trust the workspace first)');
    }
    if (this.endpoint) return { url: this.endpoint.url, token: this.endpoint.token };
    this.starting ??= this.listen().finally(() => (this.starting = undefined));
    const ep = await this.starting;
    return { url: ep.url, token: ep.token };
  }

  async stop(): Promise<boolean> {
    const ep = this.endpoint ?? (await this.starting?.catch(() => undefined));
    this.endpoint = undefined;
    // A new endpoint may serve another agent: its approvals start over.
    this.deps.gate.resetSession('agent');
    this.deps.statusBar.setEndpoint(undefined);
    if (!ep) return false;
    await ep.stop();
    this.deps.log.info('agent endpoint stopped');
    return true;
  }

  dispose(): void {
    void this.stop();
  }

  private async listen(): Promise<AgentEndpoint> {
    const port = vscode.workspace.getConfiguration('execServer').get<number>('agentEndpoint.port') ?? 0;
    const log = this.deps.log;
    const ep = await AgentEndpoint.start({
      server: this.deps.local.get(),
      port: Number.isInteger(port) && port >= 0 && port < 65536 ? port : 0,
      decide: (req) => this.deps.gate.check(req, 'agent'),
      onProcessStarted: (p) => this.deps.terminals.showAgentProcess(p),
      log: (level, message) => log[level](`[agent endpoint] ${message}`),
    });
    this.endpoint = ep;
    this.deps.statusBar.setEndpoint(ep.port);
    log.info(`agent endpoint listening on ${ep.url}`);
    return ep;
  }
}
