// The project's test command (`npm test`): compiles src+test with tsc, installs the tools the
// tests need (once, before any test: scripts/tools/install.mjs), runs every
// out/test/**/*.test.js with node:test, then the VS Code end-to-end suite (test/e2e)
// unless EXEC_SERVER_SKIP_E2E=1 (then its tools are not installed either). Prints a final
// "N passed, N failed" line over all of them.
// Extra args are test-name filters: `npm test -- resize` runs tests whose file matches.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
process.chdir(root);
const filters = process.argv.slice(2).filter((a) => !a.startsWith('-'));

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  return r.status ?? 1;
}

// Transpile (no type check) src + test into out/, file by file, so one unfinished file
// elsewhere never blocks running the tests of another area.
/** Files under dir whose name passes keep(); e2e (own harness) and node_modules are not entered. */
function listFiles(dir, keep) {
  const out = [];
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== 'e2e' && name !== 'node_modules') out.push(...listFiles(p, keep));
    } else if (keep(name)) out.push(p);
  }
  return out.sort();
}
const listTs = (dir) => listFiles(dir, (n) => n.endsWith('.ts') && !n.endsWith('.d.ts'));
const esbuild = await import('esbuild');
const compiled = await esbuild.build({
  entryPoints: [...listTs('src'), ...listTs('test'), ...listTs('bench')],
  outdir: 'out', outbase: '.', platform: 'node', target: 'node20', format: 'cjs',
  sourcemap: 'inline', logLevel: 'warning', write: false,
  define: { __EXEC_SERVER_VERSION__: JSON.stringify(JSON.parse(readFileSync('package.json', 'utf8')).version) },
});
// Each file is written beside its target and renamed over it: another run's test files (in a
// shared tree) loading out/ meanwhile see the old or the new file, never a truncated one.
for (const f of compiled.outputFiles) {
  mkdirSync(path.dirname(f.path), { recursive: true });
  const tmp = `${f.path}.${process.pid}.tmp`;
  writeFileSync(tmp, f.contents);
  renameSync(tmp, f.path);
}

// Derived from the sources, so a compiled test left in out/ by a deleted source never runs.
const files = listFiles('test', (n) => n.endsWith('.test.ts'))
  .map((f) => path.join('out', f.replace(/\.ts$/, '.js')))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));
const e2e = 'test/e2e/run.mjs';
const runE2e = existsSync(e2e) && process.env.EXEC_SERVER_SKIP_E2E !== '1' && filters.length === 0;

// Install stage: the tools the tests need (bubblewrap, openssh-server/-client, the reference codex, and qemu-user + the arm64
// cross toolchain + an arm64 Node for the linux-arm64 VSIX, for the unit and
// interop tests; Chromium, Node 24, code-server, playwright-core for the VS Code suite) are
// installed here, once, before any test starts; the tests only look them up. The installer
// (scripts/tools/install.mjs) locks, installs atomically with a clean env and names the tool,
// command and output tail when something fails. A failed install counts as a failed test.
let installFailed = 0;
let e2eToolsReady = runE2e;
function installStage(group) {
  const t0 = Date.now();
  console.log(`install stage (${group}): node scripts/tools/install.mjs ${group}`);
  const status = run(process.execPath, ['scripts/tools/install.mjs', group], { stdio: ['ignore', 'ignore', 'inherit'] });
  console.log(`install stage (${group}): ${status === 0 ? 'ready' : `FAILED (exit ${status})`} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  if (status !== 0) installFailed += 1;
  return status === 0;
}
if (files.length) installStage('unit');
if (runE2e) e2eToolsReady = installStage('e2e');

// The type check counts as a test: strict TypeScript over src and test.
let typeFailed = 0;
let typePassed = 0;
if (!process.argv.includes('--no-typecheck')) {
  if (run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.test.json', '--noEmit']) !== 0) {
    console.error('typecheck failed (tsc -p tsconfig.test.json --noEmit)');
    typeFailed = 1;
  } else {
    console.log('typecheck: ok');
    typePassed = 1;
  }
}

// Beside the tests: a stale pyenv rehash lock (a shell killed mid-rehash) would stall every later shell 60 s.
const watchdog = process.platform === 'linux' ? spawn(process.execPath, ['scripts/tools/stale-lock-watch.mjs', String(process.pid)], { stdio: ['ignore', 'ignore', 'inherit'], detached: true }) : undefined;
watchdog?.unref();

/**
 * The failed tests of a TAP report, each with its YAML diagnostics minus the stack (location,
 * error, expected/actual), at most 30 lines of 300 characters.
 */
function failuresOf(tap) {
  const lines = tap.split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)not ok \d+ - (.*)$/.exec(lines[i]);
    if (!m) continue;
    const detail = [];
    const indent = `${m[1]}  `;
    if (lines[i + 1] === `${indent}---`) {
      let skipping = false;
      for (let j = i + 2; j < lines.length && lines[j] !== `${indent}...`; j++) {
        const l = lines[j].slice(indent.length);
        if (/^\S/.test(l)) skipping = /^stack:/.test(l);
        if (!skipping && detail.length < 30) detail.push(l.length > 300 ? `${l.slice(0, 300)}…` : l);
      }
    }
    out.push({ name: `${m[1]}${m[2]}`, detail });
  }
  return out;
}

let passed = typePassed;
let unitFailures = [];
let failed = typeFailed + installFailed;
if (files.length) {
  const tap = `out/unit-${process.pid}.tap`; // per run: concurrent runs must not mix totals
  const status = run(process.execPath, [
    '--test', '--test-concurrency=2', '--test-timeout=120000',
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    '--test-reporter=tap', `--test-reporter-destination=${tap}`,
    ...files,
  ], { env: { ...process.env, EXEC_SERVER_REPO: root } });
  const text = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
  rmSync(tap, { force: true });
  passed += Number(/^# pass (\d+)/m.exec(text)?.[1] ?? 0);
  const unitFailed = Number(/^# fail (\d+)/m.exec(text)?.[1] ?? 0);
  failed += unitFailed;
  // CI keeps only the tail of the log: the failing tests are named again at the end (below the e2e
  // output), with the file each belongs to, so a failed run can be read from its last lines.
  unitFailures = failuresOf(text);
  if (status !== 0 && unitFailed === 0) failed += 1; // runner crashed without counting
}

if (runE2e && !e2eToolsReady) {
  console.log('  ✖ VS Code e2e suite: not run, its tools failed to install (see the install stage above)');
} else if (runE2e) {
  const r = spawnSync(process.execPath, [e2e], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  process.stdout.write(r.stdout ?? '');
  const m = /^(\d+) passed, (\d+) failed/m.exec(r.stdout ?? '');
  if (m) {
    passed += Number(m[1]);
    failed += Number(m[2]);
  }
  if (r.status !== 0 && (!m || Number(m[2]) === 0)) failed += 1;
}

if (unitFailures.length) {
  console.log(`unit tests that failed (${unitFailures.length}; a timed-out file is named by its path):`);
  for (const f of unitFailures.slice(0, 40)) console.log(`  ✖ ${f.name}`);
  // ...and why, for the first few: a flake seen once in CI is read from these lines or not at all.
  for (const f of unitFailures.filter((x) => x.detail.length).slice(0, 4)) {
    console.log(`why: ${f.name.trim()}`);
    for (const line of f.detail) console.log(`    ${line}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
