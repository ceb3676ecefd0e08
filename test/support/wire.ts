// Raw JSON-RPC lines over stdio to a server (ours or a reference): the interop tests that compare
// answers code for code, message for message and `data` for `data`.
import { spawn } from 'node:child_process';
import { commandOf, type ServerCommand } from './reference';
import { waitFor } from './wait';

export type Reply = { id: number; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };

/** Sends `batches` (one batch after another, waiting for its answers) and returns replies by id. */
export async function exchange(server: ServerCommand, batches: object[][], env: NodeJS.ProcessEnv = {}): Promise<Map<number, Reply>> {
  const child = spawn(commandOf(server), server.args('stdio'), { env: { ...server.env(), ...env }, stdio: ['pipe', 'pipe', 'ignore'] });
  const replies = new Map<number, Reply>();
  // Lines are cut where a chunk has a newline: a 16 MiB answer arrives in hundreds of chunks,
  // and searching the whole buffer again on each one took minutes.
  let pending: Buffer[] = [];
  child.stdout.on('data', (d: Buffer) => {
    let start = 0;
    let nl: number;
    while ((nl = d.indexOf(0x0a, start)) >= 0) {
      pending.push(d.subarray(start, nl));
      const msg = JSON.parse(Buffer.concat(pending).toString('utf8'));
      pending = [];
      start = nl + 1;
      if (typeof msg.id === 'number') replies.set(msg.id, msg);
    }
    if (start < d.length) pending.push(d.subarray(start));
  });
  try {
    for (const batch of batches) {
      for (const m of batch) child.stdin.write(JSON.stringify(m) + '\n');
      const ids = batch.filter((m) => 'id' in m).map((m) => (m as { id: number }).id);
      await waitFor(() => ids.every((id) => replies.has(id)), {
        what: `${server.name}: replies to ${ids}`,
        detail: () => `no reply to ${ids.filter((id) => !replies.has(id))}`,
      });
    }
  } finally {
    child.stdin.end();
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
  }
  return replies;
}

/** initialize + initialized, then `requests` (ids from 1) in one batch. */
export const initialized = (requests: object[]): object[][] => [
  [{ id: 0, method: 'initialize', params: { clientName: 'wire' } }],
  [{ method: 'initialized', params: {} }, ...requests],
];
