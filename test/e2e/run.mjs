// `npm run test:e2e`: the exec-server extension tested inside a real VS Code.
// @vscode/test-electron cannot download VS Code on these machines, so this harness runs VS Code's
// own server + web workbench (code-server, from npm) and drives it with headless Chromium:
//   1. test/e2e/setup.sh installs code-server, Node 24, Chromium and playwright-core (cached);
//   2. builds the product VSIX (npm run package → dist/exec-server.vsix) and the separate
//      test-runner VSIX (build-runner.mjs), installs both into a fresh extensions dir;
//   3. starts code-server on 127.0.0.1, opens a temp workspace in Chromium; the runner extension
//      runs the suite in the extension host and writes a results file;
//   4. answers approval notifications the suite asks for (clicks the real buttons), prints each
//      result, saves test-results/e2e-workbench.png, prints "N passed, N failed", and kills
//      every process it started.
// Env: EXEC_SERVER_E2E_GREP (run tests whose name contains it), EXEC_SERVER_E2E_TIMEOUT (s, whole run, default 600),
//      EXEC_SERVER_E2E_VSIX (use this product VSIX instead of packaging one), EXEC_SERVER_E2E_KEEP=1 (keep temp dir),
//      EXEC_SERVER_E2E_SKIP_BUILD=1 (use dist/ as it is; for iterating on the suite),
//      EXEC_SERVER_E2E_STARTUP_TIMEOUT (s from opening the workbench to the suite's first write, default 180).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { answerPendingApprovals } from './harness/approvals.mjs';
import { killTree } from './harness/processes.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const resultsDir = path.join(repo, 'test-results');
const TIMEOUT_S = Number(process.env.EXEC_SERVER_E2E_TIMEOUT ?? 600);
const STARTUP_TIMEOUT_S = Number(process.env.EXEC_SERVER_E2E_STARTUP_TIMEOUT ?? 180);
const STALL_TIMEOUT_S = 200;
const started = Date.now();
const log = (msg) => console.error(`[e2e ${((Date.now() - started) / 1000).toFixed(0).padStart(3)}s] ${msg}`);

let codeServer;
let browser;
let tmp;
let exitCode = 1;

/** Ends the run: always prints the summary line last on stdout. */
function finish(passed, failed) {
  console.log(`${passed} passed, ${failed} failed`);
  exitCode = failed > 0 || passed === 0 ? 1 : 0;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function setup() {
  // Bounded: a first install takes ~3 min; a stuck apt-get or npm must not hang CI.
  const r = spawnSync('bash', [path.join(here, 'setup.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 12 * 60_000 });
  if (r.status !== 0) throw new Error(`test/e2e/setup.sh failed (${r.error ? r.error.message : `exit ${r.status}`})`);
  const env = Object.fromEntries(r.stdout.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  for (const k of ['NODE24', 'CODE_SERVER', 'PLAYWRIGHT', 'CHROMIUM']) if (!env[k]) throw new Error(`setup.sh did not report ${k}`);
  return env;
}

function npmRun(script) {
  return spawnSync('npm', ['run', '--silent', script], { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 5 * 60_000 });
}

function buildProductVsix() {
  const b = process.env.EXEC_SERVER_E2E_SKIP_BUILD === '1' ? { status: 0 } : npmRun('build');
  if (b.status !== 0) throw new Error(`npm run build failed (exit ${b.status}):\n${(b.stdout + b.stderr).split('\n').slice(-30).join('\n')}`);
  if (process.env.EXEC_SERVER_E2E_VSIX) return path.resolve(process.env.EXEC_SERVER_E2E_VSIX);
  const r = npmRun('package');
  const vsix = path.join(repo, 'dist', 'exec-server.vsix');
  if (r.status !== 0 || !existsSync(vsix)) {
    throw new Error(`npm run package failed (exit ${r.status}):\n${(r.stdout + r.stderr).split('\n').slice(-30).join('\n')}`);
  }
  return vsix;
}

async function waitHealthy(port, child) {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`code-server exited early (code ${child.exitCode})`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('code-server did not answer /healthz within 60 s');
}

function readResults(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

async function main() {
  mkdirSync(resultsDir, { recursive: true });
  log('setup (code-server, Chromium, Node 24, playwright-core)');
  const tools = setup();
  log('building the CLI and the product VSIX (npm run build, npm run package)');
  const productVsix = buildProductVsix();
  log('building the test-runner VSIX');
  const runnerVsix = execFileSync(process.execPath, [path.join(here, 'build-runner.mjs')], { cwd: repo, encoding: 'utf8' }).trim().split('\n').pop();
  // The remote-environment tests start dist/cli.js; without it they fail with their own message.
  if (!existsSync(path.join(repo, 'dist', 'cli.js'))) log('warning: dist/cli.js missing after the build');

  tmp = mkdtempSync(path.join(os.tmpdir(), 'exec-server-e2e-'));
  const dirs = Object.fromEntries(['ud', 'ext', 'ws', 'work', 'control', 'xdg-config', 'xdg-data', 'xdg-cache'].map((d) => [d, path.join(tmp, d)]));
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  const resultsFile = path.join(tmp, 'results.json');
  const config = {
    repo, resultsFile, workDir: dirs.work, controlDir: dirs.control, nodePath: process.execPath,
    grep: process.env.EXEC_SERVER_E2E_GREP || undefined, approvalDriver: true,
  };
  const configFile = path.join(tmp, 'e2e-config.json');
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  // A multi-root workspace from the start: adding a remote folder later then keeps the first
  // folder, so the extension host (and the running suite) is not restarted.
  const workspaceFile = path.join(tmp, 'e2e.code-workspace');
  writeFileSync(workspaceFile, JSON.stringify({ folders: [{ path: dirs.ws }] }));
  mkdirSync(path.join(dirs.ud, 'User'), { recursive: true });
  writeFileSync(path.join(dirs.ud, 'User', 'settings.json'), JSON.stringify({
    'execServerE2E.config': configFile,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'extensions.ignoreRecommendations': true,
    'terminal.integrated.enablePersistentSessions': false,
    'window.restoreWindows': 'none',
    'update.mode': 'none',
    // Processes/terminals the suite starts through the API run without a prompt; the approval
    // tests switch the policy to alwaysAsk / askOutsideWorkspace themselves and restore it.
    'execServer.approval.policy': 'neverAsk',
    // Keep the workbench plain: no chat side bar over the panel the terminal tests resize.
    'chat.disableAIFeatures': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
  }, null, 2));

  const common = ['--user-data-dir', dirs.ud, '--extensions-dir', dirs.ext];
  // Keep the user's home untouched: code-server otherwise writes ~/.config/code-server/config.yaml,
  // ~/.local/share/code-server and ~/.cache/Microsoft; Chromium ~/.config/chromium and ~/.cache/dconf.
  const xdg = { XDG_CONFIG_HOME: dirs['xdg-config'], XDG_DATA_HOME: dirs['xdg-data'], XDG_CACHE_HOME: dirs['xdg-cache'] };
  const csEnv = { ...process.env, ...xdg };
  log('installing both VSIXs into a fresh extensions dir');
  const inst = spawnSync(tools.NODE24, [tools.CODE_SERVER, ...common, '--install-extension', productVsix, '--install-extension', runnerVsix],
    { encoding: 'utf8', env: csEnv });
  if (inst.status !== 0) throw new Error(`code-server --install-extension failed:\n${inst.stdout}${inst.stderr}`);

  const port = await freePort();
  const csLog = path.join(resultsDir, 'e2e-code-server.log');
  const logFd = openSync(csLog, 'w');
  codeServer = spawn(tools.NODE24, [tools.CODE_SERVER, ...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`,
    '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust', '--disable-getting-started-override', workspaceFile], {
    stdio: ['ignore', logFd, logFd],
    detached: true, // own process group, so everything it starts can be killed at the end
    env: { ...csEnv, EXEC_SERVER_E2E_CONFIG: configFile, EXEC_SERVER_REPO: repo },
  });
  log(`code-server pid ${codeServer.pid} on 127.0.0.1:${port} (log: ${path.relative(repo, csLog)})`);
  await waitHealthy(port, codeServer);

  const { chromium } = createRequire(path.join(path.dirname(tools.PLAYWRIGHT), '/'))('playwright-core');
  browser = await chromium.launch({
    executablePath: tools.CHROMIUM,
    env: { ...process.env, ...xdg },
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--no-first-run', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`http://127.0.0.1:${port}/?workspace=${encodeURIComponent(workspaceFile)}`);
  const opened = Date.now();
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
    if (codeServer.exitCode !== null) {
      log(`code-server exited (code ${codeServer.exitCode})`);
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
    await new Promise((r) => setTimeout(r, 250));
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
  try {
    await browser?.close();
  } catch {}
  if (codeServer?.pid) await killTree(codeServer.pid);
  if (tmp && process.env.EXEC_SERVER_E2E_KEEP !== '1') rmSync(tmp, { recursive: true, force: true });
  else if (tmp) log(`kept ${tmp}`);
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
