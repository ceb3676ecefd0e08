// Runs the built CLI (dist/cli.js) for security/limits tests and talks to it over real
// websockets. Every started server is tracked so a test's `after` can stop it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import WebSocket from 'ws';

export const repoRoot = process.env.EXEC_SERVER_REPO ?? path.resolve(__dirname, '../../..');
export const cliPath = path.join(repoRoot, 'dist/cli.js');

/** Builds dist/cli.js when it is missing or predates the security flags. */
export function ensureBuilt(): void {
  if (existsSync(cliPath) && readFileSync(cliPath, 'utf8').includes('--ws-shared-secret-file')) return;
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'esbuild.mjs')], { cwd: repoRoot, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`build failed: ${r.stderr}`);
}

export interface Cli {
  child: ChildProcess;
  url: string;
  stdout(): string;
  stderr(): string;
  stop(): Promise<void>;
}

const running = new Set<Cli>();
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((c) => c.stop()));
}

/** Starts the CLI and waits for the URL line; rejects with stderr if it exits first. */
export interface StartOptions {
  timeoutMs?: number;
  cwd?: string;
  /** Run as another user (needs root), e.g. nobody for permission tests. */
  user?: { uid: number; gid: number };
  env?: NodeJS.ProcessEnv;
}

export function startCli(args: string[], opts: StartOptions = {}): Promise<Cli> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'], cwd: opts.cwd, env: opts.env ?? process.env, ...opts.user });
    let out = '';
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    const cli: Cli = {
      child,
      url: '',
      stdout: () => out,
      stderr: () => err,
      stop: () =>
        new Promise<void>((res) => {
          running.delete(cli);
          if (child.exitCode !== null || child.signalCode !== null) return res();
          const k = setTimeout(() => child.kill('SIGKILL'), 5000);
          child.once('exit', () => {
            clearTimeout(k);
            res();
          });
          child.kill('SIGTERM');
        }),
    };
    running.add(cli);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`CLI did not print its URL in ${timeoutMs} ms; stderr: ${err}`));
    }, timeoutMs);
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /^(wss?:\/\/\S+)\s*$/m.exec(out);
      if (m && !cli.url) {
        clearTimeout(timer);
        cli.url = m[1];
        resolve(cli);
      }
    });
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      if (!cli.url) reject(new Error(`CLI exited (${code ?? sig}) before listening; stderr: ${err}`));
    });
  });
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
