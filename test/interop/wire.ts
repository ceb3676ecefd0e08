// Raw JSON-RPC lines over stdio to a server (ours or a reference): the interop tests that compare
// answers code for code, message for message and `data` for `data`.
import { spawn } from 'node:child_process';
import { commandOf, type ServerCommand } from './helpers';
import { waitFor } from '../support/wait';

export type Reply = { id: number; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };

/** Sends `batches` (one batch after another, waiting for its answers) and returns replies by id. */
export async function exchange(server: ServerCommand, batches: object[][], env: NodeJS.ProcessEnv = {}): Promise<Map<number, Reply>> {
  const child = spawn(commandOf(server), server.args('stdio'), { env: { ...server.env(), ...env }, stdio: ['pipe', 'pipe', 'ignore'] });
  const replies = new Map<number, Reply>();
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const msg = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      if (typeof msg.id === 'number') replies.set(msg.id, msg);
    }
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
