// The messages between the server's thread (./worker-exporter.ts) and its span export worker
// (./export-worker.ts). No imports: the worker's bundle and the server's share only these types.

/** Marks the workerData of an export worker (an embedding app's own workers never start the loop). */
export const WORKER_KEY = 'exec-server.span-export.v1';

export interface ExportWorkerConfig {
  protocol: 'http/protobuf' | 'http/json';
  /** The OTLP traces URL (…/v1/traces). */
  endpoint: string;
  /** service.name of the resource (http/json rebuilds the spans with it). */
  serviceName: string;
  /** Report the SDK's export diagnostics (collector unreachable...) through the server's log. */
  diagnostics: boolean;
}

export interface WorkerInit extends ExportWorkerConfig {
  key: typeof WORKER_KEY;
}

export type ToWorker = { t: 'export'; id: number; bytes: Uint8Array; spans: number } | { t: 'shutdown' };
export type FromWorker = { t: 'done'; id: number; code: number; error?: string } | { t: 'log'; level: 'warn' | 'debug'; message: string } | { t: 'closed' };
