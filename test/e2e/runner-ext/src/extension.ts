// The e2e test-runner extension. It depends on the product extension (extensionDependencies)
// and, when the harness asks for it, runs the suite inside the real extension host after
// startup. It does nothing otherwise, so installing it by accident is harmless.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { loadConfig, setConfig } from '../../suite/config';
import { writeResults, type ResultsFile } from '../../suite/framework';
import { resumeFromConfig, runFromConfig } from '../../suite/index';
import { runScene } from './scene';

export function activate(context: vscode.ExtensionContext): void {
  const configFile = process.env.EXEC_SERVER_E2E_CONFIG || vscode.workspace.getConfiguration('execServerE2E').get<string>('config');
  if (!configFile) return;
  const out = vscode.window.createOutputChannel('Exec Server E2E');
  context.subscriptions.push(out);
  let cfg;
  try {
    cfg = loadConfig(configFile);
  } catch (err) {
    out.appendLine(String(err));
    return;
  }
  if (cfg.scene) {
    // The README screenshot scene (test/e2e/screenshots.mjs) instead of the suite.
    setConfig(cfg);
    void runScene(cfg, (line) => out.appendLine(line));
    return;
  }
  // The harness opens its workspace file, beside the results file; another window (a test's
  // "Open in New Window": a folder, or the workspace file Open Remote Folder writes) must leave
  // the suite alone.
  const own = vscode.workspace.workspaceFile;
  if (!own || own.scheme !== 'file' || path.dirname(own.fsPath) !== path.dirname(cfg.resultsFile)) {
    out.appendLine(`not the harness window (${own ? own.toString() : 'no workspace file'}): not running the suite`);
    return;
  }
  // A second activation (the extension host restarted mid-run) must not start the suite again:
  // report it as a failure the harness can show — unless a test reloaded the window on purpose.
  if (existsSync(cfg.resultsFile)) {
    const prev = JSON.parse(readFileSync(cfg.resultsFile, 'utf8')) as ResultsFile;
    if (!prev.done && prev.pendingReload) {
      out.appendLine(`the window reloaded for "${prev.pendingReload.name}": resuming the suite`);
      // The output channel throws once this host shuts down (a further reload): never fail the suite for that.
      const log = (line: string) => {
        try {
          out.appendLine(line);
        } catch {
          // closed
        }
      };
      resumeFromConfig(cfg, prev, log).then(
        (data) => out.appendLine(`done: ${data.results.filter((r) => r.ok).length} passed`),
        (err) => writeResults(cfg.resultsFile, { ...prev, pendingReload: undefined, done: true, fatal: `suite crashed after the reload: ${err?.stack ?? err}` }),
      );
      return;
    }
    if (!prev.done) {
      const last = prev.results[prev.results.length - 1]?.name ?? '(before the first test finished)';
      writeResults(cfg.resultsFile, { ...prev, done: true, fatal: `the extension host restarted during the suite, after: ${last}` });
    }
    return;
  }
  const started = Date.now();
  out.appendLine(`running the exec-server e2e suite (config ${configFile})`);
  runFromConfig(cfg, (line) => {
    try {
      out.appendLine(line);
    } catch {
      // closed (the window reloads)
    }
  }).then(
    (data) => out.appendLine(`done in ${Date.now() - started} ms: ${data.results.filter((r) => r.ok).length} passed`),
    (err) => {
      out.appendLine(`suite crashed: ${err?.stack ?? err}`);
      writeResults(cfg.resultsFile, { planned: [], results: [], done: true, fatal: `suite crashed: ${err?.stack ?? err}` });
    },
  );
}

export function deactivate(): void {}
