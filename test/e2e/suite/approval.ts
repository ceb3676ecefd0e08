// Answers the extension's approval notification through the real workbench. The suite cannot
// click a notification itself, so it writes the wanted answer into the control directory;
// the harness (run.mjs, Playwright) finds the toast whose text contains "Exec Server:", clicks
// the button, and writes back what it saw. Protocol (one file pair per request):
//   <controlDir>/approval-<n>.request.json  {answer, match}
//   <controlDir>/approval-<n>.result.json   {clicked: boolean, text?: string, buttons?: string[], error?: string}
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { config } from './config';
import { waitFor } from './util';

export type ApprovalAnswer = 'Allow' | 'Allow for Session' | 'Deny';
export interface ApprovalResult {
  clicked: boolean;
  text?: string;
  /** Titles of the notification's buttons, in order. */
  buttons?: string[];
  error?: string;
}

let next = 0;

/** Asks the harness to click `answer` on the approval notification; resolves with what it saw. */
export async function answerApproval(answer: ApprovalAnswer, timeoutMs = 45_000): Promise<ApprovalResult> {
  const { controlDir, approvalDriver } = config();
  if (!approvalDriver) throw new Error('no harness answers approval notifications here (run through test/e2e/run.mjs)');
  const id = `${process.pid}-${++next}`;
  const request = path.join(controlDir, `approval-${id}.request.json`);
  const result = path.join(controlDir, `approval-${id}.result.json`);
  writeFileSync(request, JSON.stringify({ answer, match: 'Exec Server:' }));
  const text = await waitFor(`harness answer to approval ${id}`, () => existsSync(result) && readFileSync(result, 'utf8'), timeoutMs, 250);
  const r = JSON.parse(text) as ApprovalResult;
  if (!r.clicked) throw new Error(`harness could not click "${answer}": ${r.error ?? 'unknown error'}`);
  return r;
}

let savedPolicy: { value: unknown } | undefined;

/** Sets execServer.approval.policy (user settings), remembering the first value for restore. */
export async function setApprovalPolicy(policy: 'alwaysAsk' | 'askOutsideWorkspace' | 'neverAsk'): Promise<void> {
  const cfg = vscode.workspace.getConfiguration('execServer');
  savedPolicy ??= { value: cfg.inspect('approval.policy')?.globalValue };
  await cfg.update('approval.policy', policy, vscode.ConfigurationTarget.Global);
}

export async function restoreApprovalPolicy(): Promise<void> {
  if (!savedPolicy) return;
  const { value } = savedPolicy;
  savedPolicy = undefined;
  await vscode.workspace.getConfiguration('execServer').update('approval.policy', value, vscode.ConfigurationTarget.Global);
}
