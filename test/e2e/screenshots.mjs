// `npm run screenshots`: the README screenshots, taken in the real VS Code workbench (the e2e
// harness: code-server + headless Chromium, the product VSIX and the runner extension). The runner
// extension plays runner-ext/src/scene.ts (selected by `scene: true` in its config); for each
// shot it announces, this script waits until the workbench DOM shows what the picture is for,
// then saves docs/screenshots/<shot>.png (1280×800, default dark theme):
//   terminal         a Local terminal (execServer.newTerminal) after `ls -la; stty size`
//   remote-explorer  the Explorer on an exec-server:// folder of a remote environment (the
//                    project's CLI on 127.0.0.1) with one of its files open
//   approval         the approval notification of an API run() under alwaysAsk (answered Deny after)
// Env: EXEC_SERVER_E2E_SKIP_BUILD=1 / EXEC_SERVER_E2E_VSIX / EXEC_SERVER_E2E_KEEP=1 as for run.mjs.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { answerPendingApprovals } from './harness/approvals.mjs';
import { waitUntil } from './harness/wait.mjs';
import { repo, startWorkbench, stopWorkbench } from './harness/workbench.mjs';

const outDir = path.join(repo, 'docs', 'screenshots');
const started = Date.now();
const log = (msg) => console.error(`[shots ${((Date.now() - started) / 1000).toFixed(0).padStart(3)}s] ${msg}`);
const SHOT_TIMEOUT_MS = 180_000;

/** What each picture must show before it is taken: a DOM check returning an error text or ''. */
const SHOTS = {
  terminal: async (page) => {
    const text = await page.locator('.terminal-wrapper.active .xterm-rows, .terminal .xterm-rows').first().innerText({ timeout: 2000 });
    if (!/total \d+/.test(text) || !text.includes('package.json')) return `terminal shows no ls -la output yet: ${JSON.stringify(text.slice(0, 200))}`;
    if (!/^\s*\d+ \d+\s*$/m.test(text)) return 'terminal shows no stty size output yet';
    return '';
  },
  'remote-explorer': async (page) => {
    const explorer = await page.locator('.explorer-folders-view').innerText({ timeout: 2000 });
    for (const want of ['demo-app (devbox)', 'src', 'server.js', 'routes.js', 'package.json']) {
      if (!explorer.includes(want)) return `Explorer does not show "${want}" yet`;
    }
    const tab = await page.locator('.tabs-container .tab.active').innerText({ timeout: 2000 });
    if (!tab.replace(/\s+/g, '').includes('server.js')) return `the active editor tab is "${tab}"`;
    return '';
  },
  approval: async (page) => {
    const toast = page.locator('.notification-toast-container .notification-list-item').filter({ hasText: 'Exec Server:' });
    if (!(await toast.count())) return 'no Exec Server notification yet';
    const buttons = (await toast.first().locator('.notification-list-item-buttons-container').getByRole('button').allInnerTexts()).map((b) => b.trim());
    if (buttons.join('|') !== 'Allow|Allow for Session|Deny') return `notification buttons are ${JSON.stringify(buttons)}`;
    return '';
  },
};

const wb = {};
let exitCode = 1;

async function main() {
  await startWorkbench(wb, {
    log, resultsDir: path.join(repo, 'test-results'), logName: 'screenshots-code-server.log', viewport: { width: 1280, height: 800 }, colorScheme: 'dark',
    makeConfig: (dirs, tmp) => ({
      repo, resultsFile: path.join(tmp, 'results.json'), workDir: dirs.work, controlDir: dirs.control, nodePath: process.execPath,
      approvalDriver: true, scene: true,
    }),
    workspaceName: 'demo',
    workspaceFolders: (dirs) => [{ path: dirs.ws, name: 'notes' }],
    settings: {
      'editor.minimap.enabled': false,
      'workbench.layoutControl.enabled': false,
      'terminal.integrated.fontSize': 14,
      // The DOM renderer: its rows are text the harness can check before the shot.
      'terminal.integrated.gpuAcceleration': 'off',
      'workbench.colorTheme': 'Dark 2026', // this VS Code's default dark theme (theme-defaults),
      'window.autoDetectColorScheme': false,
      'remote.autoForwardPorts': false,
    },
  });
  writeFileSync(path.join(wb.dirs.ws, 'TODO.md'), '- try the remote terminal\n');
  const { page, dirs } = wb;
  log('workbench opened; waiting for the scene');
  mkdirSync(outDir, { recursive: true });
  const taken = [];
  for (const name of Object.keys(SHOTS)) {
    const ready = path.join(dirs.control, `scene-${name}.ready`);
    let why = 'the scene did not announce it';
    await waitUntil(async () => {
      const done = readDone(dirs.control);
      if (done && !done.ok) throw new Error(`scene failed before ${name}: ${done.error}`);
      if (wb.codeServer.exitCode !== null) throw new Error(`code-server exited (code ${wb.codeServer.exitCode})`);
      if (!existsSync(ready)) return false;
      // The scene announced the view: shot once it is rendered (SHOTS names what must show).
      const now = await SHOTS[name](page).catch((err) => String(err?.message ?? err).split('\n')[0]);
      if (!now) return true;
      if (now !== why) log(`${name}: waiting: ${now}`);
      why = now;
      return false;
    }, { timeout: SHOT_TIMEOUT_MS, interval: 500, what: name }).catch((err) => {
      throw /^timed out after/.test(err.message) ? new Error(`${name}: ${why} (after ${SHOT_TIMEOUT_MS / 1000} s)`) : err;
    });
    writeFileSync(path.join(dirs.control, `scene-${name}.seen`), ''); // the scene stops changing the view
    await new Promise((r) => setTimeout(r, 700)); // caret blink / fade-in of toasts: animations, no event says they are at rest
    const file = path.join(outDir, `${name}.png`);
    await page.screenshot({ path: file });
    writeFileSync(path.join(dirs.control, `scene-${name}.taken`), '');
    log(`saved ${path.relative(repo, file)} (${statSync(file).size} bytes)`);
    taken.push(name);
  }
  // The scene answers Deny through the approval handshake, then reports how run() ended.
  const done = await waitUntil(async () => {
    const d = readDone(dirs.control);
    if (d) return d;
    await answerPendingApprovals(page, dirs.control, log); // its requests are files in the control dir
    return undefined;
  }, { timeout: 60_000, interval: 250, what: 'the scene to finish after the last shot' }).catch((err) => {
    throw /^timed out after/.test(err.message) ? new Error('the scene did not finish within 60 s of the last shot') : err;
  });
  if (!done.ok) throw new Error(`scene failed: ${done.error}`);
  log(`scene done; run() after Deny: ${done.afterDeny}`);
  console.log(`${taken.length} screenshots saved in ${path.relative(repo, outDir)}: ${taken.join(', ')}`);
  exitCode = 0;
}

function readDone(controlDir) {
  try {
    return JSON.parse(readFileSync(path.join(controlDir, 'scene.done.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    log(`${sig}: cleaning up`);
    stopWorkbench(wb, log).finally(() => process.exit(1));
  });
}

try {
  await main();
} catch (err) {
  log(err?.stack ?? String(err));
  // What the workbench showed instead, for the post-mortem.
  await wb.page?.screenshot({ path: path.join(repo, 'test-results', 'screenshots-failed.png') }).catch(() => {});
  console.log(`screenshots failed: ${String(err?.message ?? err).split('\n')[0]}`);
} finally {
  await stopWorkbench(wb, log);
}
process.exit(exitCode);
