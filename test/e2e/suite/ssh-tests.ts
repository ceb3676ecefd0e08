// Connect to Host… in the real workbench against a REAL sshd (test/support/sshd.ts: Debian
// openssh-server on 127.0.0.1, throwaway keys, execServer.ssh.configFile = its `ssh -F`
// config): the quick pick lists the config's hosts, picking one with an exec-server on PATH
// saves and connects an ssh command environment (in the view, the status indicator names it);
// a typed user@host:port with no executor offers the install (a modal answered "Install"),
// copies the VSIX's CLI + node-pty into the host's temp HOME and runs through it; a refused key
// shows one error naming the cause; the remote indicator's menu holds Connect to Host….
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { binDir, startSshd, whichOrThrow, type TestSshd } from '../../support/sshd';
import { answerApprovalIfShown, findNotice, setExecServerSetting } from './approval';
import { config } from './config';
import { afterAll, test } from './framework';
import { quickInput, uiClick, uiScreenshot, uiTexts } from './ux-driver';
import { assert, assertEqual, productApi } from './util';

type Result = { environment: string; executor: string; installed: boolean } | undefined;
type Entry = { name: string; command?: string; args?: string[] };

let sshd: TestSshd | undefined;
let work = '';
const home = (n: string) => path.join(work, `home-${n}`);


async function ensureSshd(): Promise<TestSshd> {
  if (sshd) return sshd;
  work = path.join(config().workDir, `ssh-${process.pid}`);
  mkdirSync(work, { recursive: true });
  const node = config().nodePath;
  const cli = path.join(config().repo, 'dist', 'cli.js');
  const pathBin = binDir(path.join(work, 'path-bin'), { 'exec-server': `#!/bin/sh\nexec ${node} ${cli} "$@"\n` });
  // The "fresh" host: Node (the one node-pty was built for) but no executor.
  const fresh = `${path.dirname(node)}:/usr/bin:/bin`;
  // A host without Node: a PATH of only what the probe script itself uses.
  const noNode = binDir(path.join(work, 'bin-no-node'), Object.fromEntries(['sh', 'uname', 'grep', 'ls', 'head', 'dirname', 'ldd'].map((p) => [p, whichOrThrow(p)])));
  for (const h of ['devbox', 'fresh', 'bad', 'newkey', 'nonode', 'outdated']) mkdirSync(home(h), { recursive: true });
  // A CLI "installed earlier by an older extension": the launcher answers --version with 0.0.1.
  binDir(path.join(home('outdated'), '.exec-server', 'bin'), {
    'exec-server': `#!/bin/sh\nif [ "$1" = --version ]; then echo "exec-server 0.0.1"; exit 0; fi\nexec ${node} ${cli} "$@"\n`,
  });
  sshd = await startSshd(
    [
      { alias: 'e2e-devbox', env: { HOME: home('devbox'), PATH: `${pathBin}:/usr/bin:/bin` } },
      { alias: 'e2e-fresh', env: { HOME: home('fresh'), PATH: fresh } },
      { alias: 'e2e-badkey', badKey: true },
      { alias: 'e2e-newkey', unknownHostKey: true, env: { HOME: home('newkey'), PATH: `${pathBin}:/usr/bin:/bin` } },
      { alias: 'e2e-nonode', env: { HOME: home('nonode'), PATH: noNode } },
      { alias: 'e2e-outdated', env: { HOME: home('outdated'), PATH: fresh } },
    ],
    { parent: work },
  );
  // A typed user@127.0.0.1:port uses these defaults (ssh matches Host against the typed name).
  appendFileSync(
    sshd.configFile,
    `\nHost 127.0.0.1\n  IdentityFile ${path.join(sshd.dir, 'key-e2e-fresh')}\n  IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile ${path.join(sshd.dir, 'known_hosts')}\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n`,
  );
  await setExecServerSetting('ssh.configFile', sshd.configFile);
  return sshd;
}

function savedEntry(name: string): Entry | undefined {
  const list = vscode.workspace.getConfiguration('execServer').inspect<Entry[]>('environments')?.globalValue ?? [];
  return list.find((e) => e.name === name);
}

type Client = {
  startProcess(o: { argv: string[]; cwd: string; envPolicy?: Record<string, unknown>; tty?: boolean; rows?: number; cols?: number }): Promise<{
    onOutput(f: (e: { data: Uint8Array }) => void): unknown;
    exited: Promise<number>;
    closed: Promise<void>;
  }>;
};

/** Runs `script` on the environment's connection (the user's own client: no approval gate) with the login's environment; its output. */
async function runIn(env: string, script: string, tty = false): Promise<string> {
  const client = (await (await productApi()).getClient(env)) as Client;
  const p = await client.startProcess({ argv: ['/bin/sh', '-c', script], cwd: '/', envPolicy: { inherit: 'all', ignoreDefaultExcludes: false, exclude: [], set: {}, includeOnly: [] }, tty, rows: 24, cols: 80 });
  let out = '';
  p.onOutput((e) => (out += Buffer.from(e.data).toString()));
  assertEqual(await p.exited, 0, `exit code of ${script} in ${env} (output ${out})`);
  await p.closed;
  return out;
}

export function registerSshTests(): void {
  test('ssh connect to host: the quick pick lists the ssh config hosts; picking one with exec-server on PATH saves and connects it', async () => {
    const s = await ensureSshd();
    const done = Promise.resolve(vscode.commands.executeCommand<Result>('execServer.connectToHost'));
    let q = await quickInput({ waitTitle: 'Connect to Host', waitItem: 'e2e-devbox' });
    assert(q.items.some((i) => i.includes('e2e-devbox') && i.includes(`127.0.0.1:${s.port}`)), `the alias with its HostName:Port is listed: ${JSON.stringify(q.items)}`);
    assert(q.items.some((i) => i.includes('e2e-fresh')), 'every concrete Host is listed');
    await uiScreenshot('connect-to-host');
    await quickInput({ waitTitle: 'Connect to Host', fill: 'bad host name' });
    q = await quickInput({ waitTitle: 'Connect to Host', waitItem: 'space' });
    assert(q.items.some((i) => /holds a space/.test(i)), `an invalid typed host says why: ${JSON.stringify(q.items)}`);
    await quickInput({ waitTitle: 'Connect to Host', fill: 'e2e-devbox', press: 'Enter' });
    const r = await done;
    assertEqual(r?.environment, 'e2e-devbox', 'environment name');
    assertEqual(r?.executor, 'exec-server', 'executor found on PATH');
    assertEqual(r?.installed, false, 'nothing installed');
    const entry = savedEntry('e2e-devbox');
    assert(entry?.command?.endsWith('ssh') && entry.args?.includes('BatchMode=yes') && entry.args.includes(s.configFile), `saved as an ssh command environment: ${JSON.stringify(entry)}`);
    assert(entry!.args!.at(-1)!.endsWith('exec-server --listen stdio://'), `runs exec-server --listen stdio://: ${entry!.args!.at(-1)}`);
    assertEqual((await productApi()).getEnvironments().find((e) => e.name === 'e2e-devbox')?.state, 'connected', 'state');
    assertEqual((await runIn('e2e-devbox', 'echo "$HOME"')).trim(), home('devbox'), 'a process runs on the host (its HOME)');
    const status = await uiTexts('[id$="execServer.currentEnvironment"]', 'e2e-devbox');
    assert(status.some((t) => t.includes('e2e-devbox')), `the status indicator names the environment: ${JSON.stringify(status)}`);
    await uiTexts('.monaco-list-row', 'e2e-devbox');
  }, 90_000);

  test('ssh connect to host: typed user@host:port with no executor offers the install; the CLI lands in ~/.exec-server and serves a PTY', async () => {
    const s = await ensureSshd();
    const done = Promise.resolve(vscode.commands.executeCommand<Result>('execServer.connectToHost'));
    const typed = `${s.user}@127.0.0.1:${s.port}`;
    await quickInput({ waitTitle: 'Connect to Host', fill: typed });
    await quickInput({ waitTitle: 'Connect to Host', waitItem: typed, press: 'Enter' });
    const asked = await answerApprovalIfShown('Install', { contains: ['no exec-server found', typed], giveUpMs: 40_000 });
    assert(asked.clicked, `the install question was shown and answered: ${asked.error}`);
    assert(/Linux/.test(asked.text ?? '') && /Node v\d+/.test(asked.text ?? ''), `it names the host's OS and Node: ${asked.text}`);
    assert(/~\/\.exec-server/.test(asked.detail ?? ''), `it says where the CLI goes: ${asked.detail}`);
    const r = await done;
    const name = `${s.user}-127.0.0.1-${s.port}`;
    assertEqual(r?.environment, name, 'environment name');
    assertEqual(r?.executor, 'installed', 'the installed CLI');
    assertEqual(r?.installed, true, 'installed');
    const version = String((vscode.extensions.getExtension('exec-server.exec-server')!.packageJSON as { version: string }).version);
    assert(existsSync(path.join(home('fresh'), '.exec-server', version, 'cli.js')), 'cli.js copied from the VSIX');
    assert(existsSync(path.join(home('fresh'), '.exec-server', version, 'node_modules', 'node-pty', 'build', 'Release', 'pty.node')), 'node-pty copied');
    assertEqual((await runIn(name, 'echo "$HOME"')).trim(), home('fresh'), 'a process runs through the installed CLI');
    // A PTY through it (node-pty copied from the VSIX works on the host).
    assert(/pty-yes/.test(await runIn(name, 'test -t 0 && echo pty-yes', true)), 'a PTY process runs on the host');
  }, 120_000);

  test('ssh connect to host: a CLI installed by an older version is offered an update; Update replaces it', async () => {
    await ensureSshd();
    const done = Promise.resolve(vscode.commands.executeCommand<Result>('execServer.connectToHost'));
    await quickInput({ waitTitle: 'Connect to Host', waitItem: 'e2e-outdated', fill: 'e2e-outdated' });
    await quickInput({ waitTitle: 'Connect to Host', press: 'Enter' });
    const version = String((vscode.extensions.getExtension('exec-server.exec-server')!.packageJSON as { version: string }).version);
    const asked = await answerApprovalIfShown('Update', { contains: ['e2e-outdated', 'exec-server 0.0.1', `carries ${version}`], giveUpMs: 20_000 });
    assert(asked.clicked, `the update question was shown and answered: ${asked.error}`);
    assert(asked.buttons?.includes('Use Installed'), `it offers to keep the installed one: ${JSON.stringify(asked.buttons)}`);
    const r = await done;
    assertEqual(r?.executor, 'installed', 'executor');
    assertEqual(r?.installed, true, 'updated');
    const launcher = readFileSync(path.join(home('outdated'), '.exec-server', 'bin', 'exec-server'), 'utf8');
    assert(launcher.includes(path.join(home('outdated'), '.exec-server', version, 'cli.js')), `the launcher now starts ${version}: ${launcher}`);
    assertEqual((await runIn('e2e-outdated', 'echo "$HOME"')).trim(), home('outdated'), 'a process runs through the updated CLI');
  }, 90_000);

  test('ssh connect to host: a refused key shows one error naming the cause; nothing is saved', async () => {
    await ensureSshd();
    const done = Promise.resolve(vscode.commands.executeCommand<Result>('execServer.connectToHost'));
    await quickInput({ waitTitle: 'Connect to Host', waitItem: 'e2e-badkey', fill: 'e2e-badkey' });
    await quickInput({ waitTitle: 'Connect to Host', press: 'Enter' });
    assertEqual(await done, undefined, 'the command reports and returns');
    const shown = await findNotice({ contains: ['refused the login'], giveUpMs: 20_000 });
    assert(shown.found, `an error toast names the cause: ${shown.error}`);
    assert(/Permission denied/.test(shown.text ?? ''), `with ssh's words: ${shown.text}`);
    assert(!/ssh: ssh:/.test(shown.text ?? ''), `ssh quoted once: ${shown.text}`);
    for (const b of ['Retry', 'Open SSH Config', 'Show Log']) assert(shown.buttons?.includes(b), `the error offers ${b}: ${JSON.stringify(shown.buttons)}`);
    await uiScreenshot('ssh-error-actions');
    const twice = await findNotice({ contains: ['Error running command'], giveUpMs: 3_000 });
    assert(!twice.found, `no second "Error running command" toast: ${twice.text}`);
    assertEqual(savedEntry('e2e-badkey'), undefined, 'nothing saved');
  }, 60_000);

  test('ssh connect to host: a host without Node is refused with the reason, nothing installed or saved', async () => {
    await ensureSshd();
    const done = Promise.resolve(vscode.commands.executeCommand<Result>('execServer.connectToHost'));
    await quickInput({ waitTitle: 'Connect to Host', waitItem: 'e2e-nonode', fill: 'e2e-nonode' });
    await quickInput({ waitTitle: 'Connect to Host', press: 'Enter' });
    assertEqual(await done, undefined, 'the command reports and returns');
    const shown = await findNotice({ contains: ['no Node.js on the host', 'bin-no-node'], giveUpMs: 20_000 });
    assert(shown.found, `an error names the missing Node and the host's PATH: ${shown.error}`);
    assert(/Node 20 or newer/.test(shown.text ?? ''), `and the version needed: ${shown.text}`);
    assert(!existsSync(path.join(home('nonode'), '.exec-server')), 'nothing was copied to the host');
    assertEqual(savedEntry('e2e-nonode'), undefined, 'nothing saved');
  }, 60_000);

  test('ssh connect to host: a host key seen for the first time shows its fingerprint and is recorded only after "Trust and Connect"', async () => {
    const s = await ensureSshd();
    const knownHosts = path.join(s.dir, 'known_hosts-e2e-newkey');
    assertEqual(readFileSync(knownHosts, 'utf8'), '', 'nothing recorded before');
    const done = Promise.resolve(vscode.commands.executeCommand<Result>('execServer.connectToHost'));
    await quickInput({ waitTitle: 'Connect to Host', waitItem: 'e2e-newkey', fill: 'e2e-newkey' });
    await quickInput({ waitTitle: 'Connect to Host', press: 'Enter' });
    const asked = await answerApprovalIfShown('Trust and Connect', { contains: ['e2e-newkey', 'not seen before'], giveUpMs: 20_000 });
    assert(asked.clicked, `the trust question was shown and answered: ${asked.error}`);
    const print = /SHA256:\S+/.exec(spawnSync('ssh-keygen', ['-lf', path.join(s.dir, 'host_key.pub')], { encoding: 'utf8' }).stdout)?.[0];
    assert(!!print && (asked.detail ?? '').includes(print), `the question shows the server key's fingerprint ${print}: ${asked.detail}`);
    const r = await done;
    assertEqual(r?.environment, 'e2e-newkey', 'connected');
    assertEqual(readFileSync(knownHosts, 'utf8').includes('ssh-ed25519'), true, 'the key is recorded after the answer');
    assertEqual((await runIn('e2e-newkey', 'echo "$HOME"')).trim(), home('newkey'), 'a process runs on the host');
  }, 60_000);

  test('ssh connect to host: a click on the current-environment indicator opens the remote menu, which offers Connect to Host…', async () => {
    await uiClick('[id$="execServer.currentEnvironment"]');
    const q = await quickInput({ waitItem: 'Connect to Host' });
    assert(q.items.some((i) => /Connect to Host/.test(i)), `menu items: ${JSON.stringify(q.items)}`);
    await uiScreenshot('remote-indicator-menu');
    await quickInput({ press: 'Escape' });
    await quickInput({ waitHidden: true });
    // The last ssh test: clean up now — the suite's afterAll never runs in a window that a later
    // test reloads (the harness still ends sshd with code-server's process group).
    await cleanup();
  });

  afterAll(cleanup);
}

/** Removes the environments the tests saved, resets the setting and stops sshd (idempotent). */
async function cleanup(): Promise<void> {
  const s = sshd;
  sshd = undefined;
  for (const name of ['e2e-devbox', 'e2e-newkey', 'e2e-outdated', ...(s ? [`${s.user}-127.0.0.1-${s.port}`] : [])]) {
    await vscode.commands.executeCommand('execServer.removeEnvironment', { name }).then(undefined, () => undefined);
  }
  if (s) await setExecServerSetting('ssh.configFile', '');
  await s?.stop();
}
