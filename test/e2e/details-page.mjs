// `node test/e2e/details-page.mjs`: checks in the real workbench (code-server + headless
// Chromium, as the e2e harness) that the packed VSIX's Details page shows the README
// screenshots. VS Code's extension editor shows README images only from https URLs, so the
// VSIX is packed with `--base-url` pointing at a local https server (self-signed certificate;
// this Chromium is told to accept it) that serves docs/screenshots/*.png and records each
// request. Passes when every image of README.md is on the page, loaded (naturalWidth > 0) and
// was fetched from that server. Saves test-results/details-page.png. Everything it starts is
// stopped at the end.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { killTree } from './harness/processes.mjs';
import { repo } from './harness/workbench.mjs';
import { waitUntil } from './harness/wait.mjs';

const log = (m) => console.error(`[details-page] ${m}`);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'exec-server-details-'));
const resultsDir = path.join(repo, 'test-results');
let server;
let codeServer;
let browser;

function tools() {
  const r = spawnSync('bash', [path.join(repo, 'test/e2e/setup.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 20 * 60_000 });
  if (r.status !== 0) throw new Error('test/e2e/setup.sh failed');
  return Object.fromEntries(r.stdout.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function main() {
  const expected = [...readFileSync(path.join(repo, 'README.md'), 'utf8').matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]);
  if (!expected.length) throw new Error('README.md has no images');

  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${tmp}/key.pem`, '-out', `${tmp}/cert.pem`, '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
  const served = new Set();
  server = https.createServer({ key: readFileSync(`${tmp}/key.pem`), cert: readFileSync(`${tmp}/cert.pem`) }, (req, res) => {
    const m = /^\/exec-server\/(docs\/screenshots\/[\w.-]+\.png)$/.exec(req.url ?? '');
    if (!m) return void res.writeHead(404).end();
    served.add(m[1]);
    res.writeHead(200, { 'content-type': 'image/png' }).end(readFileSync(path.join(repo, m[1])));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `https://127.0.0.1:${server.address().port}/exec-server/`;

  log(`packing the VSIX with --base-url ${base}`);
  const vsix = path.join(tmp, 'exec-server.vsix');
  const pack = spawnSync(process.execPath, [path.join(repo, 'scripts/package-vsix.mjs'), '--target', 'universal', '--base-url', base, '--out', vsix], { encoding: 'utf8' });
  if (pack.status !== 0) throw new Error(`package-vsix failed:\n${pack.stdout}${pack.stderr}`);

  const t = tools();
  const dirs = Object.fromEntries(['ud', 'ext', 'xdg-config', 'xdg-data', 'xdg-cache'].map((d) => [d, path.join(tmp, d)]));
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  mkdirSync(path.join(dirs.ud, 'User'), { recursive: true });
  writeFileSync(path.join(dirs.ud, 'User', 'settings.json'), JSON.stringify({
    'workbench.startupEditor': 'none', 'extensions.autoUpdate': false, 'extensions.autoCheckUpdates': false,
    'chat.disableAIFeatures': true, 'security.workspace.trust.enabled': false, 'telemetry.telemetryLevel': 'off',
  }));
  const env = { ...process.env, XDG_CONFIG_HOME: dirs['xdg-config'], XDG_DATA_HOME: dirs['xdg-data'], XDG_CACHE_HOME: dirs['xdg-cache'] };
  const common = ['--user-data-dir', dirs.ud, '--extensions-dir', dirs.ext];
  const inst = spawnSync(t.NODE24, [t.CODE_SERVER, ...common, '--install-extension', vsix], { encoding: 'utf8', env });
  if (inst.status !== 0) throw new Error(`--install-extension failed:\n${inst.stdout}${inst.stderr}`);
  const port = await freePort();
  codeServer = spawn(t.NODE24, [t.CODE_SERVER, ...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry',
    '--disable-update-check', '--disable-workspace-trust', '--disable-getting-started-override', tmp], { stdio: 'ignore', detached: true, env });
  await waitUntil(() => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false), { timeout: 60_000, interval: 200, what: 'code-server to answer /healthz' });

  const { chromium } = createRequire(path.join(path.dirname(t.PLAYWRIGHT), '/'))('playwright-core');
  browser = await chromium.launch({ executablePath: t.CHROMIUM, env, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--ignore-certificate-errors'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  log('opening the Details page (Extensions view → @installed Exec Server)');
  await page.keyboard.press('Control+Shift+X');
  await page.locator('.extensions-viewlet .suggest-input-container').first().click({ timeout: 30_000 });
  await page.keyboard.type('@installed Exec Server');
  await page.locator('.extensions-viewlet .monaco-list-row').filter({ hasText: 'Exec Server' }).first().click({ timeout: 30_000 });

  // The README renders in a webview (nested iframes): look for its images in every frame.
  let images = [];
  const allLoaded = async () => {
    images = [];
    for (const f of page.frames()) {
      const found = await f.evaluate(() => [...document.images].map((im) => ({ src: im.getAttribute('src') ?? '', loaded: im.complete && im.naturalWidth > 0 }))).catch(() => []);
      images.push(...found.filter((im) => im.src.startsWith(base)));
    }
    return images.length >= expected.length && images.every((im) => im.loaded);
  };
  // Not loaded within a minute: the checks below say which image is missing.
  await waitUntil(allLoaded, { timeout: 60_000, interval: 1000, what: 'the README images' }).catch(() => undefined);
  mkdirSync(resultsDir, { recursive: true });
  await page.screenshot({ path: path.join(resultsDir, 'details-page.png') });
  const problems = [];
  for (const src of expected) {
    const im = images.find((x) => x.src === base + src);
    if (!im) problems.push(`${src}: not on the Details page`);
    else if (!im.loaded) problems.push(`${src}: on the page but not loaded`);
    if (!served.has(src)) problems.push(`${src}: never fetched from the base URL`);
  }
  for (const src of expected) log(`${problems.some((p) => p.startsWith(`${src}:`)) ? 'MISSING' : 'shown  '} ${src}`);
  if (problems.length) throw new Error(problems.join('\n'));
  log(`all ${expected.length} README images shown on the Details page (test-results/details-page.png)`);
}

async function cleanup() {
  await browser?.close().catch(() => {});
  if (codeServer?.pid) await killTree(codeServer.pid);
  server?.close();
  rmSync(tmp, { recursive: true, force: true });
}

// Interrupted (Ctrl-C, a timeout's SIGTERM): the code-server it started must not outlive it.
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => void cleanup().finally(() => process.exit(1)));

try {
  await main();
} catch (e) {
  console.error(`[details-page] FAILED: ${e instanceof Error ? e.message : e}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
