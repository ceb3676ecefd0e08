// Agent endpoint commands: start one for Local or for an environment (palette: a picker; the
// environment's context menu: that one), stop, and copy / show the Codex entries (one
// `[[environments]]` per running endpoint) or a token.
import * as vscode from 'vscode';
import { str } from '../../common/ui';
import type { CommandContext } from '../../environments/ui';
import { LOCAL_ENVIRONMENT } from '../../environments';
import type { AgentEndpointService } from './endpoint-service';

export interface AgentCommandDeps {
  register: CommandContext['register'];
  pickEnvironment: CommandContext['pickEnvironment'];
  /** The environment has a live connection (the picker offers Local and those). */
  connected(environment: string): boolean;
  agent: AgentEndpointService;
}

/** Opens the Codex entries in an untitled TOML editor (to paste into $CODEX_HOME/environments.toml). */
async function showEntries(agent: AgentEndpointService): Promise<void> {
  const text = `# Exec Server agent endpoints: paste into $CODEX_HOME/environments.toml (the entries hold the tokens)\n\n${await agent.codexEntries()}`;
  const doc = await vscode.workspace.openTextDocument({ language: 'toml', content: text });
  await vscode.window.showTextDocument(doc, { preview: true });
}

export function registerAgentCommands(d: AgentCommandDeps): void {
  d.register('execServer.startAgentEndpoint', async (args) => {
    // A tree item or a caller names the environment; other arguments ({quiet}) mean Local; none:
    // a picker of Local and the connected environments (none connected: Local, unasked).
    const environment =
      str(args, 'environment') ??
      (args ? LOCAL_ENVIRONMENT : await d.pickEnvironment('Start an agent endpoint for which environment? (a remote one relays to its server)', (e) => e === LOCAL_ENVIRONMENT || d.connected(e)));
    if (!environment) return undefined;
    const r = await d.agent.start(environment);
    if (!args?.quiet) {
      const where = environment === LOCAL_ENVIRONMENT ? '' : ` for ${environment}`;
      void vscode.window.showInformationMessage(`Exec Server: agent endpoint${where} on ${r.url}`, 'Copy Codex Entries', 'Show Codex Entries', 'Copy Token', 'Copy URL').then(async (c) => {
        if (c === 'Copy Codex Entries') void vscode.env.clipboard.writeText(await d.agent.codexEntries());
        if (c === 'Show Codex Entries') void showEntries(d.agent);
        if (c === 'Copy Token') void vscode.env.clipboard.writeText(r.token);
        if (c === 'Copy URL') void vscode.env.clipboard.writeText(r.url);
      });
    }
    return r;
  });
  // Read-only in spirit: an untitled editor the user may save as .jsonl (the export).
  d.register('execServer.showAgentAudit', async () => {
    const text = await d.agent.auditJsonLines();
    const doc = await vscode.workspace.openTextDocument({ language: 'jsonl', content: text || '' }).then(undefined, () => vscode.workspace.openTextDocument({ content: text }));
    await vscode.window.showTextDocument(doc, { preview: true });
    if (!text) void vscode.window.showInformationMessage('Exec Server: no agent request has been decided yet (the log covers the running endpoints)');
    return text;
  });
  // {environment}: that endpoint only; none: every endpoint.
  d.register('execServer.stopAgentEndpoint', (args) => d.agent.stop({ environment: str(args, 'environment') }));
  // Codex 0.169 reads the token only from its environments.toml entry (auth_bearer_token), so
  // the whole entries are copied (one per running endpoint); {tokenOnly: true} copies Local's
  // bare token ({environment}: that endpoint's).
  d.register('execServer.copyEndpointToken', async (args) => {
    const all = await d.agent.endpoints();
    if (all.length === 0) {
      void vscode.window.showWarningMessage('Exec Server: no agent endpoint is running (Exec Server: Start Agent Endpoint)');
      return false;
    }
    if (args?.tokenOnly === true) {
      const named = str(args, 'environment') ?? LOCAL_ENVIRONMENT;
      const ep = all.find((e) => e.environment === named);
      if (!ep) {
        void vscode.window.showWarningMessage(`Exec Server: no agent endpoint is running for ${named}`);
        return false;
      }
      await vscode.env.clipboard.writeText(ep.token);
      void vscode.window.showInformationMessage(`Exec Server: token of ${ep.url} copied`);
      return true;
    }
    await vscode.env.clipboard.writeText(await d.agent.codexEntries());
    const what = all.length === 1 ? `entry for ${all[0].url}` : `${all.length} entries (${all.map((e) => e.environment).join(', ')})`;
    void vscode.window.showInformationMessage(`Exec Server: Codex environments.toml ${what} copied (it holds the token: paste it into $CODEX_HOME/environments.toml)`);
    return true;
  });
}
