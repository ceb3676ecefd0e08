// ssh's login questions (../askpass.ts) as VS Code input boxes: masked (a password, a
// passphrase, a one-time code are all secrets), the host in the title, ssh's own prompt as the
// prompt, kept open when focus moves (the user may look the password up), hidden when the ssh
// process that asked is gone. Escape cancels: ssh then fails the login ("Permission denied").
import * as vscode from 'vscode';
import { noIcons } from '../../common';
import { AskpassService, type AskpassPrompt } from '../askpass';

function askInInputBox(p: AskpassPrompt): Promise<string | undefined> {
  return new Promise((resolve) => {
    const box = vscode.window.createInputBox();
    box.title = `Exec Server: ssh ${noIcons(p.target)}`;
    box.prompt = p.prompt;
    box.password = true;
    box.ignoreFocusOut = true;
    box.placeholder = p.kind === 'passphrase' ? 'the passphrase of this key' : p.kind === 'password' ? 'the password (Escape cancels the login)' : 'the answer ssh asks for (Escape cancels the login)';
    if (p.retry) box.validationMessage = 'The host refused that answer: try again.';
    let done = false;
    const finish = (v: string | undefined) => {
      if (done) return;
      done = true;
      p.signal.removeEventListener('abort', onAbort);
      resolve(v);
      box.dispose();
    };
    const onAbort = () => finish(undefined);
    p.signal.addEventListener('abort', onAbort, { once: true });
    box.onDidChangeValue(() => (box.validationMessage = undefined));
    box.onDidAccept(() => finish(box.value));
    box.onDidHide(() => finish(undefined));
    box.show();
  });
}

/** The extension host's askpass service, started on first use (a folder and a socket in the temp dir). */
export function lazyAskpass(ctx: vscode.ExtensionContext, log: vscode.LogOutputChannel): () => Promise<AskpassService | undefined> {
  let started: Promise<AskpassService | undefined> | undefined;
  return () =>
    (started ??= AskpassService.start(askInInputBox, { log: (m) => log.info(m) }).then(
      (s) => {
        ctx.subscriptions.push({ dispose: () => s.close() });
        return s;
      },
      (e: Error) => {
        // Without it ssh keeps BatchMode=yes: key logins work, a password host says "refused".
        log.warn(`ssh prompts unavailable (the askpass helper could not start: ${e.message}); logins without a question only`);
        return undefined;
      },
    ));
}
