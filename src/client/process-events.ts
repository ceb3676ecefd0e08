// Decodes the process notifications (process/output, process/exited, process/closed) into
// the events a ClientProcess orders and delivers. One decoder for every reader of them: the
// client, and the extension's agent endpoint, which watches its agents' notifications.
import type { ProcessEvent } from './process-handle';

/** The process and event a notification carries; undefined for other methods or a malformed one. */
export function processEventOf(method: string, params: unknown): { processId: string; event: ProcessEvent } | undefined {
  if (method !== 'process/output' && method !== 'process/exited' && method !== 'process/closed') return undefined;
  const p = (params ?? {}) as Record<string, unknown>;
  if (typeof p.seq !== 'number') return undefined;
  const processId = String(p.processId);
  if (method === 'process/output') {
    // A binary frame (or the in-process path) carries the bytes as `data`; JSON as base64 `chunk`.
    const data = p.data instanceof Uint8Array ? p.data : Buffer.from(String(p.chunk ?? ''), 'base64');
    return { processId, event: { kind: 'output', seq: p.seq, stream: p.stream as 'stdout', data } };
  }
  if (method === 'process/exited') return { processId, event: { kind: 'exited', seq: p.seq, exitCode: Number(p.exitCode) } };
  return { processId, event: { kind: 'closed', seq: p.seq } };
}
