// Attacks on Connect to Host and ssh environments, in the real workbench: a host (a REAL sshd,
// test/support/sshd.ts) that answers with VS Code's link syntax `[label](command:…)` on stderr.
// Notifications render that syntax as a link, and a click on a command link runs the command
// with the link's arguments (here: keystrokes into the open terminal). The harness reports every
// <a> inside the notification's message; what the host printed must be there as text only.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { binDir, startSshd, whichOrThrow, type TestSshd } from '../../support/sshd';
import { findNotice, setSettingForTest } from './approval';
import { config } from './config';
import { afterAll, test } from './framework';
import { quickInput } from './ux-driver';
import { assert, assertEqual } from './util';

const LINK_HREF = 'command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22touch%20pwned%5Cn%22%7D';
const LINK = `[Retry Now](${LINK_HREF})`;

let sshd: TestSshd | undefined;

async function ensureSshd(): Promise<TestSshd> {
  if (sshd) return sshd;
  const work = path.join(config().workDir, `ssh-attack-${process.pid}`);
  mkdirSync(path.join(work, 'home'), { recursive: true });
  // The host's `sh` prints the link on stderr and fails: the probe's error quotes it.
  const fakeSh = binDir(path.join(work, 'fake-sh'), { sh: `#!/bin/bash\necho "sh: e2e-attack-stderr ${LINK}" >&2\nexit 2\n` });
  sshd = await startSshd([{ alias: 'e2e-link-stderr', env: { HOME: path.join(work, 'home'), PATH: `${fakeSh}:/usr/bin:/bin` } }], { parent: work });
  whichOrThrow('ssh');
  return sshd;
}
afterAll(async () => {
  await sshd?.stop();
});

/** The notification's links that came from the host's text. */
function hostLinks(seen: { links?: { text: string; href: string; title: string; dataHref: string }[] }) {
  return (seen.links ?? []).filter((l) => /sendSequence|Retry Now|pwned/i.test(`${l.text} ${l.href} ${l.title} ${l.dataHref}`));
}

export function registerSshAttackTests(): void {
  test('ssh attack: a host answering with a command link on stderr — the Connect to Host error shows it as text, no link', async () => {
    const s = await ensureSshd();
    await setSettingForTest('ssh.configFile', s.configFile);
    const done = Promise.resolve(vscode.commands.executeCommand('execServer.connectToHost'));
    await quickInput({ waitTitle: 'Connect to Host', waitItem: 'e2e-link-stderr', fill: 'e2e-link-stderr' });
    await quickInput({ waitTitle: 'Connect to Host', press: 'Enter' });
    assertEqual(await done, undefined, 'the command reports and returns');
    const seen = await findNotice({ contains: ['e2e-attack-stderr'], giveUpMs: 20_000 });
    assert(seen.found, `the error is shown: ${seen.error}`);
    assertEqual(JSON.stringify(hostLinks(seen)), '[]', `no <a> made from the host's text (html: ${seen.html?.slice(0, 600)})`);
    assert((seen.text ?? '').includes(LINK_HREF), `the host's text is shown as text: ${seen.text}`);
  }, 60_000);

  test('ssh attack: an environment whose command prints a command link on stderr and exits — the connect error shows it as text, no link', async () => {
    const name = 'e2e-attack-stderr-env';
    const list = vscode.workspace.getConfiguration('execServer').inspect<unknown[]>('environments')?.globalValue ?? [];
    await setSettingForTest('environments', [...list, { name, command: '/bin/sh', args: ['-c', `echo "e2e-attack-connect ${LINK}" >&2; exit 3`] }]);
    const r = await Promise.resolve(vscode.commands.executeCommand('execServer.connect', { environment: name })).then(
      () => 'connected',
      (e: Error) => e.message,
    );
    assert(r !== 'connected', 'the connect fails');
    const seen = await findNotice({ contains: ['e2e-attack-connect'], giveUpMs: 20_000 });
    assert(seen.found, `the error is shown: ${seen.error}`);
    assertEqual(JSON.stringify(hostLinks(seen)), '[]', `no <a> made from the command's stderr (html: ${seen.html?.slice(0, 600)})`);
    assert((seen.text ?? '').includes(LINK_HREF), `the stderr is shown as text: ${seen.text}`);
  }, 60_000);
}
