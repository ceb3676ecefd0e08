// The real Codex (unmodified `codex app-server` of the reference package, a stand-in model)
// through the agent endpoint, set up as the README says: an environments.toml entry with
// `auth_bearer_token`. Under the default policy a workspace-write command runs without a
// question (sandbox first); an unsandboxed one (danger-full-access) asks: Deny changes nothing,
// Allow runs it.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { referenceCodexBinary, startCodexAppServer, type SandboxMode } from '../../support/codex/codex-app-server';
import { startMockModel, type MockStep } from '../../support/codex/mock-model';
import { removeDir, startEndpoint } from '../../support/agent-attack';

const repoRoot = path.resolve(__dirname, '..', '..', '..', '..');
let codex: string;
let ws: string;
before(() => {
  codex = referenceCodexBinary(repoRoot);
  // Outside /tmp: Codex's workspace-write sandbox may write /tmp, so a write there proves nothing.
  ws = realpathSync(mkdtempSync(path.join(os.homedir(), '.agent-codex-ws-')));
});
after(() => removeDir(ws));

async function turn(mode: SandboxMode | undefined, file: string, answer: string, step?: MockStep) {
  const f = await startEndpoint({ policy: 'askOutsideWorkspace', roots: [ws], answer: (q) => (q.message.includes(file) ? answer : 'Deny') });
  const model = await startMockModel({ script: [step ?? { exec_command: `echo made > ${file}`, callId: 'c1' }] });
  const app = await startCodexAppServer({ codexBinary: codex, modelBaseUrl: model.baseUrl, execServerUrl: f.url, token: f.token, workspace: ws, sandboxMode: mode });
  try {
    const thread = await app.startThread();
    const result = await app.runTurn(thread, 'make the file', 90_000);
    return { f, result, output: model.toolOutputs().get('c1')?.output ?? '<none>', stderr: app.stderr() };
  } finally {
    await app.stop();
    await model.stop();
    await f.stop();
  }
}

describe('the real Codex through the agent endpoint (environments.toml auth_bearer_token)', () => {
  it('workspace-write: the sandboxed command runs without a question', async () => {
    const file = path.join(ws, 'sandboxed.txt');
    const { f, output } = await turn('workspace-write', file, 'Deny');
    assert.equal(existsSync(file), true, `the command ran (Codex saw: ${output})`);
    assert.deepEqual(f.questions.filter((q) => q.message.includes(file)).map((q) => q.message), [], 'no question for the sandboxed command');
  });

  it('Codex defaults (read-only sandbox): the command runs without a question, and cannot write', async () => {
    const file = path.join(ws, 'readonly.txt');
    const { f, output } = await turn(undefined, file, 'Deny');
    assert.deepEqual(f.questions.filter((q) => q.message.includes(file)).map((q) => q.message), [], 'no question for the sandboxed command');
    assert.match(output, /Read-only file system|Permission denied|exited with code [1-9]/, `it ran, sandboxed (Codex saw: ${output})`);
    assert.equal(existsSync(file), false);
  });

  it('danger-full-access: the unsandboxed command asks; Deny changes nothing', async () => {
    const file = path.join(ws, 'denied.txt');
    const { f, output } = await turn('danger-full-access', file, 'Deny');
    const asked = f.questions.filter((q) => q.message.includes(file));
    assert.equal(asked.length, 1, `one question (all: ${JSON.stringify(f.questions.map((q) => q.message))})`);
    assert.match(asked[0].message, /unsandboxed/);
    assert.match(asked[0].message, /client "codex-environment"/);
    assert.equal(existsSync(file), false, `nothing ran (Codex saw: ${output})`);
  });

  it('workspace-write: apply_patch adds and then edits a file inside the workspace without a question', async () => {
    const file = path.join(ws, 'patched.txt');
    const add = `*** Begin Patch\n*** Add File: ${file}\n+first\n*** End Patch\n`;
    const first = await turn('workspace-write', file, 'Deny', { apply_patch: add, callId: 'c1' });
    assert.equal(readFileSync(file, 'utf8'), 'first\n', `added (Codex saw: ${first.output})`);
    const edit = `*** Begin Patch\n*** Update File: ${file}\n@@\n-first\n+second\n*** End Patch\n`;
    const second = await turn('workspace-write', file, 'Deny', { apply_patch: edit, callId: 'c1' });
    assert.equal(readFileSync(file, 'utf8'), 'second\n', `edited: read, then written (Codex saw: ${second.output})`);
    assert.deepEqual([...first.f.questions, ...second.f.questions].map((q) => q.message), [], 'no question');
  });

  it('danger-full-access: Allow runs it', async () => {
    const file = path.join(ws, 'allowed.txt');
    const { f, output } = await turn('danger-full-access', file, 'Allow');
    assert.equal(f.questions.filter((q) => q.message.includes(file)).length, 1);
    assert.equal(existsSync(file), true, `the command ran (Codex saw: ${output})`);
  });
});
