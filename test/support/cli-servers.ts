// Runs the built CLI (dist/cli.js) for security/limits tests and talks to it over real
// websockets. Every started server is tracked (test/support/cli.ts) so a test's `after` can stop it.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import WebSocket from 'ws';

import { cliPath, repoRoot } from './cli';

// The launcher itself lives in test/support/cli.ts (one for the whole suite); re-exported so
// the security, fuzz, telemetry and reliability tests keep importing it from here.
export { cliPath, repoRoot, startCli, stopAll, type ServerProcess as Cli, type StartOptions } from './cli';

/** Builds dist/cli.js when it is missing or predates the security flags. */
export function ensureBuilt(): void {
  if (existsSync(cliPath) && readFileSync(cliPath, 'utf8').includes('--ws-shared-secret-file')) return;
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'esbuild.mjs')], { cwd: repoRoot, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`build failed: ${r.stderr}`);
}

/** Runs the CLI expecting it to refuse to start; returns exit code and output. */
export function runCliExpectExit(args: string[], timeoutMs = 20_000): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cliPath, ...args], { encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export type Attempt = { kind: 'http'; status: number; body: string } | { kind: 'open'; ws: WebSocket } | { kind: 'error'; message: string };

/** Opens a websocket; reports the HTTP refusal (status + body) or the open socket. */
export function attempt(url: string, opts: WebSocket.ClientOptions = {}): Promise<Attempt> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { handshakeTimeout: 15_000, ...opts });
    ws.on('unexpected-response', (_req, resp) => {
      let body = '';
      resp.on('data', (c: Buffer) => (body += c));
      resp.on('end', () => resolve({ kind: 'http', status: resp.statusCode ?? 0, body: body.trim() }));
      resp.on('error', () => resolve({ kind: 'http', status: resp.statusCode ?? 0, body: body.trim() }));
    });
    ws.on('open', () => resolve({ kind: 'open', ws }));
    ws.on('error', (e) => resolve({ kind: 'error', message: e.message }));
  });
}

/** A minimal JSON-RPC peer over an open websocket (no `jsonrpc` member, like the reference). */
export class RawRpc {
  private next = 1;
  private readonly pending = new Map<number | string, (msg: Record<string, unknown>) => void>();
  readonly notifications: Array<Record<string, unknown>> = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      const msg = JSON.parse(d.toString()) as Record<string, unknown>;
      if (msg.id !== undefined && !('method' in msg)) {
        const cb = this.pending.get(msg.id as number);
        this.pending.delete(msg.id as number);
        cb?.(msg);
      } else this.notifications.push(msg);
    });
    this.closed = new Promise((res) => ws.on('close', (code, reason) => res({ code, reason: reason.toString() })));
  }

  call(method: string, params: unknown): Promise<Record<string, unknown>> {
    const id = this.next++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  notify(method: string, params: unknown): void {
    this.ws.send(JSON.stringify({ method, params }));
  }

  /** A process's output as text: process/read long polls from seq 0 until it has closed (at most `maxReads` reads). */
  async readOutput(processId: string, { maxReads = 200, waitMs = 500 } = {}): Promise<string> {
    let out = '';
    let afterSeq = 0;
    for (let i = 0; i < maxReads; i++) {
      const r = (await this.call('process/read', { processId, afterSeq, waitMs })).result as { chunks: { seq: number; chunk: string }[]; closed: boolean };
      for (const c of r.chunks) {
        out += Buffer.from(c.chunk, 'base64').toString();
        afterSeq = c.seq;
      }
      if (r.closed) break;
    }
    return out;
  }

  async init(): Promise<string> {
    const r = await this.call('initialize', { clientName: 'security-test' });
    if (!r.result) throw new Error(`initialize failed: ${JSON.stringify(r)}`);
    this.notify('initialized', {});
    return (r.result as { sessionId: string }).sessionId;
  }

  get pendingCount(): number {
    return this.pending.size;
  }
}

/** A websocket to `url` that must open, with an initialized RawRpc on it (throws with the failed attempt otherwise). */
export async function openRpc(url: string): Promise<RawRpc> {
  const a = await attempt(url);
  if (a.kind !== 'open') throw new Error(`connect failed: ${JSON.stringify(a)}`);
  const rpc = new RawRpc(a.ws);
  await rpc.init();
  return rpc;
}
