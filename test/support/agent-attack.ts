// Shared fixture of the agent attack tests: a real agent endpoint (loopback websocket, its own
// ExecServer, the agent gate) whose questions are answered by the test, and a raw websocket
// agent that sends exactly the frames an attacker would (pipelined, never waiting, or never
// reading its answers).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { AgentEndpoint } from '../../src/extension/agent/endpoint';
import type { AgentQuestion } from '../../src/extension/agent/gate';
import type { ApprovalPolicy } from '../../src/extension/approval/policy';
import { descendants, isAlive } from './process';
import { tempDir } from './tmp';
import { waitFor } from './wait';

export interface Asked {
  message: string;
  detail: string;
  /** Resolve to answer this question (the answer function may also return at once). */
  answer(choice: string | undefined): void;
}

export interface EndpointFixture {
  url: string;
  token: string;
  questions: Asked[];
  logs: string[];
  lates: string[];
  sandboxDenials: string[][];
  /** Questions denied for want of an answer: "<kind> <seconds>". */
  timedOut: string[];
  endpoint: AgentEndpoint;
  stop(): Promise<void>;
}

export interface FixtureOptions {
  policy: ApprovalPolicy;
  roots?: string[];
  /** Returns the button to click, or 'wait' to leave the question open (answer it through Asked.answer). */
  answer?: (q: { message: string; detail: string }) => string | undefined | 'wait';
  timeoutMs?: number;
  sandboxAll?: boolean;
  /** execServer.network.allowedDomains */
  allowedDomains?: string[];
  /** The home directory the gate protects (default: the real one). */
  homeDir?: string;
  /** The platform the gate believes it runs on (default: this one's). */
  platform?: NodeJS.Platform;
  /**
   * The user's Local server, which the extension also holds. Before the gate was redesigned (docs/security.md, "Agent endpoint: threat model") the endpoint
   * served it; now the endpoint always runs its own engine and this is not used.
   */
  localServer?: unknown;
}

export async function startEndpoint(o: FixtureOptions): Promise<EndpointFixture> {
  const questions: Asked[] = [];
  const logs: string[] = [];
  const lates: string[] = [];
  const sandboxDenials: string[][] = [];
  const timedOut: string[] = [];
  const endpoint = await AgentEndpoint.start({
    port: 0,
    gate: {
      policy: () => o.policy,
      sandboxAll: () => o.sandboxAll === true,
      allowedDomains: () => o.allowedDomains ?? [],
      timedOut: (q, seconds) => timedOut.push(`${q.kind ?? 'request'} ${seconds}`),
      timeoutMs: () => o.timeoutMs ?? 10_000,
      workspaceRoots: () => o.roots ?? [],
      ...(o.homeDir ? { homeDir: () => o.homeDir as string } : {}),
      ...(o.platform ? { platform: o.platform } : {}),
      ask: (q: AgentQuestion) =>
        new Promise<string | undefined>((resolve) => {
          questions.push({ message: q.message, detail: q.detail, answer: resolve });
          const a = o.answer ? o.answer({ message: q.message, detail: q.detail }) : 'Deny';
          if (a !== 'wait') resolve(a);
        }),
      late: (_q, choice) => lates.push(choice),
      log: (_level, m) => logs.push(m),
    },
    onSandboxDenied: (info) => sandboxDenials.push(info.argv),
    log: (_level, m) => logs.push(m),
  });
  return { url: endpoint.url, token: endpoint.token, questions, logs, lates, sandboxDenials, timedOut, endpoint, stop: () => endpoint.stop() };
}

interface RpcReply {
  id: number;
  result?: unknown;
  error?: { code: number; message: string };
}

/** A raw JSON-RPC agent over a real websocket: nothing waits unless the test awaits. */
export class RawAgent {
  private nextId = 1;
  private readonly waiting = new Map<number, (r: RpcReply) => void>();
  readonly notifications: { method: string; params: unknown }[] = [];
  /** Requests the server sent to this agent (server → client). */
  readonly serverRequests: { id: number; method: string; params: unknown }[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as RpcReply & { method?: string; params?: unknown };
      if (m.method !== undefined && m.id === undefined) this.notifications.push({ method: m.method, params: m.params });
      else if (m.method !== undefined) this.serverRequests.push({ id: m.id, method: m.method, params: m.params });
      else this.waiting.get(m.id)?.(m);
    });
  }

  static connect(url: string, token: string): Promise<RawAgent> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false });
      ws.once('open', () => resolve(new RawAgent(ws)));
      ws.once('error', reject);
    });
  }

  /** Sends a request now; the promise settles with the reply (result or error), never rejects. */
  send(method: string, params: unknown): Promise<RpcReply> {
    const id = this.nextId++;
    const reply = new Promise<RpcReply>((resolve) => this.waiting.set(id, resolve));
    this.ws.send(JSON.stringify({ id, method, params }));
    return reply;
  }

  notify(method: string, params: unknown): void {
    this.ws.send(JSON.stringify({ method, params }));
  }

  /** initialize, its answer, then initialized: the polite handshake (the pipelined one is its own test). */
  async handshake(): Promise<RpcReply> {
    const r = await this.send('initialize', { clientName: 'attack-test' });
    this.notify('initialized', {});
    return r;
  }

  /** Stops reading the socket: the server's answers pile up on its side. */
  stopReading(): void {
    (this.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  }

  close(): void {
    this.ws.terminate();
  }
}

/** An endpoint and one handshaken raw agent for `body`; both closed afterwards, whatever happens. */
export async function withAgent(opts: FixtureOptions, body: (f: EndpointFixture, a: RawAgent) => Promise<void>): Promise<void> {
  const f = await startEndpoint(opts);
  const a = await RawAgent.connect(f.url, f.token);
  try {
    await a.handshake();
    await body(f, a);
  } finally {
    a.close();
    await f.stop();
  }
}

export function tmpDir(prefix: string): string {
  return tempDir(prefix); // test/support: removed at exit even if a test fails before removeDir
}

export function removeDir(d: string): void {
  rmSync(d, { recursive: true, force: true });
}

export const uri = (p: string) => pathToFileURL(p).href;

export function startParams(id: string, argv: string[], cwd: string, extra: Record<string, unknown> = {}) {
  return { processId: id, argv, cwd: uri(cwd), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, tty: false, pipeStdin: false, arg0: null, ...extra };
}

/**
 * The symlink swap of the race tests: in `dir`, the directory `d` is swapped for a link to
 * `target` and back, over and over — what a sandboxed command may do without a question. It
 * runs confined like one (bubblewrap, only `dir` writable), so whatever lands outside was put
 * there by the gate + engine.
 */
export function startSwapper(dir: string, target: string): ChildProcess {
  const loop = `cd ${dir}; while true; do mv d d.real; ln -s ${target} d; rm d; mv d.real d; done`;
  return spawn('/usr/bin/bwrap', ['--ro-bind', '/', '/', '--bind', dir, dir, '--dev', '/dev', '--proc', '/proc', '--unshare-all', '--die-with-parent', '/bin/bash', '-c', loop], { stdio: 'ignore' });
}

/** Kills the swapper and waits until its children are gone too (they die with bwrap, a moment later). */
export async function stopSwapper(swapper: ChildProcess): Promise<void> {
  const inside = descendants(swapper.pid!).map((p) => p.pid);
  const gone = new Promise((r) => swapper.once('exit', r));
  swapper.kill('SIGKILL');
  await gone;
  await waitFor(() => inside.every((p) => !isAlive(p)), { what: "the swapper's children to die with it" });
}

/** What a race changed in `target`: entries other than its x<i>/r<i> files, and x<i> files (i < n) gone. */
export function changedOutside(target: string, n: number): { landed: string[]; removed: string[] } {
  const landed = readdirSync(target).filter((name) => !/^[xr]\d+$/.test(name));
  const removed = Array.from({ length: n }, (_, i) => `x${i}`).filter((name) => !existsSync(path.join(target, name)));
  return { landed, removed };
}

/**
 * The gate allowed no start of `id`: it records every start it lets through before forwarding it,
 * and answers for another process only for those. A refused start that ran late would be there.
 */
export async function neverStarted(a: RawAgent, id: string): Promise<void> {
  const r = await a.send('process/read', { processId: id, afterSeq: 0 });
  assert.match(String(r.error?.message), new RegExp(`process ${id} was not started by this connection`), `${id} was let through: ${JSON.stringify(r)}`);
}

/**
 * Waits (process/read long polls, ~20 s at most) until `id` closed, or a read of it is refused
 * (the gate did not start it, or it is gone).
 */
export async function processClosed(a: RawAgent, id: string): Promise<void> {
  // After what was already seen, so each read waits for news (a read from 0 answers at once once
  // there is output: a count of such reads is over long before a loaded machine closes the process).
  let afterSeq = 0;
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const r = (await a.send('process/read', { processId: id, afterSeq, waitMs: 500 })).result as { closed: boolean; nextSeq: number } | undefined;
    if (r?.closed || r === undefined) return;
    afterSeq = Math.max(afterSeq, r.nextSeq - 1);
  }
  throw new Error(`process ${id} did not close`);
}

export { sleep } from './wait';
