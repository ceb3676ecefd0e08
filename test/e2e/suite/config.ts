// Where the suite finds its inputs. run.mjs writes a JSON file and points the extension host at
// it with the EXEC_SERVER_E2E_CONFIG environment variable (or the `execServerE2E.config` user
// setting); under @vscode/test-electron the same variable or the defaults below are used.
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface E2EConfig {
  /** Repository root (holds dist/cli.js). */
  repo: string;
  /** JSON results file the harness polls. */
  resultsFile: string;
  /** Scratch directory on the local disk for files the tests create (shared by local and remote env). */
  workDir: string;
  /** Folder where approval requests for the harness are written (see approval.ts). */
  controlDir: string;
  /** Node binary that runs the project's CLI (the host's Node, which node-pty was built for). */
  nodePath: string;
  /** Only run tests whose name contains this. */
  grep?: string;
  /** true when a harness answers approval notifications in the workbench. */
  approvalDriver?: boolean;
  /** VS Code's logs folder (<user-data-dir>/logs), when the harness knows it: the log tests read the product's channel. */
  logsDir?: string;
  /** true: the runner extension plays the README screenshot scene (runner-ext/src/scene.ts) instead of the suite. */
  scene?: boolean;
}

let current: E2EConfig | undefined;

export function setConfig(cfg: E2EConfig): void {
  current = cfg;
}

export function config(): E2EConfig {
  if (!current) throw new Error('e2e config not loaded');
  return current;
}

export function loadConfig(file: string | undefined): E2EConfig {
  if (file) {
    const cfg = JSON.parse(readFileSync(file, 'utf8')) as E2EConfig;
    for (const key of ['repo', 'resultsFile', 'workDir', 'controlDir', 'nodePath'] as const) {
      if (typeof cfg[key] !== 'string' || !cfg[key]) throw new Error(`e2e config ${file}: missing "${key}"`);
    }
    return cfg;
  }
  // No harness: @vscode/test-electron on a machine that can download VS Code.
  const repo = process.env.EXEC_SERVER_REPO ?? findRepo(__dirname);
  const base = mkdtempSync(path.join(os.tmpdir(), 'exec-server-e2e-'));
  const cfg: E2EConfig = {
    repo,
    resultsFile: path.join(repo, 'test-results', 'e2e-results.json'),
    workDir: path.join(base, 'work'),
    controlDir: path.join(base, 'control'),
    nodePath: process.env.EXEC_SERVER_E2E_NODE ?? 'node',
    grep: process.env.EXEC_SERVER_E2E_GREP,
  };
  for (const d of [cfg.workDir, cfg.controlDir]) mkdirSync(d, { recursive: true });
  if (!existsSync(path.join(repo, 'dist', 'cli.js'))) throw new Error(`${repo}/dist/cli.js missing: run npm run build`);
  return cfg;
}

/** The nearest ancestor holding the product's package.json (the bundles live at different depths). */
function findRepo(from: string): string {
  for (let dir = from; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    try {
      if (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).name === 'exec-server') return dir;
    } catch {
      // no package.json here
    }
  }
  throw new Error(`cannot find the exec-server repository above ${from} (set EXEC_SERVER_REPO)`);
}
