// The server's span batches are exported from a worker thread of their own. The server's thread
// writes each batch's bytes (./server-spans.ts) and posts a copy to the worker
// (./export-worker.ts), where the HTTP exchange with the collector, its retries and the SDK's
// export delegate run in an isolate of their own. In the server's thread that exchange was the
// only code to use a second kind of socket, other Buffer sizes and timers: the first export
// deoptimized the node internals the server's websockets run (Buffer.allocUnsafe, toString,
// subarray, emit, onStreamRead...), and a server sampling 1 % of its requests paid several per
// cent of CPU for it (docs/performance.md, "Telemetry cost").
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { WORKER_KEY, type ExportWorkerConfig, type FromWorker, type ToWorker, type WorkerInit } from './export-protocol';
import type { BatchExporter } from './server-spans';

type Log = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;

/**
 * The worker's script: its own small bundle beside this one (dist/telemetry-export.js, built by
 * esbuild.mjs: the exporter without the rest of the SDK, which the worker would load and hold for
 * nothing), or ./export-worker.js unbundled (the tests' out/ tree).
 */
function workerFile(): string {
  const bundle = path.join(__dirname, 'telemetry-export.js');
  return existsSync(bundle) ? bundle : path.join(__dirname, 'export-worker.js');
}

/** ExportResultCode.FAILED (@opentelemetry/core), without loading it in the server's thread. */
const FAILED = 1;

/**
 * A BatchExporter whose exports run in a worker thread. A batch's bytes are copied into the
 * message (the batch buffer is free again at once); `done` is called when the worker reports
 * the export's outcome. The worker holds the process open only while exports are under way.
 * Should it fail or exit, every export still waiting and every later one fails with the reason.
 */
export function workerBatchExporter(config: ExportWorkerConfig, log: Log): BatchExporter {
  const init: WorkerInit = { key: WORKER_KEY, ...config };
  // No execArgv of the host's (an extension host's or a profiler's flags are not a worker's).
  const worker = new Worker(workerFile(), { workerData: init, execArgv: [] });
  worker.unref();
  const pending = new Map<number, (r: { code: number; error?: Error }) => void>();
  let nextId = 0;
  let dead: string | undefined;
  let closed: (() => void) | undefined;
  const settle = (id: number, code: number, error?: Error) => {
    const done = pending.get(id);
    if (!done) return;
    pending.delete(id);
    if (pending.size === 0) worker.unref();
    done({ code, error });
  };
  const die = (reason: string) => {
    if (dead) return;
    dead = reason;
    for (const id of [...pending.keys()]) settle(id, FAILED, new Error(reason));
    closed?.();
  };
  worker.on('message', (m: FromWorker) => {
    if (m.t === 'done') settle(m.id, m.code, m.error === undefined ? undefined : new Error(m.error));
    else if (m.t === 'log') log(m.level, m.message);
    else if (m.t === 'closed') closed?.();
  });
  worker.on('error', (e: Error) => {
    log('warn', `traces: the span export worker failed: ${e.message}`);
    die(`the span export worker failed: ${e.message}`);
  });
  worker.on('exit', (code) => die(`the span export worker exited (code ${code})`));
  let stopping: Promise<void> | undefined;
  return {
    export(request, spans, done) {
      if (dead) {
        done({ code: FAILED, error: new Error(dead) });
        return;
      }
      const id = ++nextId;
      if (pending.size === 0) worker.ref();
      pending.set(id, done);
      // The message carries a copy of this request's bytes alone (a view is cloned with its
      // whole buffer). Cloned, not transferred: detaching an ArrayBuffer invalidates V8's
      // "no ArrayBuffer is ever detached" protector for the whole isolate, and every optimized
      // function that reads a typed array (the server's websocket framing among them) was thrown
      // away and compiled again with detach checks (`--trace-deopt`: ~20 functions at the first
      // export).
      const message: ToWorker = { t: 'export', id, bytes: new Uint8Array(request), spans };
      worker.postMessage(message);
    },
    shutdown() {
      stopping ??= new Promise<void>((resolve) => {
        if (dead) return resolve();
        closed = resolve;
        worker.ref();
        worker.postMessage({ t: 'shutdown' } satisfies ToWorker);
      }).then(() => worker.terminate().then(() => undefined));
      return stopping;
    },
  };
}
