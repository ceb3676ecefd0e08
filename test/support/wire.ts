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

/** The outcome of one process run to its end on a stdio server (runToClose). */
export interface StdioRun {
  /** The process/start reply. */
  start: { id: number; result?: any; error?: any };
  /** What process/read gave back once it had closed, as text. */
  out: string;
  /** Its network/policyDecision notifications' params. */
  decisions: any[];
  /** Replies to the `extra` requests, by id. */
  replies: Map<number, any>;
}

/**
 * Starts `argv` (a server on stdio), initializes, sends `extra` requests (ids ≥ 10), starts
 * process `params.processId` (id 1), waits for it to close (or its start to fail), reads its
 * output (id 2) and kills the server. Every frame is kept: notifications matter here, unlike in
 * exchange().
 */
export async function runToClose(argv: string[], params: { processId: string } & Record<string, unknown>, opts: { env?: NodeJS.ProcessEnv; cwd?: string; extra?: object[]; timeoutMs?: number; what?: string } = {}): Promise<StdioRun> {
  const child = spawn(argv[0], argv.slice(1), { env: opts.env, cwd: opts.cwd, stdio: ['pipe', 'pipe', 'ignore'] });
  const frames: any[] = [];
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      frames.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
    }
  });
  const send = (m: object) => child.stdin.write(JSON.stringify(m) + '\n');
  const what = opts.what ?? argv[0];
  for (const m of [{ id: 0, method: 'initialize', params: { clientName: 'run-to-close' } }, { method: 'initialized', params: {} }, ...(opts.extra ?? []), { id: 1, method: 'process/start', params }]) send(m);
  const closed = (f: any) => (f.method === 'process/closed' && f.params?.processId === params.processId) || (f.id === 1 && f.error);
  try {
    await waitFor(() => frames.some(closed), { timeout: opts.timeoutMs ?? 30_000, what: `${what}: ${params.processId} to close` });
    send({ id: 2, method: 'process/read', params: { processId: params.processId } });
    await waitFor(() => frames.some((f) => f.id === 2), { what: `${what}: process/read` });
  } finally {
    child.kill('SIGKILL');
  }
  const read = frames.find((f) => f.id === 2);
  return {
    start: frames.find((f) => f.id === 1),
    out: (read.result?.chunks ?? []).map((c: { chunk: string }) => Buffer.from(c.chunk, 'base64').toString()).join(''),
    decisions: frames.filter((f) => f.method === 'network/policyDecision').map((f) => f.params),
    replies: new Map(frames.filter((f) => typeof f.id === 'number' && f.id >= 10 && f.method === undefined).map((f) => [f.id, f])),
  };
}
