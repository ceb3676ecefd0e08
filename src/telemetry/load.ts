// Loads the OpenTelemetry implementation only when telemetry is on. It is a separate bundle
// (dist/telemetry.js, built by esbuild.mjs beside dist/cli.js and dist/extension.js) required
// by path at run time: the SDK is ~700 KB of JavaScript, and parsing it on every start would
// cost ~10 ms even when telemetry is off. Unbundled (the tests' out/ tree) it is ./otel.js.
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { NOOP_SERVER_TELEMETRY, type ServerTelemetry } from './api';
import { telemetryEnabled, type TelemetryConfig } from './config';
import type * as Otel from './otel';

type Log = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;

/** The OpenTelemetry module (evaluates the SDK on first call). */
export function otel(): typeof Otel {
  const bundle = path.join(__dirname, 'telemetry.js');
  // A computed path: esbuild leaves this require alone (no copy of the SDK in the main bundles).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(existsSync(bundle) ? bundle : path.join(__dirname, 'otel')) as typeof Otel;
}

/** Server telemetry for `config`: the no-op (SDK not loaded) when nothing is to be exported. */
export async function startServerTelemetry(
  config: TelemetryConfig,
  log?: Log,
  opts: { diagnostics?: boolean } = {},
): Promise<ServerTelemetry & { metricsUrl?: string }> {
  if (!telemetryEnabled(config)) return NOOP_SERVER_TELEMETRY;
  return otel().startServerTelemetry(config, log, opts);
}

/** Has the OpenTelemetry SDK been loaded in this process? (tests: off must not load it) */
export function sdkLoaded(): boolean {
  return (globalThis as Record<symbol, unknown>)[Symbol.for('exec-server.telemetry.sdkLoaded')] === true;
}
