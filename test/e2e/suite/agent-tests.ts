// The agent endpoint: an external client connects with the bearer token, and every request that
// would start a process or change files shows an "Exec Server:" approval notification in the
// workbench. The harness clicks the buttons (see approval.ts), so the real notification is used.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as vscode from 'vscode';
import { AgentClient } from './agent-client';
import { answerApproval, setApprovalPolicyForTest } from './approval';
import { afterAll, test } from './framework';
import { assert, assertEqual, expectReject, freshDir, uniqueName, waitFor, waitForFile } from './util';

const agent: { url: string; token: string; client?: AgentClient } = { url: '', token: '' };

function endpoint(): { url: string; token: string } {
  if (!agent.url) throw new Error('the agent endpoint was not started (see the first agent test)');
  return agent;
}

async function client(): Promise<AgentClient> {
  if (!agent.client) agent.client = await AgentClient.connect(endpoint().url, endpoint().token);
  return agent.client;
}

function startParams(argv: string[], cwd: string) {
  return { processId: uniqueName('agent'), argv, cwd: pathToFileURL(cwd).href, env: {}, tty: false, pipeStdin: false, arg0: null };
}

afterAll(async () => {
  agent.client?.close();
  if (agent.url) await vscode.commands.executeCommand('execServer.stopAgentEndpoint').then(undefined, () => {});
});

// Each test that expects a question sets alwaysAsk for itself (put back when it ends): the first
// test runs in every EXEC_SERVER_E2E_GREP subset (setup), and a policy left behind made later
// tests outside this file (an API run() of 'remote: …') get asked and fail.
export function registerAgentTests(): void {
  test('agent: startAgentEndpoint serves ws on 127.0.0.1 and refuses a client without the token (401)', async () => {
    await setApprovalPolicyForTest('alwaysAsk'); // so environment/info is seen to need no question
    const r = await vscode.commands.executeCommand<{ url: string; token: string }>('execServer.startAgentEndpoint', { quiet: true });
    assert(r && /^ws:\/\/127\.0\.0\.1:\d+/.test(r.url), `endpoint URL is ws://127.0.0.1:PORT (got ${r?.url})`);
    assert(typeof r.token === 'string' && r.token.length >= 16, 'a token of at least 16 characters');
    agent.url = r.url;
    agent.token = r.token;
    const noToken = await expectReject('connecting without a token', () => AgentClient.open(r.url));
    assertEqual((noToken as { status?: number }).status, 401, 'HTTP status without a token');
    const badToken = await expectReject('connecting with a wrong token', () => AgentClient.open(r.url, `${r.token}x`));
    assertEqual((badToken as { status?: number }).status, 401, 'HTTP status with a wrong token');
    const c = await client();
    const info = await c.request('environment/info', {});
    assert(info && typeof info.shell === 'object', 'an authenticated agent gets environment/info without approval');
  }, undefined, { setup: true });

  test('agent: clicking Allow on the approval notification runs the agent process', async () => {
    await setApprovalPolicyForTest('alwaysAsk');
    const dir = freshDir('agent-allow');
    const c = await client();
    const started = c.request('process/start', startParams(['/bin/sh', '-c', 'echo allowed > allowed.txt'], dir));
    const seen = await answerApproval('Allow');
    assert(seen.text?.includes('Exec Server:') && seen.text.includes('allowed.txt'), `notification names the command (saw "${seen.text}")`);
    assertEqual(seen.buttons, ['Allow', 'Allow for Session', 'Deny'], 'buttons of the approval notification');
    const r = await started;
    assert(typeof r?.processId === 'string', 'process/start answered with a processId');
    assertEqual(await waitForFile(path.join(dir, 'allowed.txt'), (t) => t.endsWith('\n')), 'allowed\n', 'file written by the allowed process');
  }, 90_000);

  test('agent: an allowed agent process is shown in a terminal named after its command', async () => {
    await setApprovalPolicyForTest('alwaysAsk');
    const dir = freshDir('agent-term');
    const c = await client();
    const names: string[] = [];
    const sub = vscode.window.onDidOpenTerminal((t) => names.push(t.name));
    try {
      const started = c.request('process/start', startParams(['/bin/sh', '-c', 'echo shown > shown.txt'], dir));
      await answerApproval('Allow');
      await started;
      await waitForFile(path.join(dir, 'shown.txt'), (t) => t === 'shown\n');
      await waitFor('an "Agent:" terminal', () => names.find((n) => n.startsWith('Agent:') && n.includes('/bin/sh')), 10_000);
    } finally {
      sub.dispose();
    }
  }, 90_000);

  test('agent: clicking Deny returns an error to the agent and changes nothing', async () => {
    await setApprovalPolicyForTest('alwaysAsk');
    const dir = freshDir('agent-deny');
    const target = path.join(dir, 'denied.txt');
    const c = await client();
    const write = c.request('fs/writeFile', { path: pathToFileURL(target).href, dataBase64: Buffer.from('no').toString('base64') });
    const outcome = write.then(() => 'succeeded', (e: Error) => e);
    const seen = await answerApproval('Deny');
    assert(seen.text?.includes('denied.txt'), `notification names the file (saw "${seen.text}")`);
    const err = await outcome;
    assert(err instanceof Error, 'a denied write is answered with a JSON-RPC error');
    assert(!existsSync(target), 'the denied file was not created');
  }, 90_000);

  test('agent: Allow for Session lets the same program in the same cwd run again on that connection without asking', async () => {
    await setApprovalPolicyForTest('alwaysAsk');
    const dir = freshDir('agent-session');
    const c = await client();
    const first = c.request('process/start', startParams(['/bin/sh', '-c', 'echo one > one.txt'], dir));
    await answerApproval('Allow for Session');
    await first;
    await waitForFile(path.join(dir, 'one.txt'), (t) => t === 'one\n');
    // No harness answer this time: if a notification were shown, the request would wait for it.
    // (The grant is narrow: argv[0] + cwd on this connection; agent-security-tests.ts checks what it does not cover.)
    await Promise.race([
      c.request('process/start', startParams(['/bin/sh', '-c', 'echo two > two.txt'], dir)),
      new Promise((_, reject) => setTimeout(() => reject(new Error('second request waited for approval')), 15_000)),
    ]);
    assertEqual(await waitForFile(path.join(dir, 'two.txt'), (t) => t.endsWith('\n')), 'two\n', 'second request wrote its file');
  }, 90_000);

  test('agent: stopAgentEndpoint closes the endpoint for new clients', async () => {
    const { url, token } = endpoint();
    await vscode.commands.executeCommand('execServer.stopAgentEndpoint');
    agent.url = '';
    agent.client?.close();
    agent.client = undefined;
    await expectReject('connecting after stop', () => AgentClient.open(url, token));
  });
}
