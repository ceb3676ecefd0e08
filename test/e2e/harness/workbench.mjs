// Starting the real VS Code workbench for run.mjs (the e2e suite) and screenshots.mjs (README
// screenshots): setup.sh → build both VSIXs → fresh user-data/extensions dirs → code-server on
// 127.0.0.1 → headless Chromium on the workspace. Everything it starts is recorded in `state`
// as soon as it exists, so stopWorkbench(state) cleans up even after a failure half-way.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { killTree } from './processes.mjs';
import { waitUntil } from './wait.mjs';

const e2eDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const repo = path.resolve(e2eDir, '../..');

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
  // Under `npm test` the install stage has installed everything, so this only finds the tools;
  // `npm run test:e2e` alone installs them here. Bounded: a first install takes ~3 min; a stuck
  // apt-get or npm must not hang CI. The installer's own messages (stderr) name what failed.
  const r = spawnSync('bash', [path.join(e2eDir, 'setup.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 20 * 60_000 });
  if (r.status !== 0) throw new Error(`test/e2e/setup.sh failed (${r.error ? r.error.message : `exit ${r.status}`}; the [tools] lines above say which tool, command and output)`);
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
  // The VSIX of this machine's target only (what the Marketplace would serve here): `npm run
  // package` builds all five, which the package tests (test/package) check.
  const target = `${process.platform}-${process.arch}`;
  const vsix = path.join(repo, 'dist', `exec-server-${target}.vsix`);
  const r = spawnSync(process.execPath, [path.join(repo, 'scripts', 'package-vsix.mjs'), '--target', target, '--out', vsix], { cwd: repo, encoding: 'utf8', timeout: 5 * 60_000 });
  if (r.status !== 0 || !existsSync(vsix)) {
    throw new Error(`packaging the ${target} VSIX failed (exit ${r.status}):\n${(r.stdout + r.stderr).split('\n').slice(-30).join('\n')}`);
  }
  return vsix;
}

async function waitHealthy(port, child) {
  const healthy = async () => {
    if (child.exitCode !== null) throw new Error(`code-server exited early (code ${child.exitCode})`);
    return fetch(`http://127.0.0.1:${port}/healthz`).then((res) => res.ok, () => false);
  };
  await waitUntil(healthy, { timeout: 60_000, interval: 200, what: 'code-server to answer /healthz' });
}

/** The user settings of every harness run; `extra` adds to / overrides them. */
function userSettings(configFile, extra) {
  return {
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
    ...extra,
  };
}

/**
 * Builds, installs and opens the workbench. Options:
 *   log(msg); resultsDir (gets <logName>); logName (code-server log file name);
 *   makeConfig(dirs, tmp) → the runner extension's config object (written to tmp/e2e-config.json);
 *   workspaceName (default e2e), workspaceFolders(dirs) → the name and folders of the multi-root workspace file;
 *   settings (extra user settings); viewport {width, height}; colorScheme (Chromium's preferred scheme, optional).
 * Fills `state` with {tools, tmp, dirs, configFile, codeServer, csLog, browser, page, pageErrors, opened}.
 */
export async function startWorkbench(state, opts) {
  const { log } = opts;
  mkdirSync(opts.resultsDir, { recursive: true });
  log('setup (code-server, Chromium, Node 24, playwright-core)');
  const tools = setup();
  state.tools = tools;
  log('building the CLI and the product VSIX (npm run build, package-vsix.mjs --target ' + process.platform + '-' + process.arch + ')');
  const productVsix = buildProductVsix();
  log('building the test-runner VSIX');
  const runnerVsix = execFileSync(process.execPath, [path.join(e2eDir, 'build-runner.mjs')], { cwd: repo, encoding: 'utf8' }).trim().split('\n').pop();
  // The remote-environment tests start dist/cli.js; without it they fail with their own message.
  if (!existsSync(path.join(repo, 'dist', 'cli.js'))) log('warning: dist/cli.js missing after the build');

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'exec-server-e2e-'));
  state.tmp = tmp;
  const dirs = Object.fromEntries(['ud', 'ext', 'ws', 'work', 'control', 'xdg-config', 'xdg-data', 'xdg-cache'].map((d) => [d, path.join(tmp, d)]));
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  state.dirs = dirs;
  const configFile = path.join(tmp, 'e2e-config.json');
  writeFileSync(configFile, JSON.stringify(opts.makeConfig(dirs, tmp), null, 2));
  state.configFile = configFile;
  // A multi-root workspace from the start: adding a remote folder later then keeps the first
  // folder, so the extension host (and the running suite) is not restarted.
  const workspaceFile = path.join(tmp, `${opts.workspaceName ?? 'e2e'}.code-workspace`);
  writeFileSync(workspaceFile, JSON.stringify({ folders: opts.workspaceFolders ? opts.workspaceFolders(dirs) : [{ path: dirs.ws }] }));
  mkdirSync(path.join(dirs.ud, 'User'), { recursive: true });
  writeFileSync(path.join(dirs.ud, 'User', 'settings.json'), JSON.stringify(userSettings(configFile, opts.settings), null, 2));

  const common = ['--user-data-dir', dirs.ud, '--extensions-dir', dirs.ext];
  // Keep the user's home untouched: code-server otherwise writes ~/.config/code-server/config.yaml,
  // ~/.local/share/code-server and ~/.cache/Microsoft; Chromium ~/.config/chromium and ~/.cache/dconf.
  const xdg = { XDG_CONFIG_HOME: dirs['xdg-config'], XDG_DATA_HOME: dirs['xdg-data'], XDG_CACHE_HOME: dirs['xdg-cache'] };
  // The terminals' shells run this machine's ~/.bashrc. Where it calls `pyenv init` (these
  // machines' image does), every shell runs `pyenv rehash`, which waits up to 60 s for a lock file
  // that a shell killed mid-rehash (tests close terminals quickly) leaves behind: every later
  // terminal then showed no prompt. One second bounds that wait (pyenv then warns and goes on).
  const csEnv = { ...process.env, ...xdg, PYENV_REHASH_TIMEOUT: process.env.PYENV_REHASH_TIMEOUT ?? '1' };
  log('installing both VSIXs into a fresh extensions dir');
  const inst = spawnSync(tools.NODE24, [tools.CODE_SERVER, ...common, '--install-extension', productVsix, '--install-extension', runnerVsix],
    { encoding: 'utf8', env: csEnv });
  if (inst.status !== 0) throw new Error(`code-server --install-extension failed:\n${inst.stdout}${inst.stderr}`);

  const port = await freePort();
  const csLog = path.join(opts.resultsDir, opts.logName);
  state.csLog = csLog;
  const logFd = openSync(csLog, 'w');
  state.codeServer = spawn(tools.NODE24, [tools.CODE_SERVER, ...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`,
    '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust', '--disable-getting-started-override', workspaceFile], {
    stdio: ['ignore', logFd, logFd],
    detached: true, // own process group, so everything it starts can be killed at the end
    env: { ...csEnv, EXEC_SERVER_E2E_CONFIG: configFile, EXEC_SERVER_REPO: repo },
  });
  log(`code-server pid ${state.codeServer.pid} on 127.0.0.1:${port} (log: ${path.relative(repo, csLog)})`);
  await waitHealthy(port, state.codeServer);

  const { chromium } = createRequire(path.join(path.dirname(tools.PLAYWRIGHT), '/'))('playwright-core');
  state.browser = await chromium.launch({
    executablePath: tools.CHROMIUM,
    env: { ...process.env, ...xdg },
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--no-first-run', '--disable-dev-shm-usage'],
  });
  const page = await state.browser.newPage({ viewport: opts.viewport, ...(opts.colorScheme ? { colorScheme: opts.colorScheme } : {}) });
  state.page = page;
  state.pageErrors = [];
  page.on('pageerror', (e) => state.pageErrors.push(String(e)));
  // Under load (the shared 2 cores) the workbench page took over 30 s, Playwright's default, to load.
  await page.goto(`http://127.0.0.1:${port}/?workspace=${encodeURIComponent(workspaceFile)}`, { timeout: 120_000 });
  state.opened = Date.now();
  return state;
}

/** Closes the browser, kills code-server's whole tree, removes the temp dir unless EXEC_SERVER_E2E_KEEP=1. */
export async function stopWorkbench(state, log) {
  try {
    await state.browser?.close();
  } catch {}
  if (state.codeServer?.pid) await killTree(state.codeServer.pid);
  if (state.tmp && process.env.EXEC_SERVER_E2E_KEEP !== '1') rmSync(state.tmp, { recursive: true, force: true });
  else if (state.tmp) log(`kept ${state.tmp}`);
}
