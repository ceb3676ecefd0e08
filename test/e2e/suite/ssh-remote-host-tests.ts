// Connect to Host in the real workbench against a host that is really remote (docs/security.md, "Network paths and proxies"): a real
// sshd in a network + UTS namespace of its own (test/support/netns.ts: its own hostname and
// 127.0.0.1, reached through a veth pair), started so that it outlives this extension host, and
// VS Code's DEFAULT http.proxySupport — whose patched http.request sent the websocket meant for
// the host's 127.0.0.1:PORT to this machine's. The host has Node but no executor: Connect to Host
// → Install → a terminal whose hostname and listeners are the host's → window reload → the same
// shell → the ssh connection killed → resumed, the same shell again (before the reload and after).
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { startSshd, stopDetachedSshd } from '../../support/sshd';
import { answerApprovalIfShown } from './approval';
import { config } from './config';
import { testAcrossReload } from './framework';
import { quickInput, uiTexts } from './ux-driver';
import { assert, assertEqual, freshDir, productApi, waitFor, waitForFile } from './util';

const TERMINAL_ROWS = '.terminal .xterm-rows:visible';
const HOSTNAME = 'exec-e2e-remote';
const ALIAS = 'e2e-remote';

async function waitInTerminal(needle: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(`"${needle}" in the terminal`, async () => (await uiTexts(TERMINAL_ROWS)).join('\n').includes(needle), timeoutMs, 300);
}

/** xterm draws with WebGL when it can (no text in the DOM): the DOM renderer while the test reads it. */
const gpu = (v: string | undefined) => vscode.workspace.getConfiguration('terminal.integrated').update('gpuAcceleration', v, vscode.ConfigurationTarget.Global);

const runRecord = (home: string): { pid: number; port: number } | undefined => {
  try {
    const dir = path.join(home, '.exec-server', 'run');
    const [file] = readdirSync(dir).filter((n) => n.endsWith(`-${HOSTNAME}.json`));
    return JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { pid: number; port: number };
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
/** Listening TCP ports in /proc/net/tcp text (of whichever machine printed it). */
const listening = (text: string) =>
  text
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[3] === '0A')
    .map((f) => parseInt(f[1].split(':')[1], 16));

/** Pids of the extension's `ssh … -W …` children for this host (matched by the test's config file). */
function forwardingSsh(configFile: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (argv.includes('-W') && argv.includes(configFile)) pids.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return pids;
}

/** A forced drop: the ssh carrying the websocket is killed; the extension resumes through a new one, the same shell. */
async function dropAndResume(t: vscode.Terminal, s: State, tag: string): Promise<void> {
  const first = forwardingSsh(s.configFile);
  assertEqual(first.length, 1, `one ssh -W for the host: ${first.join(',')}`);
  process.kill(first[0], 'SIGKILL');
  await waitFor('a new ssh -W', () => forwardingSsh(s.configFile).some((p) => p !== first[0]), 30_000, 200);
  await waitFor('connected again', async () => (await productApi()).getEnvironments().find((e) => e.name === ALIAS)?.state === 'connected', 30_000, 200);
  t.sendText(`echo "resumed-$X-$$" > ${s.dir}/resumed-${tag}`);
  const resumed = await waitForFile(path.join(s.dir, `resumed-${tag}`), (x) => x.includes('resumed-'), 30_000);
  assertEqual(resumed.trim(), `resumed-kept-${s.shellPid}`, `the same shell after the drop (${tag})`);
  t.sendText(`echo typed-${tag}-$((5+6))`);
  await waitInTerminal(`typed-${tag}-11`);
}

interface State {
  dir: string;
  home: string;
  shellPid: string;
  serverPid: number;
  serverPort: number;
  sshdPid: number;
  sshdDir: string;
  configFile: string;
}

export function registerSshRemoteHostTests(): void {
  testAcrossReload<State>(
    'ssh remote host: Connect to Host to an sshd in its own network namespace (default http.proxySupport) installs, opens a terminal on the host, survives a reload and a dropped connection',
    async () => {
      const proxySupport = vscode.workspace.getConfiguration('http').inspect<string>('proxySupport');
      assert(proxySupport?.globalValue === undefined && proxySupport?.workspaceValue === undefined, `http.proxySupport is VS Code's default: ${JSON.stringify(proxySupport)}`);
      await gpu('off');
      const work = path.join(config().workDir, `ssh-remote-${process.pid}`);
      const home = path.join(work, 'home');
      mkdirSync(home, { recursive: true });
      // The host has Node (the one node-pty was built for) and no executor: Connect to Host installs it.
      const sshd = await startSshd([{ alias: ALIAS, env: { HOME: home, PATH: `${path.dirname(config().nodePath)}:/usr/bin:/bin` } }], {
        parent: work,
        outliveSec: 600,
        netns: { hostname: HOSTNAME },
      });
      const state: State = { dir: freshDir('ssh-remote'), home, shellPid: '', serverPid: 0, serverPort: 0, sshdPid: sshd.pid, sshdDir: sshd.dir, configFile: sshd.configFile };
      try {
        await vscode.workspace.getConfiguration('execServer').update('ssh.configFile', sshd.configFile, vscode.ConfigurationTarget.Global);
        const done = Promise.resolve(vscode.commands.executeCommand<{ environment: string; installed: boolean } | undefined>('execServer.connectToHost'));
        await quickInput({ waitTitle: 'Connect to Host', waitItem: ALIAS, fill: ALIAS });
        await quickInput({ waitTitle: 'Connect to Host', press: 'Enter' });
        const asked = await answerApprovalIfShown('Install', { contains: ['no exec-server found', ALIAS], giveUpMs: 40_000 });
        assert(asked.clicked, `the install question was shown and answered: ${asked.error}`);
        const r = await done;
        assertEqual(r?.environment, ALIAS, 'connected environment');
        assertEqual(r?.installed, true, 'the CLI was installed on the host');
        const rec = await waitFor('the detached server on the host', () => runRecord(home), 20_000, 200);
        assert(alive(rec.pid), `a detached server runs on the host: ${JSON.stringify(rec)}`);
        state.serverPid = rec.pid;
        state.serverPort = rec.port;
        assert(!listening(readFileSync('/proc/net/tcp', 'utf8')).includes(rec.port), `this machine does not listen on the host's port ${rec.port}`);
        const t = await vscode.commands.executeCommand<vscode.Terminal>('execServer.newTerminal', { environment: ALIAS, cwd: state.dir, name: 'e2e-remote-shell' });
        t.show(false);
        t.sendText(`X=kept; hostname > ${state.dir}/hostname; cat /proc/net/tcp > ${state.dir}/tcp; echo $$ > ${state.dir}/pid; echo before-reload-$((3+4))`);
        state.shellPid = (await waitForFile(path.join(state.dir, 'pid'), (s) => /^\d+\s*$/.test(s))).trim();
        assertEqual(readFileSync(path.join(state.dir, 'hostname'), 'utf8').trim(), HOSTNAME, "the terminal's hostname is the host's");
        assert(listening(readFileSync(path.join(state.dir, 'tcp'), 'utf8')).includes(rec.port), "the terminal's listeners are the host's (its detached server's port)");
        await waitInTerminal('before-reload-7');
        await dropAndResume(t, state, 'before-reload');
        return state;
      } catch (e) {
        await stopDetachedSshd(state.sshdPid, state.sshdDir);
        throw e;
      }
    },
    async (s) => {
      try {
        const t = await waitFor('the re-attached terminal', () => vscode.window.terminals.find((x) => x.name === 'e2e-remote-shell'), 60_000, 200);
        t.show(false);
        await waitInTerminal('before-reload-7', 30_000);
        t.sendText(`echo "still-$X-$$" > ${s.dir}/after`);
        const after = await waitForFile(path.join(s.dir, 'after'), (x) => x.includes('still-'), 30_000);
        assertEqual(after.trim(), `still-kept-${s.shellPid}`, 'the same shell process after the reload, with its variables');
        assertEqual(runRecord(s.home)?.pid, s.serverPid, 'the same detached server on the host');
        await dropAndResume(t, s, 'after-reload');
        t.dispose();
      } finally {
        await gpu(undefined);
        await vscode.commands.executeCommand('execServer.removeEnvironment', { name: ALIAS }).then(undefined, () => undefined);
        await vscode.workspace.getConfiguration('execServer').update('ssh.configFile', undefined, vscode.ConfigurationTarget.Global);
        if (s.serverPid && alive(s.serverPid)) process.kill(s.serverPid, 'SIGTERM');
        await stopDetachedSshd(s.sshdPid, s.sshdDir);
      }
    },
    180_000,
  );
}
