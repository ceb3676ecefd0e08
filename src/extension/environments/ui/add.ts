// Add Environment, asked as one multi-step quick input: name (1/3) → URL or command (2/3) →
// token (3/3, websocket only), with live validation and a Back button; Escape at any step saves
// nothing. Before saving, the connection is tried (with progress); a failure offers Edit / Save
// Anyway. A name that exists is replaced only after the user says so.
import * as vscode from 'vscode';
import type { ExecClient } from '../../../client/api';
import { joinCommandLine, parseWhere, type Where } from '../input';
import { parseEnvironment, type AddEnvironmentInput, type EnvironmentConfig, type EnvironmentStore } from '../store';
import { oneAnswer } from '../../common/ui';

const TITLE = 'Exec Server: Add Environment';
export const WHERE_PLACEHOLDER = 'ws://127.0.0.1:8765  ·  127.0.0.1:8765  ·  ssh devbox exec-server --listen stdio';

export interface AddEnvironmentDeps {
  store: EnvironmentStore;
  /** Opens a throw-away connection with these settings (the environment's own connector). */
  connect(config: EnvironmentConfig, token: string | undefined): Promise<ExecClient>;
  log: vscode.LogOutputChannel;
}

/** The name rules of the settings (URI-safe, "Local" reserved), checked as the user types. */
export function nameProblem(name: string): string | undefined {
  if (!name.trim()) return 'Enter a name, e.g. devbox';
  const r = parseEnvironment({ name, url: 'ws://127.0.0.1:1' });
  return typeof r === 'string' ? r.replace(/^environment "[^"]*": /, '') : undefined;
}

type StepResult = { value: string } | 'back' | 'cancel';

/** One input box step; resolves with the accepted value, 'back' or 'cancel' (Escape, focus lost). */
function inputStep(opts: {
  step: number;
  totalSteps: number;
  prompt: string;
  placeholder?: string;
  value: string;
  password?: boolean;
  validate(value: string): string | undefined;
}): Promise<StepResult> {
  return new Promise((resolve) => {
    const box = vscode.window.createInputBox();
    box.title = TITLE;
    box.step = opts.step;
    box.totalSteps = opts.totalSteps;
    box.prompt = opts.prompt;
    box.placeholder = opts.placeholder;
    box.value = opts.value;
    box.password = !!opts.password;
    box.ignoreFocusOut = true;
    box.buttons = opts.step > 1 ? [vscode.QuickInputButtons.Back] : [];
    const answer = oneAnswer<StepResult>(box, resolve);
    const finish = answer.finish;
    const check = () => (box.validationMessage = box.value === '' ? undefined : opts.validate(box.value));
    box.onDidChangeValue(check);
    box.onDidAccept(() => {
      const problem = opts.validate(box.value);
      if (problem) box.validationMessage = problem;
      else finish({ value: box.value });
    });
    box.onDidTriggerButton((b) => {
      if (b === vscode.QuickInputButtons.Back) finish('back');
    });
    box.onDidHide(() => finish('cancel'));
    check();
    box.show();
  });
}

/** The answers so far; kept across a failed connection test so "Edit" returns to them. */
export interface AddEnvironmentAnswers {
  name: string;
  whereText: string;
  token: string;
  /** A name the user already agreed to replace. */
  replaceAgreed?: string;
  step: 1 | 2 | 3;
}

export const freshAnswers = (): AddEnvironmentAnswers => ({ name: '', whereText: '', token: '', step: 1 });

/** Asks for a new environment; resolves with what to save, or undefined when the user cancelled. */
export async function askForEnvironment(deps: AddEnvironmentDeps, a: AddEnvironmentAnswers = freshAnswers()): Promise<AddEnvironmentInput | undefined> {
  for (;;) {
    const step = a.step;
    const where: Where | undefined = a.whereText ? tryWhere(a.whereText) : undefined;
    const total = where?.kind === 'command' ? 2 : 3;
    if (step === 1) {
      const r = await inputStep({ step: 1, totalSteps: total, prompt: 'Name of the environment (shown in the Exec Server view)', placeholder: 'devbox', value: a.name, validate: nameProblem });
      if (typeof r !== 'object') return undefined;
      a.name = r.value.trim();
      const existing = deps.store.get(a.name);
      if (existing && a.replaceAgreed !== a.name) {
        const what = existing.url ?? joinCommandLine([existing.command ?? '', ...(existing.args ?? [])]);
        const choice = await vscode.window.showWarningMessage(
          `Exec Server: an environment named "${a.name}" already exists (${what}). Replace it?`,
          { modal: true },
          'Replace',
        );
        if (choice !== 'Replace') continue; // ask for another name
        a.replaceAgreed = a.name;
      }
      a.step = 2;
    } else if (step === 2) {
      const r = await inputStep({
        step: 2,
        totalSteps: total,
        prompt: 'Where the exec-server runs: a websocket URL (ws://host:port, or just host:port) or a command that speaks the protocol on stdio',
        placeholder: WHERE_PLACEHOLDER,
        value: a.whereText,
        validate: (v) => {
          try {
            parseWhere(v);
            return undefined;
          } catch (e) {
            return (e as Error).message;
          }
        },
      });
      if (r === 'cancel') return undefined;
      if (r === 'back') {
        a.step = 1;
        continue;
      }
      a.whereText = r.value;
      const w = parseWhere(a.whereText);
      if (w.kind === 'command') return { name: a.name, command: w.command, args: w.args };
      a.step = 3;
    } else {
      const url = (where as { url: string }).url;
      const r = await inputStep({
        step: 3,
        totalSteps: 3,
        prompt: `Connection token for ${url} (optional: leave empty if the server needs none; kept in SecretStorage)`,
        value: a.token,
        password: true,
        validate: () => undefined,
      });
      if (r === 'cancel') return undefined;
      if (r === 'back') {
        a.step = 2;
        continue;
      }
      a.token = r.value;
      return { name: a.name, url, token: a.token || undefined };
    }
  }
}
function tryWhere(text: string): Where | undefined {
  try {
    return parseWhere(text);
  } catch {
    return undefined;
  }
}

/**
 * Connects once with the new settings and asks the server for environment/info. Resolves with
 * undefined on success, else the error message. The notification's Cancel ends the wait.
 */
export async function testConnection(deps: AddEnvironmentDeps, input: AddEnvironmentInput): Promise<string | undefined> {
  const config: EnvironmentConfig = input.url
    ? { name: input.name, kind: 'websocket', url: input.url }
    : { name: input.name, kind: 'command', command: input.command, args: input.args ?? [] };
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Exec Server: testing the connection to ${input.name}…`, cancellable: true },
    async (_progress, cancel) => {
      const cancelled = new Promise<string>((r) => cancel.onCancellationRequested(() => r('the test was cancelled')));
      // The client is closed whenever it arrives, also after a cancel (no leaked connection or child).
      const connecting = deps.connect(config, input.token);
      const attempt = connecting.then(async (c) => {
        await c.environmentInfo();
        return undefined;
      });
      void Promise.race([attempt.catch(() => undefined), cancelled]).then(() => connecting.then((c) => c.close()).catch(() => undefined));
      try {
        return await Promise.race([attempt, cancelled]);
      } catch (e) {
        return e instanceof Error ? e.message : String(e);
      }
    },
  );
}
