// Connect to Container… in the real workbench against REAL podman (Debian's podman + runc; the
// container is made from this machine's root file system with `--rootfs /:O`, so no image is
// pulled and it has this machine's Node; the flags these machines need to CREATE a container
// are the test's, test/support/podman.ts — the product runs only exec/cp/inspect):
// the quick pick lists the container, the install modal is answered "Install" (the VSIX's CLI
// is copied in with podman cp), a terminal of the environment runs inside (the container's
// hostname and pid namespace), the status bar's environment indicator names it, a folder of the
// container opens in the Explorer, stopping the
// container makes the terminal say so, starting it again reconnects (a new shell runs inside).
import { readlinkSync } from 'node:fs';
import * as vscode from 'vscode';
import { execIn, havePodman, removeContainer, startContainer, startTestContainer, stopContainer } from '../../support/podman';
import { answerApprovalIfShown, findNotice } from './approval';
import { afterAll, test } from './framework';
import { quickInput, uiScreenshot, uiTexts } from './ux-driver';
import { assert, assertEqual, productApi, waitFor } from './util';

type Result = { environment: string; executor: string; installed: boolean } | undefined;
const NAME = `es-e2e-ctr-${process.pid}`;
const HOSTNAME = 'es-e2e-ctr';
const ENV = `podman-${NAME}`;
const TERMINAL_ROWS = '.terminal .xterm-rows:visible';
const gpu = (v: string | undefined) => vscode.workspace.getConfiguration('terminal.integrated').update('gpuAcceleration', v, vscode.ConfigurationTarget.Global);

async function waitInTerminal(needle: string | RegExp, timeoutMs = 30_000): Promise<string> {
  return waitFor(`${needle} in the terminal`, async () => {
    const text = (await uiTexts(TERMINAL_ROWS)).join('\n');
    return (typeof needle === 'string' ? text.includes(needle) : needle.test(text)) ? text : undefined;
  }, timeoutMs, 300);
}

/** A file the terminal wrote inside the container (its /tmp is the container's overlay, not this machine's). */
async function fileInContainer(p: string, accept: (s: string) => boolean, timeoutMs = 30_000): Promise<string> {
  return waitFor(`${p} in the container`, () => {
    try {
      const s = execIn(NAME, ['cat', p]);
      return accept(s) ? s : undefined;
    } catch {
      return undefined;
    }
  }, timeoutMs, 300);
}

const state = async () => (await productApi()).getEnvironments().find((e) => e.name === ENV)?.state;

export function registerContainerTests(): void {
  test('container connect: Connect to Container → install → terminal inside (hostname, pid namespace) → Explorer folder → stop (the terminal says so) → start (reconnect)', async () => {
    if (!havePodman()) throw new Error('podman and runc are not installed (node scripts/tools/install.mjs podman runc)');
    await gpu('off');
    let folder: vscode.Uri | undefined;
    try {
      startTestContainer(NAME, { hostname: HOSTNAME });
      execIn(NAME, ['sh', '-c', 'mkdir -p /srv/e2e-ctr && echo inside > /srv/e2e-ctr/only-in-the-container.txt']);

      const done = Promise.resolve(vscode.commands.executeCommand<Result>('execServer.connectToContainer'));
      const q = await quickInput({ waitTitle: 'Connect to Container', waitItem: NAME });
      assert(q.items.some((i) => i.includes(NAME)), `the running container is listed: ${JSON.stringify(q.items)}`);
      await uiScreenshot('connect-to-container');
      await quickInput({ waitTitle: 'Connect to Container', fill: NAME, settleMs: 400 });
      await quickInput({ waitTitle: 'Connect to Container', press: 'Enter' });
      const asked = await answerApprovalIfShown('Install', { contains: ['no exec-server found', NAME], giveUpMs: 60_000 });
      assert(asked.clicked, `the install question was shown and answered: ${asked.error}`);
      assert(/Node v\d+/.test(asked.text ?? ''), `it names the container's Node: ${asked.text}`);
      assert(/podman cp/.test(asked.detail ?? ''), `it says how the CLI gets there: ${asked.detail}`);
      const r = await done;
      assertEqual(r?.environment, ENV, 'environment name');
      assertEqual(r?.executor, 'installed', 'the CLI installed in the container');
      assertEqual(r?.installed, true, 'installed');
      const saved = (vscode.workspace.getConfiguration('execServer').inspect<{ name: string; command?: string; args?: string[] }[]>('environments')?.globalValue ?? []).find((e) => e.name === ENV);
      assert(saved?.command?.endsWith('podman') && JSON.stringify(saved.args?.slice(0, 4)) === JSON.stringify(['exec', '-i', '--', NAME]), `saved as a podman exec environment: ${JSON.stringify(saved)}`);
      assertEqual(await state(), 'connected', 'state');
      // The current-environment indicator names the container's environment.
      const status = await uiTexts('[id$="execServer.currentEnvironment"]', ENV);
      assert(status.some((s) => s.includes(ENV)), `the status bar names ${ENV}: ${JSON.stringify(status)}`);

      // A terminal: the shell runs inside the container.
      const t = await vscode.commands.executeCommand<vscode.Terminal>('execServer.newTerminal', { environment: ENV, cwd: '/', name: 'e2e-container-shell' });
      t.show(false);
      t.sendText('{ hostname; readlink /proc/self/ns/pid; } > /tmp/e2e-where; echo in-container-$((6*7))');
      await waitInTerminal('in-container-42');
      const [host, ns] = (await fileInContainer('/tmp/e2e-where', (s) => s.split('\n').length >= 3)).trim().split('\n');
      assertEqual(host, HOSTNAME, "the terminal's hostname is the container's");
      assert(/^pid:\[\d+\]$/.test(ns) && ns !== readlinkSync('/proc/self/ns/pid'), `its pid namespace is the container's (${ns}, this machine: ${readlinkSync('/proc/self/ns/pid')})`);

      // A folder of the container in the Explorer.
      const uri = await vscode.commands.executeCommand<string | undefined>('execServer.openRemoteFolder', { environment: ENV, path: '/srv/e2e-ctr' });
      folder = (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.toString() === uri)?.uri;
      assert(folder, `the folder is in the workspace: ${uri}`);
      await vscode.commands.executeCommand('workbench.view.explorer');
      await vscode.commands.executeCommand('revealInExplorer', vscode.Uri.joinPath(folder, 'only-in-the-container.txt'));
      await uiTexts('.explorer-folders-view .monaco-list-row', 'only-in-the-container.txt', 30_000);
      await uiScreenshot('container-explorer');

      // Stop: the terminal says the container stopped.
      t.show(false);
      stopContainer(NAME);
      const said = await waitInTerminal(new RegExp(`podman container "${NAME}" stopped`), 30_000);
      assert(/press Enter to start it again/.test(said), `the terminal offers to start the shell again: ${said.slice(-300)}`);
      const notice = await findNotice({ contains: [NAME, 'stopped'], giveUpMs: 20_000 });
      assert(notice.found, `a notification announces the stop: ${notice.error}`);
      await uiScreenshot('container-stopped');

      // Start: reconnected; Enter starts a new shell in the container.
      startContainer(NAME);
      await waitFor(`${ENV} connected again`, async () => ((await state()) === 'connected' ? true : undefined), 60_000, 500);
      t.sendText('', true);
      await waitInTerminal(/\$ $|# $|\$\s*$|#\s*$/m, 30_000).catch(() => undefined);
      t.sendText('hostname > /tmp/e2e-after; echo again-$((5+6))');
      await waitInTerminal('again-11', 30_000);
      assertEqual((await fileInContainer('/tmp/e2e-after', (s) => s.trim() !== '')).trim(), HOSTNAME, 'the new shell runs in the restarted container');
      t.dispose();
    } finally {
      await gpu(undefined);
      if (folder) {
        const i = (vscode.workspace.workspaceFolders ?? []).findIndex((f) => f.uri.toString() === folder!.toString());
        if (i >= 0) vscode.workspace.updateWorkspaceFolders(i, 1);
      }
      await cleanup();
    }
  }, 240_000);

  afterAll(cleanup);
}

async function cleanup(): Promise<void> {
  await vscode.commands.executeCommand('execServer.removeEnvironment', { name: ENV }).then(undefined, () => undefined);
  removeContainer(NAME);
}
