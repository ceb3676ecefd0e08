// First contact (docs/extension.md, "First steps in detail"), read from the workbench DOM through the harness: Local
// reads "ready" in the Exec Server view (not "disconnected"), the status bar says what it is
// (not a bare "0/1"), the Get Started walkthrough starts with Connect to Host, a click on a process
// row shows its terminal, and the agent endpoint row starts and stops the endpoint.
import * as vscode from 'vscode';
import { test } from './framework';
import { quickInput, uiClick, uiScreenshot, uiTexts } from './ux-driver';
import { assert, waitFor } from './util';

const VIEW = '[id="workbench.view.extension.execServer"]';
const ROWS = `${VIEW} .monaco-list-row`;

async function showView(): Promise<void> {
  await vscode.commands.executeCommand('execServer.environments.focus');
}

export function registerUxFirstContactTests(): void {
  test('ux first contact: Local reads "ready" in the view and the status bar item is readable', async () => {
    await showView();
    const rows = await uiTexts(ROWS, 'Local');
    const local = rows.find((r) => r.startsWith('Local'));
    assert(local && /ready|connected/.test(local) && !/disconnected/.test(local), `the Local row says it is usable (rows ${JSON.stringify(rows)})`);
    const status = await uiTexts('[id$="execServer.status"]', 'Exec Server');
    assert(status.length === 1, `one Exec Server status bar item (${JSON.stringify(status)})`);
    assert(!/^\s*\d+\/\d+\s*$/.test(status[0]) && /Exec Server/.test(status[0]), `the status bar item reads as words ("${status[0]}")`);
  });

  test('ux first contact: the Get Started walkthrough starts with Connect to Host (its button opens the host pick); its Local terminal button opens one', async () => {
    await vscode.commands.executeCommand('workbench.action.openWalkthrough', 'exec-server.exec-server#execServer.firstSteps', false);
    const texts = await uiTexts('.gettingStartedContainer', 'Get Started with Exec Server');
    const page = texts.join('\n');
    const steps = ['Connect to an ssh host', 'Open a remote folder', 'Open a terminal', 'Add an exec-server by URL or command', 'Let an agent work here'];
    for (const step of steps) assert(page.includes(step), `walkthrough step "${step}" (page: ${page.slice(0, 600)})`);
    assert(page.indexOf(steps[0]) < page.indexOf(steps[1]), `Connect to Host comes first (page: ${page.slice(0, 600)})`);
    await uiScreenshot('walkthrough');
    // The first step's button runs Connect to Host: its quick pick opens.
    await uiClick('.gettingStartedContainer >> text="Connect to Host…"');
    await quickInput({ waitTitle: 'Connect to Host', press: 'Escape' });
    await quickInput({ waitHidden: true });
    // The terminal step's Local button: a Local terminal opens (no environment picker).
    await uiClick('.gettingStartedContainer >> text="Open a terminal"');
    const before = new Set(vscode.window.terminals);
    await uiClick('.gettingStartedContainer >> text="Open a Local Terminal"');
    const t = await waitFor('a terminal opened by the walkthrough button', () => vscode.window.terminals.find((x) => !before.has(x) && /\(Local\)/.test(x.name)), 20_000);
    t.dispose();
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  test('ux first contact: a click on a process row in the view shows its terminal', async () => {
    const one = (await vscode.commands.executeCommand('execServer.newTerminal', { environment: 'Local', name: 'ux-row-one' })) as vscode.Terminal;
    const two = (await vscode.commands.executeCommand('execServer.newTerminal', { environment: 'Local', name: 'ux-row-two' })) as vscode.Terminal;
    try {
      await waitFor('the second terminal is active', () => vscode.window.activeTerminal === two);
      await showView();
      await uiTexts(ROWS, 'ux-row-one');
      await uiClick(`${ROWS}:has-text("ux-row-one")`);
      await waitFor('the first terminal is shown (active) after the click', () => vscode.window.activeTerminal === one, 10_000);
    } finally {
      one.dispose();
      two.dispose();
    }
  });

  test('ux first contact: the agent endpoint row in the view starts and stops the endpoint', async () => {
    await vscode.commands.executeCommand('execServer.stopAgentEndpoint');
    await showView();
    const row = `${ROWS}:has-text("Agent endpoint")`;
    await uiTexts(row, 'stopped');
    try {
      await uiClick(`${row} .action-label[aria-label^="Start Agent Endpoint"]`, { selector: row, contains: 'ws://127.0.0.1:' });
      const running = await uiTexts(row, 'ws://127.0.0.1:');
      assert(running.some((t) => /ws:\/\/127\.0\.0\.1:\d+/.test(t)), `the row shows the endpoint URL (${JSON.stringify(running)})`);
      await uiScreenshot('view');
      await uiClick(`${row} .action-label[aria-label^="Stop Agent Endpoint"]`, { selector: row, contains: 'stopped' });
    } finally {
      await vscode.commands.executeCommand('execServer.stopAgentEndpoint');
      await vscode.commands.executeCommand('notifications.clearAll').then(undefined, () => undefined);
    }
  });
}
