// The approval gate as other extensions meet it through the exported API and programmatic command
// calls (scope "api"): under askOutsideWorkspace, inside a workspace folder runs at once, outside asks.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { answerApproval, setApprovalPolicyForTest } from './approval';
import { LOCAL } from './environment-tests';
import { test } from './framework';
import { assert, assertEqual, freshDir, productApi, uniqueName } from './util';

export function registerApiApprovalTests(): void {
  test('api: under askOutsideWorkspace, run() inside a workspace folder runs without asking', async () => {
    const root = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
    assert(root, 'a local workspace folder is open');
    const dir = path.join(root.uri.fsPath, uniqueName('inside'));
    mkdirSync(dir, { recursive: true });
    await setApprovalPolicyForTest('askOutsideWorkspace');
    const api = await productApi();
    const r = await Promise.race([
      api.run(LOCAL, ['/bin/sh', '-c', 'echo inside'], { cwd: dir }),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('run() inside the workspace waited (for approval?)')), 20_000)),
    ]);
    assertEqual(r.stdout, 'inside\n', 'stdout');
  });

  test('commands: a runCommand line given programmatically asks under alwaysAsk; Allow runs it', async () => {
    const dir = freshDir('cmd-allow');
    await setApprovalPolicyForTest('alwaysAsk');
    const result = vscode.commands.executeCommand<{ exitCode: number }>('execServer.runCommand', {
      environment: LOCAL,
      command: 'echo approved > approved.txt; exit 6',
      cwd: dir,
    });
    const seen = await answerApproval('Allow');
    assert(seen.text?.includes('approved.txt'), `the notification shows the command line (saw "${seen.text}")`);
    assertEqual((await result)?.exitCode, 6, 'exit code of the allowed command');
    assert(existsSync(path.join(dir, 'approved.txt')), 'the allowed command ran');
  }, 90_000);

  test('api: under askOutsideWorkspace, run() outside the workspace asks; Deny rejects and nothing runs', async () => {
    const dir = freshDir('api-deny');
    await setApprovalPolicyForTest('askOutsideWorkspace');
    const api = await productApi();
    const outcome = api.run(LOCAL, ['/bin/sh', '-c', 'echo ran > ran.txt'], { cwd: dir }).then(() => 'ran', (e: Error) => e);
    const seen = await answerApproval('Deny');
    assert(seen.text?.includes('ran.txt'), `the notification shows the command (saw "${seen.text}")`);
    const err = await outcome;
    assert(err instanceof Error && /not approved|denied/i.test(err.message), `run() rejects as not approved (got ${String(err)})`);
    assert(!existsSync(path.join(dir, 'ran.txt')), 'the denied command did not run');
  }, 90_000);
  test('commands: addEnvironment with a command from another extension asks; Deny saves nothing', async () => {
    const name = uniqueName('cmd-env');
    await setApprovalPolicyForTest('alwaysAsk');
    const outcome = vscode.commands
      .executeCommand('execServer.addEnvironment', { name, command: '/bin/sh', args: ['-c', 'echo never-run'] })
      .then(() => 'added', (e: Error) => e);
    const seen = await answerApproval('Deny');
    assert(seen.text?.includes('never-run'), `the notification shows the command line (saw "${seen.text}")`);
    const err = await outcome;
    assert(err instanceof Error && /not approved|denied/i.test(err.message), `addEnvironment rejects as not approved (got ${String(err)})`);
    const api = await productApi();
    assert(!api.getEnvironments().some((e) => e.name === name), 'the denied environment was not saved');
  }, 90_000);
}
