// Fixed sleeps in the tests (test/README.md "Waiting, not sleeping"): a test waits for the event
// or state it needs (test/support/wait.ts waitFor, the e2e suite's waitFor, the harness's
// waitUntil); a fixed pause stays only where elapsed time is the subject, with a comment saying
// why on its line or the line above. This counts the pauses without one, so they cannot come back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

const repo = process.env.EXEC_SERVER_REPO ?? path.resolve(__dirname, '../../..');
const testDir = path.join(repo, 'test');
/** Fixed sleeps without a comment saying why. Lower it when one is replaced; never raise it. */
const MAX_UNEXPLAINED = 0;
/** All fixed sleeps, explained or not: the ones left are where elapsed time is the subject (a TTL,
 * a stall, sampling over a window) or the workbench has no event. Lower it when one is replaced;
 * never raise it. */
const MAX_FIXED = 20;

/** A fixed pause, as the suites write one (a Promise.race bound is a timeout, not a pause). */
const PAUSES = [
  /(?<![.\w])sleep\(/, // sleep(ms) of test/support/wait.ts or the e2e util (not a child script's time.sleep)
  /(?<![.\w])delay\(/,
  /\bwaitForTimeout\(/, // Playwright
  /new Promise(<[^>]*>)?\(\(?\s*\w+\s*\)?\s*=>\s*setTimeout\(/, // new Promise((r) => setTimeout(r, ms))
  /\bawait\s+setTimeout\(/, // node:timers/promises
];

/**
 * The wait helpers' own bodies: a pause there is the poll interval of a bounded wait or the one
 * definition of `sleep`, not a test sleeping (each call of `sleep` elsewhere still counts). Only
 * these functions of these files: a copy of a poll loop anywhere else is counted.
 */
const WAIT_HELPERS: Record<string, readonly string[]> = {
  'test/support/wait.ts': ['sleep'], // waitFor polls with setInterval
  'test/e2e/suite/util.ts': ['sleep', 'waitFor'],
  'test/e2e/harness/wait.mjs': ['waitUntil'],
};

interface Pause {
  where: string;
  line: string;
  explained: boolean;
}

/** Every fixed pause in `source`, and whether a `//` comment on its line or the line above explains it. */
function fixedPauses(source: string, file: string): Pause[] {
  const lines = source.split('\n');
  const out: Pause[] = [];
  const helpers = WAIT_HELPERS[file] ?? [];
  let inHelper = false; // inside the body of one of them (a top-level function ends at a `}` in column 0)
  lines.forEach((line, i) => {
    const def = /^(export\s+)?(async\s+)?function\s+(\w+)/.exec(line);
    if (def) inHelper = helpers.includes(def[3]) && !/}\s*$/.test(line);
    else if (inHelper && /^}/.test(line)) inHelper = false;
    if (inHelper) return;
    if (/^\s*(\/\/|\*|\/\*)/.test(line)) return; // a comment or a doc comment line
    const comment = line.search(/\s\/\/\s/);
    const code = comment >= 0 ? line.slice(0, comment) : line;
    if (/^\s*(export\s+)?(async\s+)?function\s/.test(code)) return; // a definition, not a call
    if (/\brace\(/.test(code) || !PAUSES.some((re) => re.test(code))) return;
    const explained = comment >= 0 || /^\s*\/\/\s*\S/.test(lines[i - 1] ?? '');
    out.push({ where: `${file}:${i + 1}`, line: line.trim(), explained });
  });
  return out;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return d.name === 'node_modules' ? [] : sources(p);
    return /\.(ts|mjs|js)$/.test(d.name) && !d.name.endsWith('.d.ts') ? [p] : [];
  });
}

test('the scanner finds a fixed pause and reads its comment', () => {
  const found = fixedPauses(
    [
      'await sleep(300);',
      'await new Promise((r) => setTimeout(r, 50)); // why: a window in which nothing may arrive',
      '// why: sampling over the stall',
      'await page.waitForTimeout(150);',
      'const r = await Promise.race([p, sleep(5_000)]);',
      'export function sleep(ms: number): Promise<void> {',
      "run('python3', ['-c', 'import time; time.sleep(1)']);",
      'const t = setTimeout(() => child.kill(), 5000);',
    ].join('\n'),
    'x.ts',
  );
  assert.deepEqual(found.map((p) => [p.where, p.explained]), [['x.ts:1', false], ['x.ts:2', true], ['x.ts:4', true]]);
});

test('only the wait helpers\' own bodies are left out, and only in their files', () => {
  const source = [
    'export async function waitUntil(probe) {',
    '  for (;;) {',
    '    await new Promise((r) => setTimeout(r, 100)); // why: the poll interval',
    '  }',
    '}',
    'export async function settle(ms) {',
    '  await new Promise((r) => setTimeout(r, ms));',
    '}',
    'await sleep(300);',
  ].join('\n');
  const where = (file: string) => fixedPauses(source, file).map((p) => p.where);
  // In the harness's wait module: waitUntil's poll is not counted; another function's pause and a bare call are.
  assert.deepEqual(where('test/e2e/harness/wait.mjs'), ['test/e2e/harness/wait.mjs:7', 'test/e2e/harness/wait.mjs:9']);
  // The same poll loop in a test file is a fixed sleep.
  assert.deepEqual(where('test/x.test.ts'), ['test/x.test.ts:3', 'test/x.test.ts:7', 'test/x.test.ts:9']);
  assert.equal(fixedPauses('await sleep(300);', 'test/support/wait.ts').length, 1, 'a bare sleep in the helper file still counts');
});

test(`fixed sleeps in test/: at most ${MAX_FIXED}, none without a comment saying why`, (t) => {
  const self = path.join(testDir, 'architecture', 'sleeps.test.ts');
  const all = sources(testDir)
    .filter((f) => f !== self)
    .flatMap((f) => fixedPauses(readFileSync(f, 'utf8'), path.relative(repo, f)));
  const unexplained = all.filter((p) => !p.explained);
  t.diagnostic(`${all.length} fixed sleeps, ${unexplained.length} without a comment`);
  assert.ok(all.length > 10, `the scan found the suite's sleeps (${all.length})`);
  assert.ok(
    all.length <= MAX_FIXED,
    `${all.length} fixed sleeps (at most ${MAX_FIXED}): wait for the event instead, or prove a must-not-happen by a later ordered one (test/README.md "Waiting, not sleeping"):\n` +
      all.map((p) => `  ${p.where}  ${p.line}`).join('\n'),
  );
  assert.ok(
    unexplained.length <= MAX_UNEXPLAINED,
    `${unexplained.length} fixed sleeps without a comment saying why (at most ${MAX_UNEXPLAINED}): wait for the event or state instead (test/support/wait.ts), or say why the time itself is the point:\n` +
      unexplained.map((p) => `  ${p.where}  ${p.line}`).join('\n'),
  );
});
