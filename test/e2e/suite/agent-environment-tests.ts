// An agent endpoint per environment, the way a user starts it (docs/extension.md "Agents on remote
// hosts"): Start Agent Endpoint from the palette offers the connected environments, the endpoint
// for one of them announces itself with "Show Codex Entries", which opens the `[[environments]]`
// entry `vscode-<name>` with that endpoint's URL and token; an agent on that entry runs a command
// on the environment's server (asked, Allow), and Show Agent Audit Log lists the decision under
// that environment. The environment is this project's CLI as a websocket server.
import * as vscode from 'vscode';
import { pathToFileURL } from 'node:url';
import { AgentClient } from './agent-client';
import { answerApproval, answerApprovalIfShown, setApprovalPolicyForTest } from './approval';
import { onTestEnd, test } from './framework';
import { RemoteServer } from './remote-server';
import { quickInput } from './ux-driver';
import { assert, freshDir, uniqueName, waitFor } from './util';

export function registerAgentEnvironmentTests(): void {
  test('agent endpoint per environment: the palette offers the connected environment, Show Codex Entries gives its entry, an agent on it runs there and the audit log names it', async () => {
    await setApprovalPolicyForTest('alwaysAsk');
    const server = new RemoteServer();
    const url = await server.start();
    const name = uniqueName('agent-env');
    await vscode.commands.executeCommand('execServer.addEnvironment', { name, url, token: server.token });
    onTestEnd(async () => {
      await vscode.commands.executeCommand('execServer.stopAgentEndpoint', { environment: name }).then(undefined, () => undefined);
      await vscode.commands.executeCommand('execServer.removeEnvironment', { environment: name }).then(undefined, () => undefined);
      await server.stop();
    });
    await vscode.commands.executeCommand('execServer.connect', { environment: name });

    const started = Promise.resolve(vscode.commands.executeCommand<{ url: string; token: string } | undefined>('execServer.startAgentEndpoint'));
    const pick = await quickInput({ waitItem: name, pick: name });
    assert(pick.before.items.some((i) => i.startsWith('Local')), `Local is offered too: ${JSON.stringify(pick.before.items)}`);
    const r = await started;
    assert(r && /^ws:\/\/127\.0\.0\.1:\d+/.test(r.url), `an endpoint for ${name}: ${JSON.stringify(r)}`);

    // The entries and the audit log open as untitled (dirty) editors: left open, a later test's
    // close or reload raises VS Code's modal "save changes?" dialog over the whole workbench.
    onTestEnd(closeUntitledEditors);
    const shown = await answerApprovalIfShown('Show Codex Entries', { contains: `agent endpoint for ${name}` });
    assert(shown.clicked, `the start notification offers Show Codex Entries: ${shown.error}`);
    const entry = await waitFor('the Codex entries editor', () => {
      const t = vscode.window.activeTextEditor?.document.getText() ?? '';
      return t.includes(`id = "vscode-${name.toLowerCase()}"`) ? t : undefined;
    }, 15_000);
    const block = entry.slice(entry.indexOf(`id = "vscode-${name.toLowerCase()}"`));
    const entryUrl = /url = "([^"]+)"/.exec(block)?.[1];
    const entryToken = /auth_bearer_token = "([^"]+)"/.exec(block)?.[1];
    assert(entryUrl === r.url && entryToken === r.token, `the entry holds this endpoint's URL and token: ${block.slice(0, 200)}`);

    const dir = freshDir('agent-env');
    const agent = await AgentClient.connect(entryUrl!, entryToken!);
    onTestEnd(() => agent.close());
    const processId = uniqueName('agent-env-p');
    const start = agent.request('process/start', { processId, argv: ['/bin/sh', '-c', `echo ran-on-${name}`], cwd: pathToFileURL(dir).href, env: {}, tty: false, pipeStdin: false, arg0: null });
    const q = await answerApproval('Allow', { contains: `→ "${name}"` });
    assert(q.text?.includes('wants to run'), `the question names the environment: ${q.text}`);
    await start;
    await waitFor('the output from the environment', () => agent.notifications.some((n) => n.method === 'process/output' && n.params?.processId === processId), 20_000);

    const audit = (await vscode.commands.executeCommand<string>('execServer.showAgentAudit')) ?? '';
    const mine = audit.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { environment: string; method: string; outcome: string; by: string }).filter((x) => x.environment === name && x.method === 'process/start');
    assert(mine.length === 1 && mine[0].outcome === 'allowed' && mine[0].by === 'user', `the audit log lists the decision under ${name}: ${JSON.stringify(mine)}`);
  }, 120_000);
}

/** Reverts and closes every untitled editor (no save question). */
async function closeUntitledEditors(): Promise<void> {
  for (const doc of vscode.workspace.textDocuments.filter((d) => d.isUntitled)) {
    await vscode.window.showTextDocument(doc, { preview: false });
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  }
}
