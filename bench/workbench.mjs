// `npm run bench:workbench`: terminal measurements in the real VS Code workbench (the e2e harness:
// code-server + headless Chromium + the product VSIX) (docs/performance.md). Three terminal kinds, measured
// the same way, rounds alternating their order: VS Code's built-in terminal (bash on
// code-server's pty host), an Exec Server terminal on the Local environment and one on a remote
// environment (our CLI on ws://127.0.0.1, configured in the user settings). Per kind and round:
//   - `seq 1 500000`: until the command after it has run (a file it touches: the process is
//     done) and until the line echoed after it is on screen (the terminal has shown it all);
//   - command-palette latency (F1 until the quick input is visible) while `seq 1 50000000` floods
//     the terminal (PALETTE samples), the renderer's long tasks (> 50 ms) in that time, and the
//     time from Ctrl+C until a line typed after it is on screen (what the user waits for);
//   - palette latency with no terminal flooding (idle), once per round.
// The ratio of medians vs the built-in comes with a bootstrap 90 % interval (resampling each
// kind's samples), so one run says whether a difference is larger than this run's noise; the
// load average is recorded at the start and end (the machine is shared).
// Then, once, the extension host's RSS every second during 30 s of remote `yes` (and the CPU time
// of that `yes`: throttled, it mostly sleeps in write). Writes bench/results/workbench.json.
// Env: EXEC_SERVER_E2E_SKIP_BUILD=1 / EXEC_SERVER_E2E_VSIX (as the e2e harness), ROUNDS=N
// (default 5), PALETTE=N samples per flood (default 6), KINDS=builtin,local,remote (subset).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { descendants } from '../test/e2e/harness/processes.mjs';
import { repo, startWorkbench, stopWorkbench } from '../test/e2e/harness/workbench.mjs';

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const PALETTE = Number(process.env.PALETTE ?? 6);
const started = Date.now();
const log = (m) => console.error(`[workbench-bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)}s] ${m}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};
const p90 = (a) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * 0.9))];
const loadavg = () => os.loadavg().map((x) => Number(x.toFixed(2)));
/** Bootstrap 90 % interval of median(a) / median(b): resample both, 2000 times (deterministic seed). */
function ratioInterval(a, b) {
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const pick = (x) => Array.from(x, () => x[Math.floor(rnd() * x.length)]);
  const r = [];
  for (let i = 0; i < 2000; i++) r.push(median(pick(a)) / median(pick(b)));
  r.sort((x, y) => x - y);
  return [r[Math.floor(r.length * 0.05)], r[Math.floor(r.length * 0.95)]];
}

/** Our CLI as the remote environment (loopback, no auth). */
function startRemote() {
  if (!existsSync(path.join(repo, 'dist', 'cli.js'))) throw new Error('dist/cli.js is missing: run `npm run build` first');
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

  // Renderer long tasks (> 50 ms), recorded from the start; read per flood window.
  await page.evaluate(() => {
    window.__benchLongTasks = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) window.__benchLongTasks.push([e.startTime, e.duration]);
    }).observe({ type: 'longtask', buffered: true });
  });
  const pageNow = () => page.evaluate(() => performance.now());
  const longTasks = (from, to) => page.evaluate(([f, t]) => window.__benchLongTasks.filter(([s]) => s >= f && s < t).map(([, d]) => d), [from, to]);

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
  // A marker the shell prints but the typed line does not contain: `echo M$((41+1))` shows M42.
  const marker = () => {
    const k = ++n;
    return { typed: `echo M${k}x$((${k}+1))`, shown: `M${k}x${k + 1}` };
  };
  /** Until `text` is in the terminal's rendered rows (DOM renderer; one terminal open at a time). */
  const waitShown = (text, timeoutMs) =>
    page.waitForFunction((t) => [...document.querySelectorAll('.xterm-rows')].some((r) => r.textContent.includes(t)), text, { polling: 25, timeout: timeoutMs });
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

  const kinds = (process.env.KINDS ?? 'builtin,local,remote').split(',');
  const res = Object.fromEntries(kinds.map((k) => [k, { seqSeconds: [], seqShownSeconds: [], paletteMs: [], longTaskMsPerS: [], longTaskMaxMs: [], interruptMs: [] }]));
  const idle = [];
  const load = { start: loadavg(), rounds: [] };
  for (let i = 0; i < 3; i++) idle.push(await palette()); // warm-up: not counted
  idle.length = 0;
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < 2; i++) {
      idle.push(await palette());
      await sleep(300);
    }
    const order = r % 2 === 0 ? kinds : [...kinds].reverse();
    for (const kind of order) {
      await open(kind);
      const done = path.join(files, `done-${++n}`);
      const m = marker();
      const t0 = performance.now();
      await typeLine(`seq 1 500000; touch ${done}; ${m.typed}`);
      await waitFile(done, 180_000);
      const secs = (performance.now() - t0) / 1000;
      await waitShown(m.shown, 180_000);
      const shownSecs = (performance.now() - t0) / 1000;
      res[kind].seqSeconds.push(secs);
      res[kind].seqShownSeconds.push(shownSecs);
      await sleep(1500);
      // Palette latency while the terminal floods, and the renderer's long tasks meanwhile.
      await typeLine('seq 1 50000000');
      await sleep(1000);
      const w0 = await pageNow();
      const lat = [];
      for (let i = 0; i < PALETTE; i++) {
        lat.push(await palette());
        await sleep(400);
      }
      const w1 = await pageNow();
      const lt = await longTasks(w0, w1);
      res[kind].paletteMs.push(...lat);
      res[kind].longTaskMsPerS.push((lt.reduce((x, y) => x + y, 0) / (w1 - w0)) * 1000);
      res[kind].longTaskMaxMs.push(lt.length ? Math.max(...lt) : 0);
      // Ctrl+C, then a line typed at once: until its output is on screen.
      const mi = marker();
      const c0 = performance.now();
      await page.keyboard.press('Control+C');
      await typeLine(mi.typed);
      await waitShown(mi.shown, 180_000);
      const interrupt = performance.now() - c0;
      res[kind].interruptMs.push(interrupt);
      await sleep(500);
      await close();
      log(`round ${r + 1} ${kind}: seq ${secs.toFixed(2)} s (on screen ${shownSecs.toFixed(2)} s); palette during output ${lat.map((x) => x.toFixed(0)).join(', ')} ms; long tasks ${res[kind].longTaskMsPerS.at(-1).toFixed(0)} ms/s (max ${res[kind].longTaskMaxMs.at(-1).toFixed(0)}); Ctrl+C → prompt ${interrupt.toFixed(0)} ms`);
    }
    load.rounds.push(loadavg());
    log(`round ${r + 1} done; load average ${load.rounds.at(-1).join(' ')}`);
  }
  log(`palette idle: ${idle.map((x) => x.toFixed(0)).join(', ')} ms`);

  // Extension host RSS during 30 s of remote `yes` (and after all the floods above).
  const rssBefore = rssMiB(extHost);
  log(`extension host RSS ${rssStart.toFixed(0)} MiB at the start, ${rssBefore.toFixed(0)} MiB after the seq rounds`);
  let remoteYes = null;
  if (process.env.SKIP_YES !== '1') {
    await open('remote');
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
    remoteYes = { rssBeforeMiB: rssBefore, rssMaxMiB: Math.max(...rss), rssGrowthMiB: Math.max(...rss) - rssBefore, rssSamplesMiB: rss, yesCpuSeconds: yesCpu, seconds: 30 };
  }
  load.end = loadavg();

  const summary = (k) => {
    const x = res[k];
    const out = {
      seqSecondsMedian: median(x.seqSeconds),
      seqShownSecondsMedian: median(x.seqShownSeconds),
      paletteMsMedian: median(x.paletteMs),
      paletteMsP90: p90(x.paletteMs),
      longTaskMsPerSMedian: median(x.longTaskMsPerS),
      interruptMsMedian: median(x.interruptMs),
    };
    if (k !== 'builtin' && res.builtin) {
      out.paletteRatio = out.paletteMsMedian / median(res.builtin.paletteMs);
      out.paletteRatio90 = ratioInterval(x.paletteMs, res.builtin.paletteMs);
      out.paletteP90Ratio = out.paletteMsP90 / p90(res.builtin.paletteMs);
      out.seqShownRatio = out.seqShownSecondsMedian / median(res.builtin.seqShownSeconds);
    }
    return { ...out, ...x };
  };
  const result = {
    date: new Date().toISOString(),
    rounds: ROUNDS,
    paletteSamplesPerFlood: PALETTE,
    loadAverage: load,
    paletteIdleMs: { median: median(idle), p90: p90(idle), samples: idle },
    kinds: Object.fromEntries(kinds.map((k) => [k, summary(k)])),
    extHostRssMiB: { start: rssStart, afterSeqRounds: rssBefore },
    remoteYes,
  };
  mkdirSync(path.join(repo, 'bench', 'results'), { recursive: true });
  writeFileSync(path.join(repo, 'bench', 'results', 'workbench.json'), JSON.stringify(result, null, 2) + '\n');
  const f = (v, d = 0) => (Number.isFinite(v) ? v.toFixed(d) : '—');
  console.log(`\n${result.date}: ${ROUNDS} rounds × ${PALETTE} palette opens per kind; load average ${load.start.join(' ')} at the start, ${load.end.join(' ')} at the end`);
  console.log('terminal   seq done / on screen (median s)  palette during output median / p90 (ms)  median vs built-in [90% interval]  p90 vs built-in  long tasks (ms/s)  Ctrl+C → prompt (ms)');
  for (const k of kinds) {
    const x = result.kinds[k];
    const ratio = x.paletteRatio === undefined ? '' : `${f(x.paletteRatio, 2)} [${f(x.paletteRatio90[0], 2)}–${f(x.paletteRatio90[1], 2)}]`;
    console.log(`${k.padEnd(9)}  ${`${f(x.seqSecondsMedian, 2)} / ${f(x.seqShownSecondsMedian, 2)}`.padStart(32)}  ${`${f(x.paletteMsMedian)} / ${f(x.paletteMsP90)}`.padStart(39)}  ${ratio.padStart(33)}  ${(x.paletteP90Ratio === undefined ? '' : f(x.paletteP90Ratio, 2)).padStart(15)}  ${f(x.longTaskMsPerSMedian).padStart(17)}  ${f(x.interruptMsMedian).padStart(20)}`);
  }
  console.log(`palette idle: ${f(result.paletteIdleMs.median)} / ${f(result.paletteIdleMs.p90)} ms (median / p90)`);
  console.log(`extension host RSS: ${rssStart.toFixed(0)} MiB at the start, ${rssBefore.toFixed(0)} MiB after the seq rounds`);
  if (remoteYes) console.log(`remote yes 30 s: extension host RSS +${remoteYes.rssGrowthMiB.toFixed(1)} MiB (max ${remoteYes.rssMaxMiB.toFixed(0)} MiB); yes CPU ${remoteYes.yesCpuSeconds.toFixed(2)} s`);
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
