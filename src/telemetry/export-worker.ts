// The span export worker's script (started by ./worker-exporter.ts; bundled on its own as
// dist/telemetry-export.js): the HTTP exchange with the collector, its retries and the SDK's
// export delegate, for the batches the server's thread posts. Its top level starts the export
// loop only in a worker made for it, identified by its workerData.
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { isMainThread, parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { DiagLogLevel, diag } from '@opentelemetry/api';
import { WORKER_KEY, type FromWorker, type ToWorker, type WorkerInit } from './export-protocol';
import type * as Otel from './otel';
import { protoBatchExporter } from './otlp-proto';
import type { BatchExporter } from './server-spans';

/**
 * http/json, a debugging format, rebuilds the spans with the SDK's trace modules: those are taken
 * from the server's telemetry bundle beside this one (./otel unbundled), so this worker's own
 * bundle holds the protobuf exporter alone.
 */
function jsonExporter(init: WorkerInit): BatchExporter {
  const bundle = path.join(__dirname, 'telemetry.js');
  // A computed path: esbuild leaves this require alone.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const otel = require(existsSync(bundle) ? bundle : path.join(__dirname, 'otel')) as typeof Otel;
  return otel.jsonSpanExporter(init.endpoint, init.serviceName);
}

/** The export loop of a worker (its messages from workerBatchExporter, on `port`). */
function runWorker(init: WorkerInit, port: MessagePort): void {
  const post = (m: FromWorker) => port.postMessage(m);
  if (init.diagnostics) {
    // The SDK's export delegate reports failures through its global diag logger (this isolate's).
    const fmt = (m: string, args: unknown[]) => [m, ...args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : JSON.stringify(a)))].join(' ');
    diag.setLogger(
      {
        error: (m, ...a) => post({ t: 'log', level: 'warn', message: `telemetry: ${fmt(m, a)}` }),
        warn: (m, ...a) => post({ t: 'log', level: 'warn', message: `telemetry: ${fmt(m, a)}` }),
        info: (m, ...a) => post({ t: 'log', level: 'debug', message: `telemetry: ${fmt(m, a)}` }),
        debug: () => {},
        verbose: () => {},
      },
      { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
    );
  }
  const exporter = init.protocol === 'http/json' ? jsonExporter(init) : protoBatchExporter(init.endpoint);
  port.on('message', (m: ToWorker) => {
    if (m.t === 'export') {
      exporter.export(m.bytes, m.spans, (r) => post({ t: 'done', id: m.id, code: r.code, error: r.error?.message }));
    } else if (m.t === 'shutdown') {
      exporter.shutdown().then(
        () => post({ t: 'closed' }),
        (e: unknown) => {
          post({ t: 'log', level: 'warn', message: `traces: exporter shutdown failed: ${e instanceof Error ? e.message : String(e)}` });
          post({ t: 'closed' });
        },
      );
    }
  });
}

if (!isMainThread && parentPort && (workerData as Partial<WorkerInit> | null)?.key === WORKER_KEY) runWorker(workerData as WorkerInit, parentPort);
