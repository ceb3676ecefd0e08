// The real Codex agent through the agent endpoint, in the workbench: the unmodified
// `codex app-server` (reference package, scripts/install-reference.sh) with a scripted stand-in
// model (test/support/codex/mock-model.ts) whose turn calls Codex's shell tool once; Codex's remote
// environment is the endpoint, configured the way the README tells users to (environments.toml
// `url` + `auth_bearer_token`). The harness answers the real approval question.
//   - danger-full-access (Codex sends no sandbox): the question appears; Allow runs, Deny changes nothing;
//   - workspace-write (Codex sends its managed sandbox): under the default policy the command runs
//     without a question.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { startCodexAppServer, type CodexAppServer, type SandboxMode, type TurnResult } from '../../support/codex/codex-app-server';
import { startMockModel, type MockModel } from '../../support/codex/mock-model';
import { agentEndpoint } from './agent-security-tests';
import { answerApprovalIfShown, defaultApprovalPolicy, inspectApproval, setApprovalPolicyForTest, type ApprovalAnswer, type ApprovalResult } from './approval';
import { config } from './config';
import { test } from './framework';
import { assert, uniqueName } from './util';

let codexBinary: Promise<string> | undefined;

/** The reference `codex` binary (installed into the tool cache by npm test's install stage). */
function referenceCodex(): Promise<string> {
  codexBinary ??= new Promise<string>((resolve, reject) => {
    const child = spawn('bash', [path.join(config().repo, 'scripts', 'install-reference.sh')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      const bin = out.trim().split('\n').pop() ?? '';
      if (code === 0 && bin && existsSync(bin)) resolve(bin);
      else reject(new Error(`scripts/install-reference.sh failed (exit ${code}): ${err.slice(-1000)}`));
    });
  });
  codexBinary.catch(() => (codexBinary = undefined));
  return codexBinary;
}

/** A fresh directory inside the first workspace folder: the Codex thread's cwd and project root. */
function workspaceDir(prefix: string): string {
  const root = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
  assert(root, 'a local workspace folder is open');
  const dir = path.join(root.uri.fsPath, uniqueName(prefix));
  mkdirSync(dir, { recursive: true });
  return dir;
}

interface CodexRun {
  turn: TurnResult;
  /** What Codex told the model about the command. */
  toolOutput: string;
  /** The approval question as the harness saw (and answered) it. */
  question?: ApprovalResult;
}

/** One Codex turn whose model runs `cmd` through the endpoint; `answer` clicks the question it raises. */
async function codexTurn(o: { workspace: string; sandboxMode: SandboxMode; cmd: string; marker: string; answer?: ApprovalAnswer }): Promise<CodexRun> {
  const bin = await referenceCodex();
  const { url, token } = await agentEndpoint();
  const callId = uniqueName('call');
  let model: MockModel | undefined;
  let codex: CodexAppServer | undefined;
  try {
    model = await startMockModel({ script: [{ exec_command: o.cmd, callId }] });
    codex = await startCodexAppServer({
      codexBinary: bin, modelBaseUrl: model.baseUrl, execServerUrl: url, token, workspace: o.workspace,
      sandboxMode: o.sandboxMode, approvalPolicy: 'never',
    });
    const thread = await codex.startThread();
    const turnP = codex.runTurn(thread, 'run the command', 100_000);
    const question = o.answer ? await answerApprovalIfShown(o.answer, { contains: o.marker, giveUpMs: 30_000 }) : undefined;
    const turn = await turnP;
    return { turn, toolOutput: model.toolOutputs().get(callId)?.output ?? '<no tool output>', question };
  } finally {
    await codex?.stop();
    await model?.stop();
  }
}

function codexTest(name: string, fn: () => Promise<void>): void {
  // The policy each sets (setApprovalPolicyForTest) is put back when it ends.
  test(`agent codex: ${name}`, fn, 150_000);
}

export function registerAgentCodexTests(): void {
  codexTest('Codex app-server through the endpoint (auth_bearer_token), no sandbox: the question appears and Allow runs the command', async () => {
    await setApprovalPolicyForTest(defaultApprovalPolicy());
    const ws = workspaceDir('codex-allow');
    const m = uniqueName('codexallow');
    const file = path.join(ws, `${m}.txt`);
    const r = await codexTurn({ workspace: ws, sandboxMode: 'danger-full-access', cmd: `echo ${m} > ${file}`, marker: m, answer: 'Allow' });
    assert(r.question?.clicked, `the approval question for Codex's command appeared (${r.question?.error}); Codex saw: ${r.toolOutput.slice(0, 300)}`);
    assert(existsSync(file) && readFileSync(file, 'utf8') === `${m}\n`, `the allowed command wrote its file; Codex saw: ${r.toolOutput.slice(0, 300)}`);
    assert(r.turn.status === 'completed', `the turn completed (${r.turn.status}: ${JSON.stringify(r.turn.error)})`);
    assert(/Process exited with code 0\b/.test(r.toolOutput), `Codex reported exit 0 to the model (saw: ${r.toolOutput.slice(0, 300)})`);
  });

  codexTest('Codex app-server through the endpoint, no sandbox: Deny on the question changes nothing and the turn still ends', async () => {
    await setApprovalPolicyForTest(defaultApprovalPolicy());
    const ws = workspaceDir('codex-deny');
    const m = uniqueName('codexdeny');
    const file = path.join(ws, `${m}.txt`);
    const r = await codexTurn({ workspace: ws, sandboxMode: 'danger-full-access', cmd: `echo ${m} > ${file}`, marker: m, answer: 'Deny' });
    assert(r.question?.clicked, `the approval question for Codex's command appeared (${r.question?.error}); Codex saw: ${r.toolOutput.slice(0, 300)}`);
    assert(!existsSync(file), `the denied command wrote nothing; Codex saw: ${r.toolOutput.slice(0, 300)}`);
    assert(r.turn.status === 'completed', `the turn completed (${r.turn.status}: ${JSON.stringify(r.turn.error)})`);
  });

  codexTest('"Allow for Session" given to one Codex process does not let a second, unrelated Codex process run without a question', async () => {
    // alwaysAsk: both commands are asked about under any policy, so only the grant decides.
    await setApprovalPolicyForTest('alwaysAsk');
    const ws = workspaceDir('codex-grant');
    const m1 = uniqueName('codexgrant1');
    const m2 = uniqueName('codexgrant2');
    const first = await codexTurn({ workspace: ws, sandboxMode: 'danger-full-access', cmd: `echo ${m1} > ${m1}.txt`, marker: m1, answer: 'Allow for Session' });
    assert(first.question?.clicked && existsSync(path.join(ws, `${m1}.txt`)), `the first Codex ran its command after "Allow for Session" (${first.question?.error}); Codex saw: ${first.toolOutput.slice(0, 300)}`);
    const second = await codexTurn({ workspace: ws, sandboxMode: 'danger-full-access', cmd: `echo ${m2} > ${m2}.txt`, marker: m2, answer: 'Deny' });
    assert(second.question?.clicked, `the second Codex process was asked about (${second.question?.error}); Codex saw: ${second.toolOutput.slice(0, 300)}`);
    assert(!existsSync(path.join(ws, `${m2}.txt`)), `the second Codex's denied command wrote nothing; Codex saw: ${second.toolOutput.slice(0, 300)}`);
  });

  codexTest('Codex app-server through the endpoint, workspace-write (managed sandbox), default policy: the command runs without a question', async () => {
    await setApprovalPolicyForTest(defaultApprovalPolicy());
    const ws = workspaceDir('codex-sandboxed');
    const m = uniqueName('codexsbx');
    const file = path.join(ws, `${m}.txt`);
    const started = Date.now();
    const r = await codexTurn({ workspace: ws, sandboxMode: 'workspace-write', cmd: `echo ${m} > ${file}`, marker: m });
    const after = await inspectApproval({ contains: m, giveUpMs: 2_000 });
    if (after.found) await answerApprovalIfShown('Deny', { contains: m, giveUpMs: 5_000 });
    assert(!after.found, `no approval question for the sandboxed command (saw "${after.text}")`);
    assert(existsSync(file) && readFileSync(file, 'utf8') === `${m}\n`, `the sandboxed command wrote its file in the workspace; Codex saw: ${r.toolOutput.slice(0, 300)}`);
    assert(r.turn.status === 'completed', `the turn completed (${r.turn.status}: ${JSON.stringify(r.turn.error)})`);
    assert(Date.now() - started < 60_000, 'the turn did not wait for an approval timeout');
  });
}
