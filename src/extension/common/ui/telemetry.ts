// The extension's telemetry glue: takes the execServer.telemetry.* settings from the settings
// owner (user settings only), and renders "Exec Server: Show Request Statistics" (per-environment, per-method
// counts and latency percentiles in an output channel; no collector needed).
import * as vscode from 'vscode';
import { RequestTelemetry } from '../request-telemetry';
import type { SettingsOwner } from '../settings';

export function registerRequestTelemetry(
  ctx: vscode.ExtensionContext,
  settings: SettingsOwner,
  log: vscode.LogOutputChannel,
): { telemetry: RequestTelemetry; showStatistics(): void } {
  const telemetry = new RequestTelemetry(() => settings.current.telemetry, (level, message) => log[level](message));
  const out = vscode.window.createOutputChannel('Exec Server Request Statistics');
  const showStatistics = () => {
    out.clear();
    out.append(`Requests sent by this window, per environment (latencies as seen by the client, in ms). Run the command again to refresh.\n\n${telemetry.report()}`);
    out.show(true);
  };
  ctx.subscriptions.push(
    out,
    settings.onDidChange(({ changed }) => {
      if (changed.has('telemetry')) log.info('telemetry settings changed: they apply to new connections (and to Local after a restart)');
    }),
  );
  return { telemetry, showStatistics };
}
