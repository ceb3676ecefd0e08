// `npm run test:e2e`: the exec-server extension tested inside a real VS Code.
// @vscode/test-electron cannot download VS Code on these machines, so this harness runs VS Code's
// own server + web workbench (code-server, from npm) and drives it with headless Chromium:
//   1. test/e2e/setup.sh installs code-server, Node 24, Chromium and playwright-core (cached);
//   2. builds the product VSIX of this machine's target (package-vsix.mjs --target linux-x64 → dist/exec-server-linux-x64.vsix) and the separate
//      test-runner VSIX (build-runner.mjs), installs both into a fresh extensions dir;
//   3. starts code-server on 127.0.0.1, opens a temp workspace in Chromium; the runner extension
//      runs the suite in the extension host and writes a results file;
//   4. answers approval notifications the suite asks for (clicks the real buttons), prints each
//      result, saves test-results/e2e-workbench.png, prints "N passed, N failed", and kills
//      every process it started.
// Env: EXEC_SERVER_E2E_GREP (run tests whose name contains it; a|b: either), EXEC_SERVER_E2E_TIMEOUT (s, whole run, default 1800; each test has its own limit and a 200 s stall ends the run sooner),
//      EXEC_SERVER_E2E_VSIX (use this product VSIX instead of packaging one), EXEC_SERVER_E2E_KEEP=1 (keep temp dir),
//      EXEC_SERVER_E2E_SKIP_BUILD=1 (use dist/ as it is; for iterating on the suite),
//      EXEC_SERVER_E2E_STARTUP_TIMEOUT (s from opening the workbench to the suite's first write, default 180).
import { copyFileSync, cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { answerPendingApprovals } from './harness/approvals.mjs';
import { answerUiRequests } from './harness/ui.mjs';
import { changeIn } from './harness/wait.mjs';
import { repo, startWorkbench, stopWorkbench } from './harness/workbench.mjs';

const resultsDir = path.join(repo, 'test-results');
const TIMEOUT_S = Number(process.env.EXEC_SERVER_E2E_TIMEOUT ?? 1800);
const STARTUP_TIMEOUT_S = Number(process.env.EXEC_SERVER_E2E_STARTUP_TIMEOUT ?? 180);
const STALL_TIMEOUT_S = 200;
const started = Date.now();
const log = (msg) => console.error(`[e2e ${((Date.now() - started) / 1000).toFixed(0).padStart(3)}s] ${msg}`);

const wb = {}; // what startWorkbench started (browser, code-server, temp dir)
let exitCode = 1;

/** Ends the run: always prints the summary line last on stdout. */
function finish(passed, failed) {
  console.log(`${passed} passed, ${failed} failed`);
  exitCode = failed > 0 || passed === 0 ? 1 : 0;
}

function readResults(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

async function main() {
  await startWorkbench(wb, {
    log, resultsDir, logName: 'e2e-code-server.log', viewport: { width: 1400, height: 900 },
    makeConfig: (dirs, tmp) => ({
      repo, resultsFile: path.join(tmp, 'results.json'), workDir: dirs.work, controlDir: dirs.control, nodePath: process.execPath,
      grep: process.env.EXEC_SERVER_E2E_GREP || undefined, approvalDriver: true, logsDir: path.join(dirs.ud, 'logs'),
    }),
  });
  const { page, dirs, csLog, pageErrors, opened } = wb;
  const resultsFile = path.join(wb.tmp, 'results.json');
  log('workbench opened; waiting for the suite');

  const printed = new Set();
  let data;
  const deadline = started + TIMEOUT_S * 1000;
  let timedOut = false;
  let lastCount = -2;
  let lastProgress = Date.now();
  for (;;) {
    data = readResults(resultsFile);
    for (const r of data?.results ?? []) {
      if (printed.has(r.name)) continue;
      printed.add(r.name);
      console.log(`${r.ok ? '  ✔' : '  ✖'} ${r.name} (${r.ms} ms)`);
      if (!r.ok) console.log(String(r.error).split('\n').slice(0, 4).map((l) => `      ${l}`).join('\n'));
    }
    if (data?.done) break;
    // Every test has its own timeout (at most 120 s): no new result for longer means the
    // extension host is gone or wedged.
    const count = data?.results?.length ?? -1;
    if (count !== lastCount) {
      lastCount = count;
      lastProgress = Date.now();
    } else if (data && Date.now() - lastProgress > STALL_TIMEOUT_S * 1000) {
      timedOut = true;
      log(`no test finished for ${STALL_TIMEOUT_S} s: the extension host stalled`);
      break;
    }
    if (wb.codeServer.exitCode !== null) {
      log(`code-server exited (code ${wb.codeServer.exitCode})`);
      break;
    }
    if (Date.now() > deadline) {
      timedOut = true;
      log(`timed out after ${TIMEOUT_S} s`);
      break;
    }
    // The runner writes the planned tests as soon as it activates; if it never does (the product
    // extension failed to activate, so its dependent never starts), fail early with the logs.
    if (!data && Date.now() - opened > STARTUP_TIMEOUT_S * 1000) {
      timedOut = true;
      log(`the runner extension did not start the suite within ${STARTUP_TIMEOUT_S} s of opening the workbench`);
      break;
    }
    await answerPendingApprovals(page, dirs.control, log);
    await answerUiRequests(page, dirs.control, log);
    await changeIn(dirs.control, 250);
  }

  try {
    await page.screenshot({ path: path.join(resultsDir, 'e2e-workbench.png') });
  } catch (err) {
    log(`screenshot failed: ${err.message}`);
  }
  if (existsSync(resultsFile)) copyFileSync(resultsFile, path.join(resultsDir, 'e2e-results.json'));
  // VS Code's own logs (extension host, the "Exec Server" output channel) for post-mortems.
  const logsDir = path.join(resultsDir, 'e2e-logs');
  rmSync(logsDir, { recursive: true, force: true });
  if (existsSync(path.join(dirs.ud, 'logs'))) cpSync(path.join(dirs.ud, 'logs'), logsDir, { recursive: true });

  const results = data?.results ?? [];
  let passed = results.filter((r) => r.ok).length;
  let failed = results.length - passed;
  const notRun = (data?.planned ?? []).filter((n) => !printed.has(n));
  for (const n of notRun) console.log(`  ✖ ${n} (not run: ${timedOut ? 'timeout' : 'suite ended early'})`);
  failed += notRun.length;
  if (data?.fatal) {
    console.log(`  ✖ suite: ${data.fatal}`);
    failed += 1;
  }
  if (!data) {
    console.log(`  ✖ suite: the runner extension never started the suite${timedOut ? ' (timeout)' : ''}: did the product ` +
      `extension fail to activate? See test-results/e2e-logs/*/exthost1/remoteexthost.log, ${path.relative(repo, csLog)}, test-results/e2e-workbench.png`);
    if (pageErrors.length) console.log(`      page errors: ${pageErrors.slice(0, 3).join(' | ')}`);
    failed += 1;
  } else if (!data.done && !data.fatal && notRun.length === 0) {
    console.log(`  ✖ suite: did not finish${timedOut ? ' (timeout)' : ''}`);
    failed += 1;
  }
  finish(passed, failed);
}

async function cleanup() {
  await stopWorkbench(wb, log);
}

let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    if (interrupted) return;
    interrupted = true;
    log(`${sig}: cleaning up`);
    cleanup().finally(() => process.exit(1));
  });
}

try {
  await main();
} catch (err) {
  log(err?.stack ?? String(err));
  console.log(`  ✖ e2e harness: ${String(err?.message ?? err).split('\n')[0]}`);
  finish(0, 1);
} finally {
  await cleanup();
}
log(`finished in ${((Date.now() - started) / 1000).toFixed(0)} s`);
process.exit(exitCode);
