// `npm run bench:workbench`: terminal measurements in the real VS Code workbench (the e2e harness:
// code-server + headless Chromium + the product VSIX), issue 13. Three terminal kinds, rounds
// alternating their order: VS Code's built-in terminal (bash on code-server's pty host), an Exec
// Server terminal on the Local environment and one on a remote environment (our CLI on
// ws://127.0.0.1, configured in the user settings). Per kind and round:
//   - `seq 1 500000` until the command after it has run (a file it touches), typed into the shell;
//   - command-palette latency (F1 until the quick input is visible) while `seq 1 50000000` floods
//     the terminal, against the same latency with nothing running;
// then, once, the extension host's RSS every second during 30 s of remote `yes` (and the CPU time
// of that `yes`: throttled, it mostly sleeps in write). Writes bench/results/workbench.json.
// Env: EXEC_SERVER_E2E_SKIP_BUILD=1 / EXEC_SERVER_E2E_VSIX (as the e2e harness), ROUNDS=N (default 3).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { descendants } from '../test/e2e/harness/processes.mjs';
import { repo, startWorkbench, stopWorkbench } from '../test/e2e/harness/workbench.mjs';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const started = Date.now();
const log = (m) => console.error(`[workbench-bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)}s] ${m}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};
const p90 = (a) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * 0.9))];

/** Our CLI as the remote environment (loopback, no auth). */
function startRemote() {
  const child = spawn(process.execPath, [path.join(repo, 'dist', 'cli.js'), '--listen', 'ws://127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /ws:\/\/127\.0\.0\.1:\d+/.exec(out);
      if (m) resolve({ child, url: m[0] });
    });
    child.once('exit', (c) => reject(new Error(`remote CLI exited (${c})`)));
  });
}

function rssMiB(pid) {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}
function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}
function cpuSeconds(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').slice(readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

const wb = {};
let remote;

async function main() {
  remote = await startRemote();
  log(`remote environment: our CLI at ${remote.url}`);
  const files = mkdtempSync(path.join(os.tmpdir(), 'wb-bench-'));
  await startWorkbench(wb, {
    log,
    resultsDir: path.join(repo, 'test-results'),
    logName: 'workbench-bench-code-server.log',
    viewport: { width: 1280, height: 800 },
    // The runner extension is installed but runs nothing (no test matches).
    makeConfig: (dirs, tmp) => ({ repo, resultsFile: path.join(tmp, 'results.json'), workDir: dirs.work, controlDir: dirs.control, nodePath: process.execPath, grep: 'no test has this name (workbench bench)' }),
    settings: {
      'execServer.environments': [{ name: 'bench-remote', url: remote.url }],
      'terminal.integrated.defaultProfile.linux': 'bash',
      'terminal.integrated.profiles.linux': { bash: { path: '/bin/bash', args: ['--norc', '--noprofile'] } },
      'terminal.integrated.shellIntegration.enabled': false,
      'terminal.integrated.gpuAcceleration': 'off',
      'remote.autoForwardPorts': false,
    },
  });
  const { page } = wb;
  await page.locator('.monaco-workbench').waitFor({ timeout: 120_000 });
  await sleep(8000); // extensions activate (onStartupFinished)
  const extHost = [...descendants(wb.codeServer.pid)].find((pid) => cmdline(pid).some((a) => a.includes('extensionHost')));
  if (!extHost) throw new Error('extension host process not found under code-server');
  const rssStart = rssMiB(extHost);
  log(`extension host pid ${extHost}, RSS ${rssStart.toFixed(0)} MiB`);

  const palette = async () => {
    const qi = page.locator('.quick-input-widget');
    const t0 = performance.now();
    await page.keyboard.press('F1');
    await qi.waitFor({ state: 'visible', timeout: 30_000 });
    const ms = performance.now() - t0;
    await page.keyboard.press('Escape');
    await qi.waitFor({ state: 'hidden', timeout: 30_000 });
    return ms;
  };
  const runCommand = async (title, pick) => {
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${title}`);
    await page.locator('.quick-input-list .monaco-list-row').first().waitFor();
    await sleep(300);
    await page.keyboard.press('Enter');
    if (pick) {
      await sleep(500);
      await input.fill(pick);
      await sleep(300);
      await page.keyboard.press('Enter');
    }
  };
  let n = 0;
  const waitFile = async (f, timeoutMs) => {
    const end = Date.now() + timeoutMs;
    while (!existsSync(f)) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${f}`);
      await sleep(10);
    }
  };
  const typeLine = async (text) => {
    await page.keyboard.type(text);
    await page.keyboard.press('Enter');
  };
  const open = async (kind) => {
    if (kind === 'builtin') await runCommand('Terminal: Create New Terminal');
    else await runCommand('Exec Server: New Terminal', kind === 'local' ? 'Local' : 'bench-remote');
    const ready = path.join(files, `ready-${++n}`);
    await sleep(1500);
    await typeLine(`touch ${ready}`);
    await waitFile(ready, 30_000);
  };
  const close = async () => {
    await runCommand('Terminal: Kill the Active Terminal Instance');
    await sleep(1000);
  };

  const kinds = ['builtin', 'local', 'remote'];
  const res = Object.fromEntries(kinds.map((k) => [k, { seqSeconds: [], paletteMs: [] }]));
  const idle = [];
  for (let i = 0; i < 5; i++) idle.push(await palette());
  log(`palette idle: ${idle.map((x) => x.toFixed(0)).join(', ')} ms`);
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? kinds : [...kinds].reverse();
    for (const kind of order) {
      await open(kind);
      const done = path.join(files, `done-${++n}`);
      const t0 = performance.now();
      await typeLine(`seq 1 500000; touch ${done}`);
      await waitFile(done, 180_000);
      const secs = (performance.now() - t0) / 1000;
      res[kind].seqSeconds.push(secs);
      await sleep(1500);
      // Palette latency while the terminal floods.
      await typeLine('seq 1 50000000');
      await sleep(1000);
      const lat = [];
      for (let i = 0; i < 5; i++) {
        lat.push(await palette());
        await sleep(400);
      }
      res[kind].paletteMs.push(...lat);
      await page.keyboard.press('Control+C');
      await sleep(1000);
      await close();
      log(`round ${r + 1} ${kind}: seq ${secs.toFixed(2)} s; palette during output ${lat.map((x) => x.toFixed(0)).join(', ')} ms`);
    }
  }

  // Extension host RSS during 30 s of remote `yes` (and after all the floods above).
  await open('remote');
  const rssBefore = rssMiB(extHost);
  log(`extension host RSS ${rssStart.toFixed(0)} MiB at the start, ${rssBefore.toFixed(0)} MiB after the seq rounds`);
  await typeLine('yes');
  await sleep(1000);
  const yesPid = descendants(remote.child.pid).find((pid) => cmdline(pid)[0] === 'yes');
  const yesCpu0 = yesPid ? cpuSeconds(yesPid) : NaN;
  const rss = [];
  for (let i = 0; i < 30; i++) {
    await sleep(1000);
    rss.push(rssMiB(extHost));
  }
  const yesCpu = yesPid ? cpuSeconds(yesPid) - yesCpu0 : NaN;
  await page.keyboard.press('Control+C');
  await sleep(1000);
  await close();
  log(`remote yes: ext host RSS ${rssBefore.toFixed(0)} → max ${Math.max(...rss).toFixed(0)} MiB; yes used ${yesCpu.toFixed(2)} s CPU in 30 s`);

  const result = {
    date: new Date().toISOString(),
    rounds: ROUNDS,
    paletteIdleMs: { median: median(idle), samples: idle },
    kinds: Object.fromEntries(kinds.map((k) => [k, { seqSecondsMedian: median(res[k].seqSeconds), paletteMsMedian: median(res[k].paletteMs), paletteMsP90: p90(res[k].paletteMs), ...res[k] }])),
    extHostRssMiB: { start: rssStart, afterSeqRounds: rssBefore },
    remoteYes: { rssBeforeMiB: rssBefore, rssMaxMiB: Math.max(...rss), rssGrowthMiB: Math.max(...rss) - rssBefore, rssSamplesMiB: rss, yesCpuSeconds: yesCpu, seconds: 30 },
  };
  mkdirSync(path.join(repo, 'bench', 'results'), { recursive: true });
  writeFileSync(path.join(repo, 'bench', 'results', 'workbench.json'), JSON.stringify(result, null, 2) + '\n');
  const b = result.kinds.builtin;
  console.log('\nterminal      seq 1 500000 (median s)  vs built-in  palette during output (median / p90 ms)  vs built-in');
  for (const k of kinds) {
    const x = result.kinds[k];
    console.log(`${k.padEnd(12)}  ${x.seqSecondsMedian.toFixed(2).padStart(22)}  ${(x.seqSecondsMedian / b.seqSecondsMedian).toFixed(2).padStart(11)}  ${`${x.paletteMsMedian.toFixed(0)} / ${x.paletteMsP90.toFixed(0)}`.padStart(39)}  ${(x.paletteMsMedian / b.paletteMsMedian).toFixed(2).padStart(11)}`);
  }
  console.log(`palette idle: ${result.paletteIdleMs.median.toFixed(0)} ms median`);
  console.log(`extension host RSS: ${rssStart.toFixed(0)} MiB at the start, ${rssBefore.toFixed(0)} MiB after the seq rounds`);
  console.log(`remote yes 30 s: extension host RSS +${result.remoteYes.rssGrowthMiB.toFixed(1)} MiB (max ${result.remoteYes.rssMaxMiB.toFixed(0)} MiB); yes CPU ${yesCpu.toFixed(2)} s`);
  rmSync(files, { recursive: true, force: true });
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    stopWorkbench(wb, log).finally(() => {
      remote?.child.kill('SIGKILL');
      process.exit(1);
    });
  });
}

let code = 1;
try {
  await main();
  code = 0;
} catch (e) {
  log(e?.stack ?? String(e));
  await wb.page?.screenshot({ path: path.join(repo, 'test-results', 'workbench-bench-failed.png') }).catch(() => {});
} finally {
  await stopWorkbench(wb, log);
  remote?.child.kill('SIGTERM');
}
process.exit(code);
