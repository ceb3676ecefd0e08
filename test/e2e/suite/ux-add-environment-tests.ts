// Add Environment as a user meets it (docs/extension.md, "First steps in detail"): the real quick input, typed into and
// answered through the harness (ux-driver.ts) — steps with "n/3" in the title, validation
// while typing, Back, host:port read as ws://, a quoted command, the connection test before
// saving, Escape saving nothing, a reused name replaced only after asking, and one error
// toast (no "Error running command") for a command started from the Command Palette.
import * as vscode from 'vscode';
import { answerApprovalIfShown } from './approval';
import { config } from './config';
import { test } from './framework';
import { logLines } from './product-log';
import { RemoteServer } from './remote-server';
import { quickInput, uiScreenshot, uiTexts } from './ux-driver';
import { assert, assertEqual, productApi, uniqueName, waitFor } from './util';

type Entry = { name: string; url?: string; command?: string; args?: string[] };

function savedEntry(name: string): Entry | undefined {
  const list = vscode.workspace.getConfiguration('execServer').inspect<Entry[]>('environments')?.globalValue ?? [];
  return list.find((e) => e.name === name);
}

async function remove(name: string): Promise<void> {
  await vscode.commands.executeCommand('execServer.removeEnvironment', { name }).then(undefined, () => undefined);
}

/** Connects `name` and returns its session id (environment/info answered on it). */
async function sessionOf(name: string): Promise<string | undefined> {
  const client = (await (await productApi()).getClient(name)) as { sessionId?: string; environmentInfo(): Promise<unknown> };
  await client.environmentInfo();
  return client.sessionId;
}

/** A port nothing listens on (a server started and stopped). */
async function closedPort(): Promise<number> {
  const s = new RemoteServer();
  await s.start(0);
  const port = s.port;
  await s.stop();
  return port;
}

/** Clicks `button` on the "Exec Server:" question (a dialog or toast) containing every `contains` string. */
async function answer(button: string, contains: string[], giveUpMs?: number) {
  const r = await answerApprovalIfShown(button, { contains, giveUpMs });
  if (!r.clicked) throw new Error(`no question with a "${button}" button containing ${JSON.stringify(contains)}: ${r.error}`);
  return r;
}

/** Starts the command without awaiting it: it resolves only once the quick input flow ends. */
function startAdd(): Promise<unknown> {
  return Promise.resolve(vscode.commands.executeCommand('execServer.addEnvironment'));
}

export function registerUxAddEnvironmentTests(): void {
  test('ux add environment: steps 1/3–3/3 with validation and Back; host:port is saved as ws://, tested, with its token', async () => {
    const server = new RemoteServer();
    const name = uniqueName('ux-add');
    try {
      await server.start(0);
      const done = startAdd();
      let s = await quickInput({ waitTitle: 'Add Environment' });
      assert(s.title.includes('1/3'), `step 1 says 1/3 (title "${s.title}")`);
      assert(!s.back, 'no Back button on the first step');
      s = await quickInput({ waitTitle: '1/3', fill: 'no/slashes' });
      assert(/may only hold/.test(s.message ?? ''), `an invalid name is flagged while typing (message "${s.message}")`);
      s = await quickInput({ waitTitle: '1/3', press: 'Enter' });
      assert(s.title.includes('1/3'), `Enter on an invalid name stays on step 1 (title "${s.title}")`);
      s = await quickInput({ waitTitle: '1/3', fill: name, press: 'Enter' });
      s = await quickInput({ waitTitle: '2/3' });
      assert(s.back, 'step 2 has a Back button');
      assert(!/npx/.test(`${s.placeholder} ${s.message}`), `step 2 does not suggest npx (placeholder "${s.placeholder}")`);
      assert(/host:port/.test(s.message ?? ''), `step 2 explains that host:port is accepted (prompt "${s.message}")`);
      s = await quickInput({ waitTitle: '2/3', fill: 'http://127.0.0.1:1' });
      assert(/ws:\/\//.test(s.message ?? '') && /http/.test(s.message ?? ''), `an http URL is flagged (message "${s.message}")`);
      s = await quickInput({ waitTitle: '2/3', fill: 'sh -c "unterminated' });
      assert(/quote/.test(s.message ?? ''), `an unterminated quote is flagged (message "${s.message}")`);
      await uiScreenshot('add-environment');
      s = await quickInput({ waitTitle: '2/3', clickBack: true });
      s = await quickInput({ waitTitle: '1/3' });
      assertEqual(s.value, name, 'Back returns to step 1 with the name kept');
      await quickInput({ waitTitle: '1/3', press: 'Enter' });
      const hostPort = `127.0.0.1:${server.port}`;
      await quickInput({ waitTitle: '2/3', fill: hostPort, press: 'Enter' });
      s = await quickInput({ waitTitle: '3/3' });
      assertEqual(s.inputType, 'password', 'the token box hides what is typed');
      assert((s.message ?? '').includes(`ws://${hostPort}`), `step 3 names the URL it read from host:port (prompt "${s.message}")`);
      await quickInput({ waitTitle: '3/3', fill: server.token, press: 'Enter' });
      const r = (await done) as { name: string; kind: string } | undefined;
      assertEqual(r, { name, kind: 'websocket' }, 'the command result');
      assertEqual(savedEntry(name), { name, url: `ws://${hostPort}` }, 'the settings entry (no token in it)');
      // (Not api.run: the approval tests may leave a policy that asks.) The server requires the
      // token: a session proves the token was kept (SecretStorage) and sent.
      assert(await sessionOf(name), 'the saved environment connects with its token');
    } finally {
      await remove(name);
      await server.stop();
    }
  }, 90_000);

  test('ux add environment: a failed connection test offers Edit; a quoted command (sh -c "…") then connects and is saved as typed', async () => {
    const name = uniqueName('ux-cmd');
    try {
      const port = await closedPort();
      const done = startAdd();
      await quickInput({ waitTitle: '1/3', fill: name, press: 'Enter' });
      await quickInput({ waitTitle: '2/3', fill: `127.0.0.1:${port}`, press: 'Enter' });
      await quickInput({ waitTitle: '3/3', press: 'Enter' });
      const q = await answer('Edit', [name, 'could not connect'], 25_000);
      assertEqual(q.kind, 'modal', 'the failed test asks in a dialog');
      assert(q.buttons?.includes('Save Anyway'), `it also offers Save Anyway (buttons ${JSON.stringify(q.buttons)})`);
      assertEqual(savedEntry(name), undefined, 'nothing is saved while the test failed');
      const s = await quickInput({ waitTitle: '2/3' });
      assertEqual(s.value, `127.0.0.1:${port}`, 'Edit returns to step 2 with the address kept');
      const { nodePath, repo } = config();
      // The old input split on spaces: sh got `"exec`, … and died ("write EPIPE").
      const inner = `exec '${nodePath}' '${repo}/dist/cli.js' --listen stdio://`;
      const line = `sh -c "${inner}"`;
      await quickInput({ waitTitle: '2/', fill: line, press: 'Enter' });
      const r = (await done) as { name: string; kind: string } | undefined;
      assertEqual(r, { name, kind: 'command' }, 'the command result (no token step for a command)');
      assertEqual(savedEntry(name), { name, command: 'sh', args: ['-c', inner] }, 'the command is split like a shell splits it');
      assert(await sessionOf(name), 'the command environment connects (its command speaks the protocol)');
    } finally {
      await remove(name);
    }
  }, 90_000);

  test('ux add environment: Escape at the token step saves nothing', async () => {
    const name = uniqueName('ux-esc');
    const done = startAdd();
    await quickInput({ waitTitle: '1/3', fill: name, press: 'Enter' });
    await quickInput({ waitTitle: '2/3', fill: 'ws://127.0.0.1:9', press: 'Enter' });
    await quickInput({ waitTitle: '3/3', fill: 'secret', press: 'Escape' });
    assertEqual(await done, undefined, 'the command result after Escape');
    await quickInput({ waitHidden: true });
    assertEqual(savedEntry(name), undefined, 'no settings entry');
    const api = await productApi();
    assert(!api.getEnvironments().some((e) => e.name === name), 'not listed');
  }, 60_000);

  test('ux add environment: a name in use is replaced only after the user agrees', async () => {
    const server = new RemoteServer();
    const name = uniqueName('ux-dup');
    try {
      await server.start(0);
      await vscode.commands.executeCommand('execServer.addEnvironment', { name, url: 'ws://127.0.0.1:9' });
      const done = startAdd();
      await quickInput({ waitTitle: '1/3', fill: name, press: 'Enter' });
      let q = await answer('Cancel', [name, 'already exists']);
      assert(`${q.text} ${q.detail}`.includes('ws://127.0.0.1:9'), `the question shows what would be replaced ("${q.text}" / "${q.detail}")`);
      await quickInput({ waitTitle: '1/3', press: 'Enter' });
      q = await answer('Replace', [name, 'already exists']);
      await quickInput({ waitTitle: '2/3', fill: server.url, press: 'Enter' });
      await quickInput({ waitTitle: '3/3', fill: server.token, press: 'Enter' });
      assertEqual(await done, { name, kind: 'websocket' }, 'the command result');
      assertEqual(savedEntry(name), { name, url: server.url }, 'replaced after Replace');
      const list = vscode.workspace.getConfiguration('execServer').inspect<Entry[]>('environments')?.globalValue ?? [];
      assertEqual(list.filter((e) => e.name === name).length, 1, 'entries with that name');
    } finally {
      await remove(name);
      await server.stop();
    }
  }, 90_000);

  test('ux errors: a failing command run from the Command Palette shows its error once (no "Error running command")', async () => {
    const name = uniqueName('ux-err');
    try {
      const port = await closedPort();
      await vscode.commands.executeCommand('execServer.addEnvironment', { name, url: `ws://127.0.0.1:${port}` });
      void vscode.commands.executeCommand('workbench.action.showCommands');
      await quickInput({ fill: '>Exec Server: Connect to Environment', settleMs: 800 });
      await quickInput({ waitItem: 'Connect to Environment', press: 'Enter' });
      await quickInput({ waitItem: name, fill: name, settleMs: 500 });
      await quickInput({ waitItem: name, press: 'Enter' });
      const texts = await uiTexts('.notification-toast-container .notification-list-item-message', 'refused', 25_000);
      // A second toast would come from the command's own error handling or from VS Code once the
      // command returned: the handler logs "execServer.connect: …" as it returns, and a toast shown
      // after that one is in the list only once every earlier one is.
      await waitFor('the command to return', () => logLines(/execServer\.connect: /).some((l) => l.includes(name)), 15_000, 100);
      const sentinel = uniqueName('ux-err-after');
      void vscode.window.showInformationMessage(sentinel);
      await uiTexts('.notification-toast-container .notification-list-item-message', sentinel, 10_000);
      const all = (await uiTexts('.notification-toast-container .notification-list-item-message')).filter((t) => !t.includes(sentinel));
      // (The "connecting to …" progress toast names it too, but holds no error.)
      const ours = all.filter((t) => t.includes(name) && /cannot|refused/i.test(t));
      assertEqual(ours.length, 1, `toasts naming ${name} (${JSON.stringify(texts)})`);
      assert(!all.some((t) => /Error running command|resulted in an error/i.test(t)), `no "Error running command" toast (toasts: ${JSON.stringify(all)})`);
      // The Command Palette reports a command that rejects in a dialog ("… resulted in an error").
      const dialogs = await uiTexts('.monaco-dialog-box');
      assertEqual(dialogs, [], 'dialogs after the failed command');
    } finally {
      await vscode.commands.executeCommand('notifications.clearAll').then(undefined, () => undefined);
      await remove(name);
    }
  }, 90_000);
}
