// Agent endpoint commands: start (with copy buttons), stop, and copy the Codex entry/token.
import * as vscode from 'vscode';
import { codexEnvironmentEntry } from './endpoint-service';
import type { CommandContext } from '../../environments/ui';
import type { AgentEndpointService } from './endpoint-service';

export interface AgentCommandDeps {
  register: CommandContext['register'];
  agent: AgentEndpointService;
}

export function registerAgentCommands(d: AgentCommandDeps): void {
  d.register('execServer.startAgentEndpoint', async (args) => {
    const r = await d.agent.start();
    if (!args?.quiet) {
      void vscode.window.showInformationMessage(`Exec Server: agent endpoint on ${r.url}`, 'Copy Codex Entry', 'Copy Token', 'Copy URL').then((c) => {
        if (c === 'Copy Codex Entry') void vscode.env.clipboard.writeText(codexEnvironmentEntry(r.url, r.token));
        if (c === 'Copy Token') void vscode.env.clipboard.writeText(r.token);
        if (c === 'Copy URL') void vscode.env.clipboard.writeText(r.url);
      });
    }
    return r;
  });
  d.register('execServer.stopAgentEndpoint', () => d.agent.stop());
  // Codex 0.169 reads the token only from its environments.toml entry (auth_bearer_token), so
  // the whole entry is copied; {tokenOnly: true} copies the bare token.
  d.register('execServer.copyEndpointToken', async (args) => {
    const r = d.agent.running;
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
