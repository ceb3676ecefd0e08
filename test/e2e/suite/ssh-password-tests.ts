// Connect to Host to a password-only account (docs/extension.md, "First steps in detail"), in the real workbench: a real sshd on
// a host of its own (network + UTS namespace, test/support/netns.ts) that accepts no key, only
// the account's password — a password of this sshd alone (test/support/sshd.ts `password`: a
// mount namespace where /etc/shadow is a copy with the test's hash). ssh's question comes up as
// a masked VS Code input box titled with the host; the password typed there logs in, the CLI is
// installed and the environment runs on the host (its hostname) — one question for all the ssh
// logins of the connect (probe, install, the detached server, ssh -W). The password is in no
// process's argv or environment afterwards. On the old code (BatchMode=yes) the login was refused.
// Then Open Remote Folder and Find in Files on that host (its own files, searched there).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { startSshd } from '../../support/sshd';
import { answerApprovalIfShown } from './approval';
import { config } from './config';
import { test } from './framework';
import { quickInput } from './ux-driver';
import { assert, assertEqual, productApi, waitFor } from './util';
import { processesHolding } from '../../support/security';

const ALIAS = 'e2e-password';
const HOSTNAME = 'exec-e2e-pw';

type Client = {
  startProcess(o: { argv: string[]; cwd: string; envPolicy?: Record<string, unknown> }): Promise<{ onOutput(f: (e: { data: Uint8Array }) => void): unknown; exited: Promise<number>; closed: Promise<void> }>;
};


export function registerSshPasswordTests(): void {
  test('ssh password: a password-only host on its own network asks in a masked input box; the password logs in, installs and runs there; a folder of it opens and is searched there', async () => {
    const work = path.join(config().workDir, `ssh-password-${process.pid}`);
    const home = path.join(work, 'home');
    mkdirSync(home, { recursive: true });
    const password = `e2e-${Math.random().toString(36).slice(2)}-Pw7`;
    const sshd = await startSshd([{ alias: ALIAS, passwordLogin: true }], {
      parent: work,
      netns: { hostname: HOSTNAME },
      password: { password, env: { HOME: home, PATH: `${path.dirname(config().nodePath)}:/usr/bin:/bin` } },
    });
    try {
      await vscode.workspace.getConfiguration('execServer').update('ssh.configFile', sshd.configFile, vscode.ConfigurationTarget.Global);
      const done = Promise.resolve(vscode.commands.executeCommand<{ environment: string; installed: boolean } | undefined>('execServer.connectToHost'));
      await quickInput({ waitTitle: 'Connect to Host', waitItem: ALIAS, fill: ALIAS });
      await quickInput({ waitTitle: 'Connect to Host', press: 'Enter' });
      const box = await quickInput({ waitTitle: `ssh ${ALIAS}`, giveUpMs: 40_000 });
      assertEqual(box.inputType, 'password', `the input box is masked: ${JSON.stringify(box)}`);
      assert(/password/i.test(box.message ?? ''), `ssh's own prompt is shown: ${JSON.stringify(box)}`);
      await quickInput({ waitTitle: `ssh ${ALIAS}`, fill: password, press: 'Enter' });
      const asked = await answerApprovalIfShown('Install', { contains: ['no exec-server found', ALIAS], giveUpMs: 60_000 });
      assert(asked.clicked, `logged in: the install question was shown and answered: ${asked.error}`);
      const r = await done;
      assertEqual(r?.environment, ALIAS, 'connected environment');
      assertEqual(r?.installed, true, 'installed over the password login');
      const client = (await (await productApi()).getClient(ALIAS)) as Client;
      const p = await client.startProcess({ argv: ['/bin/sh', '-c', 'hostname; echo "$HOME"'], cwd: '/', envPolicy: { inherit: 'all', ignoreDefaultExcludes: false, exclude: [], set: {}, includeOnly: [] } });
      let out = '';
      p.onOutput((e) => (out += Buffer.from(e.data).toString()));
      assertEqual(await p.exited, 0, `exit code (${out})`);
      await p.closed;
      assertEqual(out.trim().split('\n'), [HOSTNAME, home], 'a process runs on the host');
      assertEqual(processesHolding(password), [], 'the password is in no process\'s argv or environment');

      // Open Remote Folder and search on that host: the folder joins this window, Find in Files
      // runs on the host (its grep/rg, its files), a row opens the host's file.
      const proj = path.join(home, 'proj');
      const needle = `needle${Date.now().toString(36)}`;
      mkdirSync(path.join(proj, 'src'), { recursive: true });
      writeFileSync(path.join(proj, 'src', 'main.c'), `int main(void) {\n  return 0; /* ${needle} */\n}\n`);
      await vscode.commands.executeCommand('execServer.openRemoteFolder', { environment: ALIAS, path: proj });
      const folder = (await waitFor('the host folder in the workspace', () => vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'exec-server' && f.uri.path === proj), 30_000)).uri;
      try {
        const found = (await vscode.commands.executeCommand('execServer.findInFiles', { query: needle, folder: folder.toString() })) as { rows: { uri: string; line: number; column: number }[]; summary: string; failure?: string };
        assert(!found.failure, `the search ran on the host (${found.summary})`);
        assertEqual(found.rows.map((r) => [vscode.Uri.parse(r.uri).path, r.line]), [[path.join(proj, 'src', 'main.c'), 2]], `the host's match (${found.summary})`);
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(found.rows[0].uri));
        assert(doc.getText().includes(needle), 'the row opens the host\'s file');
      } finally {
        const i = (vscode.workspace.workspaceFolders ?? []).findIndex((f) => f.uri.scheme === 'exec-server' && f.uri.path === proj);
        if (i >= 0) vscode.workspace.updateWorkspaceFolders(i, 1);
        await vscode.commands.executeCommand('workbench.action.closeAllEditors').then(undefined, () => undefined);
      }
    } finally {
      await vscode.commands.executeCommand('execServer.removeEnvironment', { name: ALIAS }).then(undefined, () => undefined);
      await vscode.workspace.getConfiguration('execServer').update('ssh.configFile', undefined, vscode.ConfigurationTarget.Global);
      await sshd.stop();
    }
  }, 180_000);
}
