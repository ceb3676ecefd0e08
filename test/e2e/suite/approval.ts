// Answers the extension's approval question through the real workbench. The suite cannot
// click a notification itself, so it writes the wanted answer into the control directory;
// the harness (run.mjs, Playwright) finds the toast (or modal dialog) whose text contains
// "Exec Server:" and every `contains` string, clicks the button (or only looks, without an
// answer), and writes back what it saw. Protocol (one file pair per request):
//   <controlDir>/approval-<n>.request.json  {answer?, match, contains?: string[], giveUpMs?, notice?}
//   <controlDir>/approval-<n>.result.json   {found, clicked, kind?, text?, detail?, buttons?, links?, html?, error?}
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { config } from './config';
import { onTestEnd } from './framework';
import { waitFor } from './util';

export type ApprovalAnswer = 'Allow' | 'Allow for Session' | 'Deny';
export interface ApprovalResult {
  /** A question matching the request was on screen. */
  found?: boolean;
  clicked: boolean;
  /** 'toast' (notification) or 'modal' (dialog). */
  kind?: 'toast' | 'modal';
  /** The question's visible text (innerText: link targets and tooltips are not part of it). */
  text?: string;
  /** A notification's text as far as it is on screen (inside its box: not cut off by its edge or ellipsis). */
  visibleText?: string;
  /** A modal's detail text ('' for a toast). */
  detail?: string;
  /** Titles of the question's buttons, in order. */
  buttons?: string[];
  /** Every <a> link inside the question's text (VS Code's own buttons excluded). */
  links?: { text: string; href: string; title: string; dataHref: string }[];
  /** The message's HTML (for failure messages). */
  html?: string;
  error?: string;
}

export interface ApprovalOptions {
  /** Strings the question must contain besides "Exec Server:" (pick one unique to the request). */
  contains?: string | string[];
  /** How long the harness looks for the question before it reports not found (default 30 s). */
  giveUpMs?: number;
  /** How long the suite waits for the harness's answer (default 45 s). */
  timeoutMs?: number;
  /** Only a question shown as a toast (or modal) counts, not one waiting in the notification center. */
  toastOnly?: boolean;
}

let next = 0;

async function ask(answer: string | undefined, opts: ApprovalOptions, notice = false): Promise<ApprovalResult> {
  const { controlDir, approvalDriver } = config();
  if (!approvalDriver) throw new Error('no harness answers approval notifications here (run through test/e2e/run.mjs)');
  const id = `${process.pid}-${++next}`;
  const request = path.join(controlDir, `approval-${id}.request.json`);
  const result = path.join(controlDir, `approval-${id}.result.json`);
  const contains = opts.contains === undefined ? [] : Array.isArray(opts.contains) ? opts.contains : [opts.contains];
  writeFileSync(request, JSON.stringify({ answer, match: 'Exec Server:', contains, giveUpMs: opts.giveUpMs, notice, toastOnly: opts.toastOnly }));
  const timeoutMs = opts.timeoutMs ?? Math.max(45_000, (opts.giveUpMs ?? 30_000) + 15_000);
  const text = await waitFor(`harness answer to approval ${id}`, () => existsSync(result) && readFileSync(result, 'utf8'), timeoutMs, 250);
  return JSON.parse(text) as ApprovalResult;
}

/** Asks the harness to click `answer` on the approval question; resolves with what it saw, throws if it found none. */
export async function answerApproval(answer: ApprovalAnswer, opts: number | ApprovalOptions = {}): Promise<ApprovalResult> {
  const o = typeof opts === 'number' ? { timeoutMs: opts } : opts;
  const r = await ask(answer, o);
  if (!r.clicked) throw new Error(`harness could not click "${answer}"${o.contains ? ` on a question containing ${JSON.stringify(o.contains)}` : ''}: ${r.error ?? 'unknown error'}`);
  return r;
}

/** Like answerApproval, but a missing question is a result ({clicked: false}), not an error. */
export function answerApprovalIfShown(answer: ApprovalAnswer | string, opts: ApprovalOptions = {}): Promise<ApprovalResult> {
  return ask(answer, opts);
}

/** Asks the harness to find the question and report what it shows, without clicking. */
export function inspectApproval(opts: ApprovalOptions = {}): Promise<ApprovalResult> {
  return ask(undefined, opts);
}

/** Asks the harness to find any "Exec Server:" notification with that text (a notice has no buttons). */
export function findNotice(opts: ApprovalOptions = {}): Promise<ApprovalResult> {
  return ask(undefined, opts, true);
}

/**
 * Settings changed until restoreApprovalPolicy() (user settings): the first value of each is
 * remembered. For code outside a test (the screenshot scene) and settings a whole group of tests
 * shares (the ssh config file); a single test uses setSettingForTest.
 */
const saved = new Map<string, { value: unknown }>();

export async function setExecServerSetting(key: string, value: unknown): Promise<void> {
  const cfg = vscode.workspace.getConfiguration('execServer');
  if (!saved.has(key)) saved.set(key, { value: cfg.inspect(key)?.globalValue });
  await cfg.update(key, value, vscode.ConfigurationTarget.Global);
}

/** Sets execServer.approval.policy (user settings), remembering the first value for restore. */
export async function setApprovalPolicy(policy: 'alwaysAsk' | 'askOutsideWorkspace' | 'neverAsk' | string): Promise<void> {
  await setExecServerSetting('approval.policy', policy);
}

/** The policy a user has who never changed it (package.json default); never "neverAsk". */
export function defaultApprovalPolicy(): string {
  const d = vscode.workspace.getConfiguration('execServer').inspect<string>('approval.policy')?.defaultValue;
  if (typeof d !== 'string' || d === 'neverAsk') throw new Error(`unexpected default approval policy ${JSON.stringify(d)}`);
  return d;
}

/**
 * Sets an execServer setting (user settings) for the running test only: the value it had is put
 * back when the test ends — passed, failed or timed out — before the next test starts (onTestEnd).
 * The suite's tests use this, so a policy one test needs never reaches another, whichever subset
 * EXEC_SERVER_E2E_GREP selects (the harness's baseline is neverAsk).
 */
export async function setSettingForTest(key: string, value: unknown): Promise<void> {
  const before = vscode.workspace.getConfiguration('execServer').inspect(key)?.globalValue;
  onTestEnd(async () => {
    await vscode.workspace.getConfiguration('execServer').update(key, before, vscode.ConfigurationTarget.Global);
  });
  await vscode.workspace.getConfiguration('execServer').update(key, value, vscode.ConfigurationTarget.Global);
}

/** execServer.approval.policy for the running test only (see setSettingForTest). */
export function setApprovalPolicyForTest(policy: 'alwaysAsk' | 'askOutsideWorkspace' | 'neverAsk' | string): Promise<void> {
  return setSettingForTest('approval.policy', policy);
}

/** Restores every setting changed through setExecServerSetting / setApprovalPolicy. */
export async function restoreApprovalPolicy(): Promise<void> {
  const cfg = vscode.workspace.getConfiguration('execServer');
  for (const [key, { value }] of [...saved]) {
    saved.delete(key);
    await cfg.update(key, value, vscode.ConfigurationTarget.Global);
  }
}
