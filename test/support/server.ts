// Shared helpers for the server engine tests: a recording sink, a connected+initialized
// client over the in-process ServerConnection, temp dirs. Waits: test/support/wait.ts.
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { RpcError } from '../../src/protocol/errors';
import type { NotificationMap, NotificationMethod } from '../../src/protocol/types';
import type { NotificationSink, ServerConnection, ServerOptions } from '../../src/server/api';
import { ExecServer } from '../../src/server/exec-server';
import { removeTempDir, tempDir } from './tmp';
import { waitFor } from './wait';

export interface Recorded {
  method: NotificationMethod;
  params: any;
}

export class RecordingSink implements NotificationSink {
  readonly events: Recorded[] = [];
  private listeners = new Set<() => void>();
  notify<M extends NotificationMethod>(method: M, params: NotificationMap[M]): void {
    this.events.push({ method, params });
    for (const l of [...this.listeners]) l();
  }
  /** Resolves when `pred` holds over the recorded events (checked on each event), or rejects after `ms`. */
  waitFor(pred: (events: Recorded[]) => boolean, ms = 15_000, what = 'condition'): Promise<void> {
    return waitFor(() => pred(this.events), {
      timeout: ms,
      what,
      wake: (cb) => {
        this.listeners.add(cb);
        return () => this.listeners.delete(cb);
      },
    }).then(() => undefined);
  }
  forProcess(id: string): Recorded[] {
    return this.events.filter((e) => e.method.startsWith('process/') && e.params.processId === id);
  }
  outputText(id: string): string {
    return Buffer.concat(
      this.forProcess(id)
        .filter((e) => e.method === 'process/output')
        .map((e) => Buffer.from(e.params.chunk, 'base64')),
    ).toString();
  }
  closed(id: string): boolean {
    return this.forProcess(id).some((e) => e.method === 'process/closed');
  }
}

export interface Client {
  server: ExecServer;
  conn: ServerConnection;
  sink: RecordingSink;
  sessionId: string;
  call(method: string, params?: unknown): Promise<any>;
}

/** A new connection on `server`, initialized (and `initialized` sent). */
export async function connectClient(server: ExecServer, resumeSessionId?: string, terminateOnClose = false): Promise<Client> {
  const sink = new RecordingSink();
  const conn = server.connect(sink, { terminateOnClose, label: 'test' });
  const init = (await conn.requestUntyped('initialize', { clientName: 'test', resumeSessionId })) as { sessionId: string };
  if (!conn.notification('initialized', {})) throw new Error('initialized refused');
  return { server, conn, sink, sessionId: init.sessionId, call: (m, p = {}) => conn.requestUntyped(m, p) };
}

export async function newServerClient(opts: ServerOptions = {}): Promise<Client> {
  return connectClient(new ExecServer(opts));
}

/** Expects `p` to reject with an RpcError of `code` (and message matching `msg` when given). */
export async function rejectsWith(p: Promise<unknown>, code: number, msg?: string | RegExp): Promise<RpcError> {
  try {
    const v = await p;
    throw new Error(`expected error ${code}, got result ${JSON.stringify(v)}`);
  } catch (e) {
    if (!(e instanceof RpcError)) throw e;
    if (e.code !== code) throw new Error(`expected code ${code}, got ${e.code}: ${e.message}`);
    if (typeof msg === 'string' && e.message !== msg) throw new Error(`expected message ${JSON.stringify(msg)}, got ${JSON.stringify(e.message)}`);
    if (msg instanceof RegExp && !msg.test(e.message)) throw new Error(`message ${JSON.stringify(e.message)} does not match ${msg}`);
    return e;
  }
}

/** A fresh temp dir (real path), removed at the latest when the test file's process exits. */
export function tmpDir(prefix = 'es-server-'): string {
  return tempDir(prefix);
}

/** A fresh server with an initialized client and a new temp dir; `close` shuts the server down, then removes the dir. */
export async function serverWithTmpDir(): Promise<{ c: Client; dir: string; close(): Promise<void> }> {
  const c = await newServerClient();
  const dir = tmpDir();
  const close = async () => {
    await c.server.shutdown();
    removeTempDir(dir);
  };
  return { c, dir, close };
}
export const uri = (p: string) => pathToFileURL(p).href;
export const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
export const unb64 = (s: string) => Buffer.from(s, 'base64').toString();

/** A plain environment for children (the server gives children exactly this). */
export const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.homedir(), LANG: 'C' };

export function startParams(processId: string, argv: string[], extra: Record<string, unknown> = {}) {
  return { processId, argv, cwd: uri(os.tmpdir()), env: ENV, tty: false, ...extra };
}

/**
 * Runs `script` with bash (stderr into stdout) as process `id` with `extra` start params (a
 * sandbox, a networkProxy, …) and waits for it to close: the start's answer, its output, exit
 * code and network/policyDecision params.
 */
export async function runScript(c: Client, id: string, script: string, extra: Record<string, unknown>): Promise<{ start: unknown; out: string; exitCode: number; decisions: any[] }> {
  const start = await c.call('process/start', startParams(id, ['/bin/bash', '-c', `exec 2>&1\n${script}`], extra));
  await c.sink.waitFor(() => c.sink.closed(id), 30_000, `${id} closed`);
  const ex = c.sink.forProcess(id).find((e) => e.method === 'process/exited')!;
  const decisions = c.sink.events.filter((e) => e.method === 'network/policyDecision' && e.params.processId === id).map((e) => e.params);
  return { start, out: c.sink.outputText(id), exitCode: ex.params.exitCode, decisions };
}

