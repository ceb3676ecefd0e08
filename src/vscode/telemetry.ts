// The extension's telemetry glue: reads the execServer.telemetry.* settings (user settings
// only), and renders "Exec Server: Show Request Statistics" (per-environment, per-method
// counts and latency percentiles in an output channel; no collector needed).
import * as vscode from 'vscode';
import { RequestTelemetry, type TelemetrySettings } from './core/request-telemetry';

export function registerRequestTelemetry(ctx: vscode.ExtensionContext, log: vscode.LogOutputChannel): { telemetry: RequestTelemetry; showStatistics(): void } {
  const setting = <T>(key: string): T | undefined => vscode.workspace.getConfiguration('execServer').inspect<T>(key)?.globalValue;
  const telemetry = new RequestTelemetry(
    (): TelemetrySettings => ({
      otlpEndpoint: (setting<string>('telemetry.otlpEndpoint') ?? '').trim(),
      otlpProtocol: setting<string>('telemetry.otlpProtocol') === 'http/json' ? 'http/json' : 'http/protobuf',
    }),
    (level, message) => log[level](message),
  );
  const out = vscode.window.createOutputChannel('Exec Server Request Statistics');
  const showStatistics = () => {
    out.clear();
    out.append(`Requests sent by this window, per environment (latencies as seen by the client, in ms). Run the command again to refresh.\n\n${telemetry.report()}`);
    out.show(true);
  };
  ctx.subscriptions.push(
    out,
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('execServer.telemetry')) log.info('telemetry settings changed: they apply to new connections (and to Local after a restart)');
    }),
  );
  return { telemetry, showStatistics };
}
