// Entry of the e2e suite bundle. Three ways in:
//   - the runner extension (runner-ext) calls runFromConfig() when the harness asks for it;
//   - @vscode/test-electron loads this file as extensionTestsPath and calls run();
//   - @vscode/test-cli loads it with Mocha's TDD globals: tests register with Mocha.
import { registerAgentAttackTests } from './agent-attack-tests';
import { registerAgentCodexTests } from './agent-codex-tests';
import { registerAgentEnvironmentTests } from './agent-environment-tests';
import { registerAgentNetworkTests } from './agent-network-tests';
import { registerAgentQuestionsTests } from './agent-questions-tests';
import { registerAgentSecurityTests } from './agent-security-tests';
import { registerAgentTests } from './agent-tests';
import { registerApiApprovalTests } from './api-approval-tests';
import { E2EConfig, loadConfig, setConfig } from './config';
import { LOCAL, registerExtensionTests, registerRemoteLifecycleTests, registerRemoteSetupTest, remote, remoteName } from './environment-tests';
import * as vscode from 'vscode';
import { afterAll, registerWithMocha, resumeTests, ResultsFile, runTests } from './framework';
import { registerFsTests } from './fs-tests';
import { registerSearchTests } from './search-tests';
import { registerSshAttackTests } from './ssh-attack-tests';
import { registerContainerTests } from './container-tests';
import { registerSshTests } from './ssh-tests';
import { registerSshPasswordTests } from './ssh-password-tests';
import { registerSshSurviveTests } from './ssh-survive-tests';
import { registerSshRemoteHostTests } from './ssh-remote-host-tests';
import { registerRemoteWindowTests } from './remote-window-tests';
import { disposeTerminals, registerTerminalTests } from './terminal-tests';
import { registerTerminalSurvivalTests } from './terminal-survival-tests';
import { registerUxMarkupTests } from './ux-markup-tests';
import { registerUxTests } from './ux-tests';

// Order matters: the remote tests share one environment set up by the first remote test,
// and the restart/remove tests come last.
registerExtensionTests();
registerTerminalTests('local', () => LOCAL, () => process.pid);
registerFsTests('local', () => LOCAL);
registerRemoteSetupTest();
registerTerminalTests('remote', remoteName, () => remote.server.pid);
registerFsTests('remote', remoteName);
registerApiApprovalTests();
registerAgentTests();
registerAgentSecurityTests();
registerAgentQuestionsTests();
registerAgentNetworkTests();
registerAgentAttackTests();
registerAgentCodexTests();
registerAgentEnvironmentTests();
registerUxTests();
registerUxMarkupTests();
registerSearchTests();
registerSshTests();
registerSshPasswordTests();
registerSshAttackTests();
registerRemoteWindowTests();
registerContainerTests();
registerRemoteLifecycleTests();
// Last: the window reloads in the middle of these (module state of the tests above is gone after it).
registerTerminalSurvivalTests();
registerSshSurviveTests();
registerSshRemoteHostTests();
afterAll(disposeTerminals);

const reload = async () => {
  await vscode.commands.executeCommand('workbench.action.reloadWindow');
};

export async function runFromConfig(cfg: E2EConfig, log?: (line: string) => void): Promise<ResultsFile> {
  setConfig(cfg);
  return runTests({ resultsFile: cfg.resultsFile, grep: cfg.grep, log, reload });
}

/** The runner extension of a window a test reloaded: the rest of that test, then the tests after it. */
export async function resumeFromConfig(cfg: E2EConfig, prev: ResultsFile, log?: (line: string) => void): Promise<ResultsFile> {
  setConfig(cfg);
  return resumeTests(prev, { resultsFile: cfg.resultsFile, log, reload });
}

/** Without the harness (its settings.json sets it), start from the same approval policy. */
async function prepareWithoutHarness(): Promise<void> {
  await vscode.workspace.getConfiguration('execServer').update('approval.policy', 'neverAsk', vscode.ConfigurationTarget.Global);
}

/** @vscode/test-electron entry: throws when any test failed. */
export async function run(): Promise<void> {
  const cfg = loadConfig(process.env.EXEC_SERVER_E2E_CONFIG);
  if (!cfg.approvalDriver) await prepareWithoutHarness();
  const data = await runFromConfig(cfg, (l) => console.log(l));
  const failed = data.results.filter((r) => !r.ok).length;
  console.log(`${data.results.length - failed} passed, ${failed} failed`);
  if (failed) throw new Error(`${failed} e2e test(s) failed`);
}

const g = globalThis as { suite?: Function; test?: Function; suiteTeardown?: Function; suiteSetup?: Function };
if (typeof g.suite === 'function' && typeof g.test === 'function' && typeof g.suiteTeardown === 'function') {
  const cfg = loadConfig(process.env.EXEC_SERVER_E2E_CONFIG);
  setConfig(cfg);
  registerWithMocha(g as { suite: Function; test: Function; suiteTeardown: Function }, cfg.approvalDriver ? undefined : prepareWithoutHarness);
}
