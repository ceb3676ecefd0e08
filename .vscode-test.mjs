// The e2e suite (test/e2e/suite) for machines that can download VS Code.
//   npx @vscode/test-cli            → loads this config: Mocha (TDD) inside VS Code runs out/e2e/suite.js
//   node .vscode-test.mjs           → @vscode/test-electron: downloads VS Code, runs the same suite via run()
// Both need `npm run build && node test/e2e/build-runner.mjs` first (the direct mode does it).
// On machines without access to the VS Code download (CI here), `npm run test:e2e` runs the
// same suite in code-server + headless Chromium instead, and also answers the approval
// notifications; without that harness the agent approval tests fail by design.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = path.dirname(fileURLToPath(import.meta.url));
const suite = path.join(repo, 'out', 'e2e', 'suite.js');

/** @type {import('@vscode/test-cli').IDesktopTestConfiguration} */
const config = {
  label: 'exec-server e2e',
  files: 'out/e2e/suite.js',
  extensionDevelopmentPath: repo,
  workspaceFolder: mkdtempSync(path.join(os.tmpdir(), 'exec-server-e2e-ws-')),
  launchArgs: ['--disable-workspace-trust'],
  env: { EXEC_SERVER_REPO: repo, EXEC_SERVER_E2E_NODE: process.execPath },
  mocha: { ui: 'tdd', timeout: 120_000 },
};
export default config;

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: repo, stdio: 'inherit' });
  execFileSync(process.execPath, [path.join(repo, 'test/e2e/build-runner.mjs')], { cwd: repo, stdio: 'inherit' });
  const { runTests } = await import('@vscode/test-electron');
  try {
    await runTests({
      extensionDevelopmentPath: repo,
      extensionTestsPath: suite,
      launchArgs: [config.workspaceFolder, ...config.launchArgs],
      extensionTestsEnv: config.env,
    });
  } catch (err) {
    console.error(`e2e (test-electron) failed: ${err}`);
    process.exit(1);
  }
}
