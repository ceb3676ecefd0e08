// Connect to Host terminals that survive a window reload, in the real workbench against a REAL
// sshd (test/support/sshd.ts, started so that it outlives this extension host): Connect to Host
// (the quick pick) to a host running this repository's CLI, a terminal there, a window reload —
// the terminal comes back with its earlier output, is the same shell (its pid, its variables) and
// still takes input; the host's detached server (~/.exec-server/run/<version>-<hostname>.json) is the one
// that served it before the reload.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { binDir, startSshd, stopDetachedSshd } from '../../support/sshd';
import { config } from './config';
import { testAcrossReload } from './framework';
import { quickInput, uiTexts } from './ux-driver';
import { assert, assertEqual, freshDir, productApi, waitFor, waitForFile } from './util';

const TERMINAL_ROWS = '.terminal .xterm-rows:visible';

async function waitInTerminal(needle: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(`"${needle}" in the terminal`, async () => (await uiTexts(TERMINAL_ROWS)).join('\n').includes(needle), timeoutMs, 300);
}

/** xterm draws with WebGL when it can (no text in the DOM): the DOM renderer while the test reads it. */
const gpu = (v: string | undefined) => vscode.workspace.getConfiguration('terminal.integrated').update('gpuAcceleration', v, vscode.ConfigurationTarget.Global);

interface RunRecord {
  pid: number;
  port: number;
}
const runRecord = (home: string): RunRecord | undefined => {
  const version = String((vscode.extensions.getExtension('exec-server.exec-server')!.packageJSON as { version: string }).version);
  try {
    const dir = path.join(home, '.exec-server', 'run');
    const [file] = readdirSync(dir).filter((n) => n.startsWith(`${version}-`) && n.endsWith('.json'));
    return JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as RunRecord;
  } catch {
    return undefined;
  }
};
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

interface State {
  name: string;
  dir: string;
  home: string;
  shellPid: string;
  serverPid: number;
  sshdPid: number;
  sshdDir: string;
}

export function registerSshSurviveTests(): void {
  testAcrossReload<State>(
    'ssh survive: after a window reload a Connect to Host terminal is re-attached with its earlier output and still interactive',
    async () => {
      await gpu('off');
      const work = path.join(config().workDir, `ssh-survive-${process.pid}`);
      const home = path.join(work, 'home');
      mkdirSync(home, { recursive: true });
      const node = config().nodePath;
      const cli = path.join(config().repo, 'dist', 'cli.js');
      const pathBin = binDir(path.join(work, 'path-bin'), { 'exec-server': `#!/bin/sh\nexec ${node} ${cli} "$@"\n` });
      // Outlives this extension host (the reload); killed by the second half, at the latest after 10 min.
      const sshd = await startSshd([{ alias: 'e2e-survive', env: { HOME: home, PATH: `${pathBin}:/usr/bin:/bin` } }], { parent: work, outliveSec: 600 });
      const state: State = { name: 'e2e-survive', dir: freshDir('ssh-survive'), home, shellPid: '', serverPid: 0, sshdPid: sshd.pid, sshdDir: sshd.dir };
      try {
        await vscode.workspace.getConfiguration('execServer').update('ssh.configFile', sshd.configFile, vscode.ConfigurationTarget.Global);
        const done = Promise.resolve(vscode.commands.executeCommand<{ environment: string } | undefined>('execServer.connectToHost'));
        await quickInput({ waitTitle: 'Connect to Host', waitItem: 'e2e-survive', fill: 'e2e-survive' });
        await quickInput({ waitTitle: 'Connect to Host', press: 'Enter' });
        assertEqual((await done)?.environment, state.name, 'connected environment');
        const rec = runRecord(home);
        assert(rec && alive(rec.pid), `a detached server runs on the host: ${JSON.stringify(rec)}`);
        state.serverPid = rec.pid;
        const t = await vscode.commands.executeCommand<vscode.Terminal>('execServer.newTerminal', { environment: state.name, cwd: state.dir, name: 'e2e-survive-shell' });
        t.show(false);
        t.sendText(`X=kept; echo $$ > ${state.dir}/pid; echo before-reload-$((3+4))`);
        state.shellPid = (await waitForFile(path.join(state.dir, 'pid'), (s) => /^\d+\s*$/.test(s))).trim();
        await waitInTerminal('before-reload-7');
        return state;
      } catch (e) {
        await stopDetachedSshd(state.sshdPid, state.sshdDir);
        throw e;
      }
    },
    async (s) => {
      try {
        const t = await waitFor('the re-attached terminal', () => vscode.window.terminals.find((x) => x.name === 'e2e-survive-shell'), 60_000, 200);
        t.show(false);
        // The earlier output is back (the server's retained output) and it is the same shell.
        await waitInTerminal('before-reload-7', 30_000);
        t.sendText(`echo "still-$X-$$" > ${s.dir}/after`);
        const after = await waitForFile(path.join(s.dir, 'after'), (x) => x.includes('still-'), 30_000);
        assertEqual(after.trim(), `still-kept-${s.shellPid}`, 'the same shell process, with its variables');
        t.sendText(`echo typed-after-$((5+6))`);
        await waitInTerminal('typed-after-11');
        assertEqual((await productApi()).getEnvironments().find((e) => e.name === s.name)?.state, 'connected', `${s.name} state`);
        assertEqual(runRecord(s.home)?.pid, s.serverPid, 'the same detached server on the host');
        t.dispose();
      } finally {
        await gpu(undefined);
        await vscode.commands.executeCommand('execServer.removeEnvironment', { name: s.name }).then(undefined, () => undefined);
        await vscode.workspace.getConfiguration('execServer').update('ssh.configFile', undefined, vscode.ConfigurationTarget.Global);
        if (s.serverPid && alive(s.serverPid)) process.kill(s.serverPid, 'SIGTERM');
        await stopDetachedSshd(s.sshdPid, s.sshdDir);
      }
    },
    120_000,
  );
}
