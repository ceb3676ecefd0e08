// A deliberately tiny test framework for the in-VS-Code suite: tests register with `test()`,
// `runTests()` runs them one after another with a per-test timeout and writes the results
// file after every test, so the harness can stream progress and still know what ran when the
// workbench dies. When Mocha's TDD globals exist (@vscode/test-cli), tests register there instead.
// A test across a window reload (testAcrossReload) runs its first half, leaves its state in the
// results file (`pendingReload`) and reloads the window; the runner extension of the reloaded
// window calls resumeTests(), which runs the second half and then the tests not yet run.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface TestResult {
  name: string;
  ok: boolean;
  error?: string;
  ms: number;
}

export interface ResultsFile {
  /** Names of every selected test, written before the first one runs. */
  planned: string[];
  results: TestResult[];
  done: boolean;
  /** Set when the suite could not run at all (bad config, missing extension, ...). */
  fatal?: string;
  /** A testAcrossReload test reloaded the window: its name, the state its second half gets, when. */
  pendingReload?: { name: string; state: unknown; at: number };
}

type TestFn = () => Promise<void> | void;
interface Registered {
  name: string;
  fn: TestFn;
  timeoutMs: number;
  /** Other tests depend on it: it runs even when a name filter does not select it. */
  setup: boolean;
  /** testAcrossReload: the half that runs in the reloaded window, with what `fn` returned. */
  afterReload?: (state: unknown) => Promise<void> | void;
}

const registered: Registered[] = [];
const cleanups: (() => Promise<void> | void)[] = [];

export const DEFAULT_TIMEOUT_MS = 60_000;

export function test(name: string, fn: TestFn, timeoutMs = DEFAULT_TIMEOUT_MS, opts: { setup?: boolean } = {}): void {
  if (registered.some((t) => t.name === name)) throw new Error(`duplicate test name: ${name}`);
  registered.push({ name, fn, timeoutMs, setup: opts.setup ?? false });
}

/**
 * A test whose second half runs after a window reload (which ends this extension host): `before`
 * returns a JSON-serializable state, the window reloads, `after(state)` runs in the new host.
 * Each half has `timeoutMs`. Only the harness (run.mjs + runner extension) can run these.
 */
export function testAcrossReload<S>(name: string, before: () => Promise<S>, after: (state: S) => Promise<void>, timeoutMs = DEFAULT_TIMEOUT_MS): void {
  if (registered.some((t) => t.name === name)) throw new Error(`duplicate test name: ${name}`);
  registered.push({ name, fn: before as TestFn, timeoutMs, setup: false, afterReload: after as (state: unknown) => Promise<void> });
}

/** Cleanups of the test that is running now (onTestEnd), run as soon as it ends. */
let testEndCleanups: (() => Promise<void> | void)[] | undefined;

/**
 * Runs `fn` when the test that is running now ends — passed, failed or timed out — before the next
 * test starts (last registered first). Settings a test changes are put back this way, so no test
 * sees another's settings whichever subset EXEC_SERVER_E2E_GREP selects. Only inside a test.
 */
export function onTestEnd(fn: () => Promise<void> | void): void {
  if (!testEndCleanups) throw new Error('onTestEnd outside a test');
  testEndCleanups.push(fn);
}

/** Runs a test body with its timeout, then its onTestEnd cleanups (whatever the outcome). */
async function runTestBody(fn: TestFn, ms: number, name: string, log?: (line: string) => void): Promise<void> {
  const mine: (() => Promise<void> | void)[] = [];
  testEndCleanups = mine;
  try {
    await withTimeout(fn, ms, name);
  } finally {
    if (testEndCleanups === mine) testEndCleanups = undefined;
    for (const cleanup of mine.splice(0).reverse()) {
      try {
        await withTimeout(cleanup, 20_000, `${name} (end of test cleanup)`);
      } catch (err) {
        log?.(`end of test cleanup failed: ${describe(err)}`);
      }
    }
  }
}

/** Runs after all tests (in reverse order of registration), even when tests failed. */
export function afterAll(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
}

export function registeredTests(): readonly Registered[] {
  return registered;
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.stack ?? `${err.name}: ${err.message}`;
  return String(err);
}

async function withTimeout(fn: TestFn, ms: number, name: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.resolve().then(fn),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`test "${name}" timed out after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function writeResults(file: string, data: ResultsFile): void {
  mkdirSync(path.dirname(file), { recursive: true });
  // Write-then-rename so the harness never reads a half-written file.
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, JSON.stringify(data, null, 2));
  renameSync(tmp, file);
}

export async function runTests(opts: {
  resultsFile: string;
  grep?: string;
  log?: (line: string) => void;
  /** Reloads the window (testAcrossReload); resolves never — the extension host ends. */
  reload?: () => Promise<void>;
}): Promise<ResultsFile> {
  // `a|b` selects the tests whose name contains a or b.
  const greps = opts.grep ? opts.grep.split('|').filter(Boolean) : [];
  const selected = registered.filter((t) => greps.length === 0 || t.setup || greps.some((g) => t.name.includes(g)));
  const data: ResultsFile = { planned: selected.map((t) => t.name), results: [], done: false };
  writeResults(opts.resultsFile, data);
  return runSelected(selected, data, opts);
}

/**
 * In the reloaded window: the second half of the test that reloaded it, then the planned
 * tests that have not run. `prev` is the results file as the previous window left it.
 */
export async function resumeTests(prev: ResultsFile, opts: { resultsFile: string; log?: (line: string) => void; reload?: () => Promise<void> }): Promise<ResultsFile> {
  const pending = prev.pendingReload!;
  const data: ResultsFile = { ...prev, pendingReload: undefined };
  const t = registered.find((r) => r.name === pending.name);
  const start = Date.now();
  let result: TestResult;
  try {
    if (!t?.afterReload) throw new Error(`no test across a reload named "${pending.name}" in this bundle`);
    const after = t.afterReload;
    await runTestBody(() => after(pending.state), t.timeoutMs, `${t.name} (after the reload)`, opts.log);
    result = { name: pending.name, ok: true, ms: Date.now() - pending.at };
  } catch (err) {
    result = { name: pending.name, ok: false, error: describe(err), ms: Date.now() - start };
  }
  opts.log?.(`${result.ok ? 'ok  ' : 'FAIL'} ${pending.name} (${result.ms} ms)${result.error ? `\n${result.error}` : ''}`);
  data.results.push(result);
  writeResults(opts.resultsFile, data);
  const ran = new Set(data.results.map((r) => r.name));
  const rest = data.planned.filter((n) => !ran.has(n)).map((n) => registered.find((r) => r.name === n)).filter((r): r is Registered => !!r);
  return runSelected(rest, data, opts);
}

async function runSelected(selected: Registered[], data: ResultsFile, opts: { resultsFile: string; log?: (line: string) => void; reload?: () => Promise<void> }): Promise<ResultsFile> {
  for (const t of selected) {
    const start = Date.now();
    let result: TestResult;
    try {
      if (t.afterReload) {
        if (!opts.reload) throw new Error('this test reloads the window: run it through test/e2e/run.mjs');
        let state: unknown;
        // Its first half ends here: its onTestEnd cleanups run before the reload.
        await runTestBody(async () => (state = await t.fn()), t.timeoutMs, t.name, opts.log);
        data.pendingReload = { name: t.name, state: state ?? null, at: start };
        writeResults(opts.resultsFile, data);
        opts.log?.(`${t.name}: reloading the window`);
        // The command may fail as this extension host goes down ("Channel has been closed"):
        // nothing after this may write the results file — the reloaded window continues it.
        await opts.reload().catch(() => undefined);
        await new Promise(() => undefined);
      }
      await runTestBody(t.fn, t.timeoutMs, t.name, opts.log);
      result = { name: t.name, ok: true, ms: Date.now() - start };
    } catch (err) {
      data.pendingReload = undefined;
      result = { name: t.name, ok: false, error: describe(err), ms: Date.now() - start };
    }
    opts.log?.(`${result.ok ? 'ok  ' : 'FAIL'} ${t.name} (${result.ms} ms)${result.error ? `\n${result.error}` : ''}`);
    data.results.push(result);
    writeResults(opts.resultsFile, data);
  }
  await runCleanups(opts.log);
  data.done = true;
  writeResults(opts.resultsFile, data);
  return data;
}

export async function runCleanups(log?: (line: string) => void): Promise<void> {
  for (const fn of cleanups.splice(0).reverse()) {
    try {
      await withTimeout(fn, 20_000, 'cleanup');
    } catch (err) {
      log?.(`cleanup failed: ${describe(err)}`);
    }
  }
}

/** Registers every test with Mocha's TDD interface (used when @vscode/test-cli loads the bundle). */
export function registerWithMocha(
  g: { suite: Function; test: Function; suiteTeardown: Function; suiteSetup?: Function },
  setup?: () => Promise<void>,
): void {
  g.suite('exec-server e2e', function (this: { timeout(ms: number): void }) {
    this.timeout(DEFAULT_TIMEOUT_MS * 2);
    if (setup && g.suiteSetup) g.suiteSetup(setup);
    // Mocha cannot follow a window reload: those tests are left out there.
    for (const t of registered) if (!t.afterReload) g.test(t.name, () => runTestBody(t.fn, t.timeoutMs, t.name, (l) => console.log(l)));
    g.suiteTeardown(() => runCleanups());
  });
}
