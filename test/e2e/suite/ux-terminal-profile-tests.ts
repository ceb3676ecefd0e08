// First contact (docs/extension.md, "First steps in detail"): the terminal panel's "+" dropdown entry "Exec Server" (the
// contributed terminal profile) opens a terminal that is shown, focused and usable — done as a
// user does it, with clicks on the dropdown and keys typed into the workbench, read back from
// the terminal rows on screen. Another terminal is active before, so a profile terminal that
// opens in the background (the bug) is caught: the typed line then lands in that other terminal,
// which runs `cat` (it never evaluates `$((6*7))`).
import * as vscode from 'vscode';
import { onTestEnd, test } from './framework';
import { setSettingForTest } from './approval';
import { quickInput, uiClick, uiKeys, uiScreenshot, uiTexts } from './ux-driver';
import { assert, productApi, uniqueName, waitFor } from './util';

/** The rows of the terminal shown in the panel (Playwright's :visible: hidden terminals keep theirs). */
const TERMINAL_ROWS = '.terminal .xterm-rows:visible';
/** The chevron next to the panel's "+" (New Terminal): its menu lists the profiles. */
const PROFILE_DROPDOWN = '.part.panel .monaco-dropdown-with-primary .dropdown-action-container .action-label';
const MENU_ENTRY = (label: string) => `.monaco-menu .action-label:text-is("${label}")`;

/** xterm draws with WebGL when it can (no text in the DOM): the DOM renderer for this test. */
async function domRendererForTest(): Promise<void> {
  const c = () => vscode.workspace.getConfiguration('terminal.integrated');
  const was = c().inspect('gpuAcceleration')?.globalValue;
  onTestEnd(async () => {
    await c().update('gpuAcceleration', was, vscode.ConfigurationTarget.Global);
  });
  await c().update('gpuAcceleration', 'off', vscode.ConfigurationTarget.Global);
}

/** A terminal the user already has (shown, active); it runs `cat`, so it never prints hi-42. */
async function otherTerminal(): Promise<vscode.Terminal> {
  const name = uniqueName('ux-profile-other');
  const t = (await vscode.commands.executeCommand('execServer.newTerminal', { environment: 'Local', name, argv: ['cat'] })) as vscode.Terminal;
  onTestEnd(() => t.dispose());
  await waitFor('the other terminal is active', () => vscode.window.activeTerminal === t, 10_000);
  return t;
}

/** Types `line` and Enter with the keyboard into whatever the workbench has focused. */
async function typeLine(line: string): Promise<void> {
  const keys = [...line].map((c) => (c === ' ' ? 'Space' : c));
  await uiKeys([...keys, 'Enter'], 300);
}

async function openedByProfile(before: Set<vscode.Terminal>): Promise<vscode.Terminal> {
  const t = await waitFor('a terminal opened by the Exec Server profile', () => vscode.window.terminals.find((x) => !before.has(x)), 20_000);
  onTestEnd(() => t.dispose());
  assert(/\(Local\)/.test(t.name), `the profile terminal names its environment ("${t.name}")`);
  return t;
}

/** The terminal is the panel's active one, and a line typed into the workbench runs in it. */
async function assertShownAndWorking(t: vscode.Terminal, shot: string): Promise<void> {
  await waitFor(`the profile terminal "${t.name}" is the active terminal`, () => vscode.window.activeTerminal === t, 10_000);
  // Its shell is up when its prompt (anything) is on screen.
  await waitFor('the profile terminal shows its prompt', async () => (await uiTexts(TERMINAL_ROWS)).join('').trim().length > 0, 20_000, 300);
  await typeLine('echo hi-$((6*7))');
  await uiTexts(TERMINAL_ROWS, 'hi-42', 15_000);
  await uiScreenshot(shot);
}

/** The profile asks for the environment when there are several: the user picks Local. */
async function pickLocalIfAsked(): Promise<void> {
  if ((await productApi()).getEnvironments().length < 2) return;
  const q = await quickInput({ waitItem: 'Local', pick: 'Local' });
  assert(/Environment for the terminal/.test(q.before.placeholder ?? ''), `the environment question (${JSON.stringify(q.before)})`);
}

export function registerUxTerminalProfileTests(): void {
  test('ux terminal profile: the "+" dropdown entry "Exec Server" opens a shown, focused, working terminal', async () => {
    await domRendererForTest();
    await otherTerminal();
    const before = new Set(vscode.window.terminals);
    await uiClick(PROFILE_DROPDOWN);
    await uiClick(MENU_ENTRY('Exec Server'));
    await pickLocalIfAsked();
    const t = await openedByProfile(before);
    await assertShownAndWorking(t, 'terminal-profile');
  }, 90_000);

  test('ux terminal profile: panel closed, "Create New Terminal (With Profile)" → Exec Server → environment: the chosen terminal is shown and works', async () => {
    await domRendererForTest();
    // A second environment (never connected: Local is picked) makes the provider ask.
    const list = vscode.workspace.getConfiguration('execServer').inspect<unknown[]>('environments')?.globalValue ?? [];
    await setSettingForTest('environments', [...list, { name: uniqueName('ux-profile-env'), url: 'ws://127.0.0.1:9' }]);
    await otherTerminal();
    // From the editor, with the panel closed: the profile's terminal must bring the panel back.
    await vscode.commands.executeCommand('workbench.action.closePanel');
    const before = new Set(vscode.window.terminals);
    await uiKeys(['F1'], 600);
    await quickInput({ fill: '>Terminal: Create New Terminal (With Profile)', settleMs: 800 });
    const next = await quickInput({ waitItem: 'Create New Terminal (With Profile)', pick: 'Create New Terminal (With Profile)', settleMs: 800 });
    // In a multi-root window (earlier tests add folders) VS Code first asks for the working
    // directory, then for the profile: take the first folder.
    if (/working directory/i.test(next.placeholder ?? '') && next.items?.length) {
      await quickInput({ waitItem: next.items[0], pick: next.items[0], settleMs: 800 });
    }
    await quickInput({ waitItem: 'Exec Server', pick: 'Exec Server' });
    await pickLocalIfAsked();
    const t = await openedByProfile(before);
    await assertShownAndWorking(t, 'terminal-profile-pick');
  }, 90_000);
}
