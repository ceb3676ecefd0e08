// Terminals that survive (docs/reliability.md) and the Open Remote Folder windows (§2), in the real
// workbench: what an open terminal shows when its connection drops and when its server is killed
// and restarted (the view agrees: "reconnecting", never "failed"; Enter starts the shell again);
// a window reload re-attaching a remote terminal with its earlier output, still interactive, and
// offering to restart one whose server died meanwhile; "Open in New Window" opening another
// window; and the warning before adding a folder reloads a window with Exec Server terminals.
// What a terminal shows is read from the workbench DOM (xterm rows); what it runs, from files.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { isAlive } from '../../support/process';
import { AgentClient } from './agent-client';
import { config } from './config';
import { afterAll, test, testAcrossReload } from './framework';
import { RemoteServer } from './remote-server';
import { newTerminal } from './terminal-tests';
import { quickInput, uiCloseOtherWindows, uiOnOtherWindow, uiPages, uiScreenshot, uiTexts } from './ux-driver';
import { assert, assertEqual, freshDir, productApi, uniqueName, waitFor, waitForFile } from './util';

/** The rows of the terminal shown in the panel (Playwright's :visible: hidden terminals keep theirs). */
const TERMINAL_ROWS = '.terminal .xterm-rows:visible';
const VIEW_ROWS = '[id="workbench.view.extension.execServer"] .monaco-list-row';

/** How often `needle` shows in the terminal rows now. */
async function countInTerminal(needle: string): Promise<number> {
  const texts = await uiTexts(TERMINAL_ROWS);
  return texts.join('\n').split(needle).length - 1;
}

/**
 * xterm draws with WebGL when it can (no text in the DOM): the DOM renderer while these tests
 * read the terminal, as the screenshot harness does. Returns the restore.
 */
async function domRenderer(): Promise<() => Promise<void>> {
  const c = () => vscode.workspace.getConfiguration('terminal.integrated');
  const was = c().inspect('gpuAcceleration')?.globalValue;
  await c().update('gpuAcceleration', 'off', vscode.ConfigurationTarget.Global);
  return async () => {
    await c().update('gpuAcceleration', was, vscode.ConfigurationTarget.Global);
  };
}

async function waitInTerminal(needle: string, atLeast = 1, timeoutMs = 20_000): Promise<void> {
  await waitFor(`"${needle}" ×${atLeast} in the terminal`, async () => (await countInTerminal(needle)) >= atLeast, timeoutMs, 300);
}

/**
 * A CLI server that outlives this extension host (a window reload): its own process group, output
 * to files instead of pipes to us. The state of a test across a reload carries its pid.
 */
interface DetachedServer {
  pid: number;
  url: string;
  port: number;
  token: string;
}

const detached = new Set<number>();
afterAll(() => {
  for (const pid of detached) killServer(pid);
});

async function startDetachedServer(port = 0, token = randomBytes(24).toString('hex')): Promise<DetachedServer> {
  const { repo, nodePath, workDir } = config();
  const dir = path.join(workDir, `detached-${Date.now()}-${randomBytes(3).toString('hex')}`);
  mkdirSync(dir, { recursive: true });
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, token, { mode: 0o600 });
  const outFile = path.join(dir, 'out.log');
  const out = openSync(outFile, 'w');
  const err = openSync(path.join(dir, 'err.log'), 'w');
  const child = spawn(nodePath, [path.join(repo, 'dist', 'cli.js'), '--listen', `ws://127.0.0.1:${port}`, '--ws-auth', 'capability-token', '--ws-token-file', tokenFile], {
    cwd: repo,
    stdio: ['ignore', out, err],
    detached: true,
  });
  closeSync(out);
  closeSync(err);
  child.unref();
  const pid = child.pid!;
  detached.add(pid);
  const url = await waitFor('the detached server to print its URL', () => /ws:\/\/127\.0\.0\.1:\d+/.exec(readFileSync(outFile, 'utf8'))?.[0], 20_000, 100);
  return { pid, url, port: Number(new URL(url).port), token };
}

function killServer(pid: number): void {
  detached.delete(pid);
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

async function stopServer(pid: number): Promise<void> {
  killServer(pid);
  await waitFor(`server ${pid} to exit`, () => !isAlive(pid), 10_000, 100); // a killed server not yet reaped (a zombie) is gone
}

export function registerTerminalSurvivalTests(): void {
  test('survive: a drop and a server killed and restarted under an open terminal — the terminal says so, the view reads reconnecting (never failed), Enter starts the shell again', async () => {
    const server = new RemoteServer();
    const name = uniqueName('survive');
    const states: string[] = [];
    let sampler: ReturnType<typeof setInterval> | undefined;
    const restoreRenderer = await domRenderer();
    try {
      await server.start(0);
      await vscode.commands.executeCommand('execServer.addEnvironment', { name, url: server.url, token: server.token });
      const api = await productApi();
      const dir = freshDir('survive');
      const terminal = await newTerminal(name, dir, `${name}-shell`);
      terminal.sendText(`X=kept-$((20+22)); echo "$X" > ${dir}/one`);
      await waitForFile(path.join(dir, 'one'), (s) => s.includes('kept-42'));
      await vscode.commands.executeCommand('execServer.environments.focus');
      terminal.show(false);
      // The state, sampled every 100 ms for the whole test (the API has no change event).
      sampler = setInterval(() => states.push(String(api.getEnvironments().find((e) => e.name === name)?.state)), 100);

      // 1. The link drops (the server lives): the session resumes, the shell is the same one.
      const client = (await api.getClient(name)) as { sessionId: string; simulateDisconnect?(): void };
      const session = client.sessionId;
      assert(typeof client.simulateDisconnect === 'function', 'the product client can drop its link');
      client.simulateDisconnect!();
      await waitInTerminal('connection lost — reconnecting…', 1, 10_000);
      await waitInTerminal('[Exec Server: reconnected]', 1, 20_000);
      terminal.sendText(`echo "$X-same-shell" > ${dir}/two`);
      await waitForFile(path.join(dir, 'two'), (s) => s.includes('kept-42-same-shell'));
      assertEqual(((await api.getClient(name)) as { sessionId: string }).sessionId, session, 'the session was resumed');

      // 2. The server is killed: the terminal says so at once, the view reads "reconnecting".
      const port = server.port;
      const killedAt = Date.now();
      await server.stop();
      await waitInTerminal('connection lost — reconnecting…', 2, 10_000);
      const noticeMs = Date.now() - killedAt;
      assert(noticeMs < 8_000, `the terminal said so ${noticeMs} ms after the kill (not after the 25 s recovery)`);
      // The view redraws on the connection's state event, which may come a moment after the
      // terminal's notice: wait for this row to read reconnecting (a row stuck on connected fails).
      const rows = await uiTexts(`${VIEW_ROWS}:has-text("${name}")`, 'reconnecting', 10_000);
      const row = rows.find((r) => r.includes(name)) ?? '';
      assert(/reconnecting/.test(row) && !/failed/.test(row), `the view row reads reconnecting: "${row}"`);

      // 3. Back on the same port without the old session: the shell is gone; Enter starts it again.
      await server.start(port);
      await waitInTerminal('press Enter to start it again', 1, 40_000);
      // The toast says what the view says: reconnecting, not failed.
      const toasts = await uiTexts('.notification-toast-container .notification-list-item-message', 'could not be resumed; reconnecting', 20_000);
      const ours = toasts.filter((t) => t.includes(name));
      assert(ours.length > 0 && ours.every((t) => !/failed/i.test(t)), `the toasts about ${name} say reconnecting, never failed: ${JSON.stringify(ours)}`);
      await uiScreenshot('terminal-reconnect');
      await waitFor(`${name} connected again`, () => api.getEnvironments().find((e) => e.name === name)?.state === 'connected', 40_000, 200);
      terminal.sendText(''); // Enter
      terminal.sendText(`echo "restarted-$((1+2))-[$X]" > ${dir}/three`);
      await waitForFile(path.join(dir, 'three'), (s) => s.includes('restarted-3-[]'));
      clearInterval(sampler);
      assert(!states.includes('failed'), `never "failed" while reconnecting (states: ${[...new Set(states)].join(', ')})`);
      assert(states.includes('reconnecting'), `"reconnecting" was shown (states: ${[...new Set(states)].join(', ')})`);
      terminal.dispose();
    } finally {
      clearInterval(sampler);
      await restoreRenderer();
      await vscode.commands.executeCommand('execServer.removeEnvironment', { name }).then(undefined, () => undefined);
      await server.stop();
    }
  }, 150_000);

  test('open remote folder: "Open in New Window" opens the folder in another window and leaves this one as it is', async () => {
    const server = new RemoteServer();
    const name = uniqueName('newwin');
    try {
      await server.start(0);
      await vscode.commands.executeCommand('execServer.addEnvironment', { name, url: server.url, token: server.token });
      const root = freshDir('newwin');
      mkdirSync(path.join(root, 'project'), { recursive: true });
      const before = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString());
      const done = Promise.resolve(vscode.commands.executeCommand('execServer.openRemoteFolder', { environment: name }));
      await quickInput({ waitTitle: `Open Remote Folder — ${name}`, waitBusy: false, waitItem: 'Open this folder' });
      await quickInput({ waitTitle: name, fill: `${root}/project`, press: 'Enter', settleMs: 800 });
      await quickInput({ waitTitle: name, fill: 'Open this', settleMs: 400 });
      await quickInput({ waitTitle: name, press: 'Enter' });
      const where = await quickInput({ waitTitle: `Open ${root}/project`, waitItem: 'New Window' });
      assert(where.items.some((i) => i.includes('This window stays as it is')) || where.items.some((i) => i.includes('New Window')), `the choice is offered (${JSON.stringify(where.items)})`);
      await quickInput({ waitTitle: 'Open', fill: 'New Window', settleMs: 400 });
      await quickInput({ waitTitle: 'Open', press: 'Enter' });
      const uri = String(await done);
      assertEqual(vscode.Uri.parse(uri).path, `${root}/project`, 'the folder the command opened');
      // The other window is the folder's workspace file (code-server: ?workspace=<file>), which names
      // the folder and the default terminal profile (docs/extension.md, Terminals).
      const pages = await uiPages('remote-windows', 20_000);
      assert(pages.length >= 2, `a second window is open (${JSON.stringify(pages)})`);
      const file = decodeURIComponent(/[?&]workspace=([^&#]+)/.exec(pages.find((p) => p.includes('remote-windows'))!)![1]).replace(/^file:\/\//, '');
      const ws = JSON.parse(readFileSync(file, 'utf8')) as { folders: { uri: string }[]; settings: Record<string, unknown> };
      assertEqual(ws.folders.map((f) => f.uri), [uri], 'its folder');
      assertEqual(ws.settings['terminal.integrated.defaultProfile.linux'], 'Exec Server', 'its default terminal profile');
      // This window did not reload (this test is still running in it) and did not change its folders.
      assertEqual((vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString()), before, 'this window\'s folders');
      // The other window shows the remote folder in its Explorer.
      const title = await waitFor('the other window to show the folder', async () => {
        const r = await uiOnOtherWindow({ op: 'text', selector: '.explorer-folders-view, .pane-header', contains: 'project', giveUpMs: 2_000 });
        return r.ok ? r.texts : undefined;
      }, 60_000, 1_000);
      assert(title?.some((t) => /project/i.test(t)), `the other window's Explorer shows the folder (${JSON.stringify(title)})`);
    } finally {
      await uiCloseOtherWindows().catch(() => undefined);
      await vscode.commands.executeCommand('execServer.removeEnvironment', { name }).then(undefined, () => undefined);
      await server.stop();
    }
  }, 150_000);

  test('open remote folder: adding a folder to a window that would reload warns that its Exec Server terminals close, and Cancel changes nothing', async () => {
    // A single-folder window without a workspace file reloads when a folder is added: the other
    // window that "Open in New Window" opens is one. Everything there is done as a user would.
    const server = new RemoteServer();
    const name = uniqueName('warn');
    try {
      await server.start(0);
      await vscode.commands.executeCommand('execServer.addEnvironment', { name, url: server.url, token: server.token });
      const root = freshDir('warn');
      for (const d of ['first', 'second']) mkdirSync(path.join(root, d), { recursive: true });
      // Open in New Window gives a workspace file (adding to it does not reload): the single-folder
      // window is opened as VS Code's own Open Recent would.
      await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.parse(`exec-server://${name}${root}/first`), { forceNewWindow: true });
      await uiPages('folder=', 20_000);
      const other = async (req: Parameters<typeof uiOnOtherWindow>[0], what: string) => {
        const r = await uiOnOtherWindow(req);
        if (!r.ok) throw new Error(`${what}: ${r.error} (${JSON.stringify(r.state ?? r.texts ?? '')})`);
        return r;
      };
      await waitFor('the other window to load', async () => (await uiOnOtherWindow({ op: 'text', selector: '.explorer-folders-view, .pane-header', contains: 'first', giveUpMs: 2_000 })).ok, 90_000, 1_000);
      // The palette lists the commands known when it was filled: in a window still registering its
      // extensions our commands may be missing, so a palette without them is closed and opened again.
      const command = async (title: string) => {
        await waitFor(`"Exec Server: ${title}" in the other window's palette`, async () => {
          await other({ op: 'keys', press: 'F1', settleMs: 600 }, 'open the command palette');
          await other({ op: 'quickInput', fill: `>Exec Server: ${title}`, settleMs: 800 }, `type ${title}`);
          if ((await uiOnOtherWindow({ op: 'quickInput', waitItem: `Exec Server: ${title}`, giveUpMs: 3_000 })).ok) return true;
          await other({ op: 'keys', press: 'Escape', settleMs: 300 }, 'close the palette');
          return false;
        }, 60_000, 500);
        await other({ op: 'quickInput', waitItem: `Exec Server: ${title}`, pick: `Exec Server: ${title}`, settleMs: 800 }, `run ${title}`);
      };
      // An Exec Server terminal in that window.
      await command('New Terminal');
      await other({ op: 'quickInput', waitItem: name, fill: name, settleMs: 400 }, 'the environment question');
      await other({ op: 'quickInput', press: 'Enter', settleMs: 1500 }, 'pick the environment');
      await other({ op: 'text', selector: '.terminal .xterm-rows, .terminal-tabs-entry, .single-terminal-tab', giveUpMs: 20_000 }, 'the terminal');
      // Open Remote Folder → browse → the second folder → Add to This Window.
      await command('Open Remote Folder');
      const start = await other({ op: 'quickInput', waitTitle: 'Open Remote Folder', giveUpMs: 20_000 }, 'the first question');
      if (start.state?.items.some((i) => i.includes(`Browse ${name}`))) {
        await other({ op: 'quickInput', fill: `Browse ${name}`, settleMs: 400 }, 'filter Browse');
        await other({ op: 'quickInput', press: 'Enter', settleMs: 800 }, 'Browse');
      }
      await other({ op: 'quickInput', waitTitle: `Open Remote Folder — ${name}`, waitItem: 'Open this folder', waitBusy: false, giveUpMs: 20_000 }, 'the browser');
      await other({ op: 'quickInput', fill: `${root}/second`, press: 'Enter', settleMs: 800 }, 'type the path');
      await other({ op: 'quickInput', fill: 'Open this', settleMs: 400 }, 'filter');
      await other({ op: 'quickInput', press: 'Enter', settleMs: 800 }, 'open this folder');
      await other({ op: 'quickInput', waitItem: 'Add to This Window', fill: 'Add to This', settleMs: 400 }, 'where');
      await other({ op: 'quickInput', press: 'Enter', settleMs: 1000 }, 'add to this window');
      // The modal warning, naming the terminal count; Cancel.
      const dialog = await other({ op: 'text', selector: '.monaco-dialog-box', contains: 'reloads this window', giveUpMs: 20_000 }, 'the warning');
      const text = (dialog.texts ?? []).join('\n');
      assert(/closes 1 Exec Server terminal/.test(text), `the warning names the terminal that would close: ${text}`);
      assert(/Add and Reload/.test(text) && /Open in New Window/.test(text), `it offers both ways: ${text}`);
      await other({ op: 'keys', press: 'Escape', settleMs: 1000 }, 'cancel');
      const after = await other({ op: 'text', selector: '.explorer-folders-view, .pane-header', giveUpMs: 5_000 }, 'the Explorer after Cancel');
      assert(!(after.texts ?? []).join(' ').includes('second'), `nothing was added (${JSON.stringify(after.texts)})`);
    } finally {
      await uiCloseOtherWindows().catch(() => undefined);
      await vscode.commands.executeCommand('execServer.removeEnvironment', { name }).then(undefined, () => undefined);
      await server.stop();
    }
  }, 180_000);

  interface ReloadState {
    live: DetachedServer & { name: string };
    dying: DetachedServer & { name: string };
    dir: string;
    shellPid: string;
  }

  testAcrossReload<ReloadState>(
    'survive: after a window reload a remote terminal is re-attached with its earlier output and still interactive; one whose server died offers to start again',
    async () => {
      await domRenderer(); // restored by the second half
      const dir = freshDir('reload');
      const live = { ...(await startDetachedServer()), name: uniqueName('reload-live') };
      const dying = { ...(await startDetachedServer()), name: uniqueName('reload-dying') };
      for (const s of [live, dying]) await vscode.commands.executeCommand('execServer.addEnvironment', { name: s.name, url: s.url, token: s.token });
      const t1 = await vscode.commands.executeCommand<vscode.Terminal>('execServer.newTerminal', { environment: live.name, cwd: dir, name: `${live.name}-shell` });
      t1.show(false);
      t1.sendText(`X=kept; echo $$ > ${dir}/pid; echo before-reload-$((3+4))`);
      const shellPid = (await waitForFile(path.join(dir, 'pid'), (s) => /^\d+\s*$/.test(s))).trim();
      await waitInTerminal('before-reload-7', 1, 20_000);
      const t2 = await vscode.commands.executeCommand<vscode.Terminal>('execServer.newTerminal', { environment: dying.name, cwd: dir, name: `${dying.name}-shell` });
      t2.sendText(`echo dying > ${dir}/dying`);
      await waitForFile(path.join(dir, 'dying'));
      // Its server dies; this window still shows the terminal ("reconnecting") when it reloads.
      await stopServer(dying.pid);
      return { live, dying, dir, shellPid };
    },
    async ({ live, dying, dir, shellPid }) => {
      try {
        const api = await productApi();
        const t1 = await waitFor('the re-attached terminal', () => vscode.window.terminals.find((t) => t.name === `${live.name}-shell`), 60_000, 200);
        t1.show(false);
        // Its earlier output is back (from the server's retained output), and it is the same shell.
        await waitInTerminal('before-reload-7', 1, 30_000);
        await uiScreenshot('terminal-reattached');
        t1.sendText(`echo "still-$X-$$" > ${dir}/after`);
        const after = await waitForFile(path.join(dir, 'after'), (s) => s.includes('still-'), 30_000);
        assertEqual(after.trim(), `still-kept-${shellPid}`, 'the same shell process, with its variables');
        assertEqual(api.getEnvironments().find((e) => e.name === live.name)?.state, 'connected', `${live.name} state`);

        // The other one's server died: the terminal says so and offers to start it again.
        const t2 = await waitFor('the dead terminal', () => vscode.window.terminals.find((t) => t.name === `${dying.name}-shell`), 30_000, 200);
        t2.show(false);
        await waitInTerminal('press Enter to start it again', 1, 30_000);
        const back = await startDetachedServer(dying.port, dying.token); // the server is back (same port and token)
        t2.sendText(''); // Enter
        t2.sendText(`echo restarted-$((2+3)) > ${dir}/restarted`);
        await waitForFile(path.join(dir, 'restarted'), (s) => s.includes('restarted-5'), 40_000);
        killServer(back.pid);
        for (const t of [t1, t2]) t.dispose();
      } finally {
        await vscode.workspace.getConfiguration('terminal.integrated').update('gpuAcceleration', undefined, vscode.ConfigurationTarget.Global);
        for (const s of [live, dying]) {
          await vscode.commands.executeCommand('execServer.removeEnvironment', { name: s.name }).then(undefined, () => undefined);
          killServer(s.pid);
        }
      }
    },
    150_000,
  );

  testAcrossReload<{ url: string; token: string }>(
    'survive: the agent endpoint comes back after a window reload on the same URL with the same token (the agent\'s entry stays valid)',
    async () => {
      // Arguments mean Local: without them the command asks which environment when a remote one is connected (a setup test leaves one).
      const r = await vscode.commands.executeCommand<{ url: string; token: string }>('execServer.startAgentEndpoint', { quiet: true });
      assert(r && /^ws:\/\/127\.0\.0\.1:\d+$/.test(r.url), `the endpoint started (${JSON.stringify(r?.url)})`);
      const c = await AgentClient.connect(r.url, r.token);
      c.close();
      return { url: r.url, token: r.token };
    },
    async ({ url, token }) => {
      try {
        // Not started by this test: the reloaded window restarts it by itself.
        const c = await waitFor('the endpoint back on its URL', async () => AgentClient.connect(url, token).catch(() => undefined), 30_000, 500);
        const info = await c.request('environment/info', {});
        assert(typeof info?.shell?.path === 'string', `environment/info answered (${JSON.stringify(info).slice(0, 200)})`);
        c.close();
        const wrong = await AgentClient.open(url, 'x'.repeat(43)).then(() => 'accepted', (e: Error) => e.message);
        assert(/401/.test(wrong), `another token is refused (${wrong})`);
        const again = await vscode.commands.executeCommand<{ url: string; token: string }>('execServer.startAgentEndpoint', { quiet: true });
        assertEqual(again, { url, token }, 'the running endpoint');
      } finally {
        await vscode.commands.executeCommand('execServer.stopAgentEndpoint');
      }
    },
    90_000,
  );
}
