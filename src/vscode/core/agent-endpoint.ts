// The agent endpoint: a loopback websocket serving its OWN in-process ExecServer (never the
// user's Local one: no agent can resume a session it did not open) so an agent (e.g. the Codex
// CLI) can use this machine as an environment. Every upgrade must present
// `Authorization: Bearer <token>` matching a fresh random token (compared by SHA-256 digest in
// constant time; 401 otherwise). Every request of every connection passes the agent gate
// (agent-gate.ts); processes the agent starts are reported (with their live output) so the UI
// shows them, and a sandbox denial is reported with the command it stopped.
import * as crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { OutputEvent, ProcessHandle } from '../../client/api';
import type { NotificationMap, NotificationMethod, ProcessStartParams, WriteStatus } from '../../protocol/types';
import { Emitter, type Disposable, type Event } from '../../rpc/event';
import type { NotificationSink, ServerConnection, ServerOptions } from '../../server/api';
import { ExecServer } from '../../server/exec-server';
import type { ConnectableServer } from '../../transports/in-process';
import { serveConnection } from '../../transports/serve';
import { listenWebSocket, type AuthResult, type WebSocketListener } from '../../transports/websocket-server';
import { bearerToken, digestsEqual, sha256 } from '../../transports/ws-auth';
import { AgentGate, type AgentGateHost } from './agent-gate';
import { WatchBudget } from './agent-limits';
import { GatedServerConnection, type GateHooks } from './gated-connection';

export const AGENT_ENDPOINT_HOST = '127.0.0.1';

/**
 * A process an agent started, observed through its connection's notifications. It is a
 * read-only ProcessHandle (writes answer `stdinClosed`: stdin belongs to the agent), so the
 * UI shows it with the same terminal adapter as its own processes.
 */
export interface AgentProcess extends ProcessHandle {
  readonly argv: string[];
  readonly cwd: string;
  readonly tty: boolean;
}

export interface AgentEndpointOptions {
  /** 0 = a free port. */
  port: number;
  /** Settings, workspace and the question UI of the gate. */
  gate: AgentGateHost;
  /** Options of the endpoint's own ExecServer (tests shorten its timers). */
  serverOptions?: Omit<ServerOptions, 'log'>;
  /** Largest websocket frame accepted from an agent (default 64 MiB). */
  maxPayload?: number;
  onProcessStarted?(p: AgentProcess): void;
  onSandboxDenied?: GateHooks['sandboxDenied'];
  log?(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
}

const SESSION_ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
/** Session ids are the key to a session (resumeSessionId): they never reach the log. */
export function withoutSessionIds(message: string): string {
  return message.replace(SESSION_ID, '<session>');
}

/** Authorization check of one upgrade request against the expected token digest. */
export function checkBearer(req: { headers: { authorization?: string | string[] } }, expectedDigest: Buffer): AuthResult {
  const t = bearerToken(req.headers.authorization);
  if ('error' in t) return { ok: false, status: 401, message: t.error };
  return digestsEqual(sha256(t.token), expectedDigest) ? { ok: true } : { ok: false, status: 401, message: 'invalid token' };
}

/**
 * Events that arrive before anyone listens (output racing the process/start answer, or the
 * terminal not opened yet) are kept and replayed to the first listener of each event.
 */
class ReplayEmitter<T> {
  private readonly emitter = new Emitter<T>();
  private backlog: T[] | undefined = [];
  readonly event: Event<T> = (listener) => {
    const d = this.emitter.event(listener);
    const backlog = this.backlog;
    this.backlog = undefined;
    if (backlog) for (const e of backlog) listener(e);
    return d;
  };
  fire(e: T): void {
    if (this.backlog) this.backlog.push(e);
    else this.emitter.fire(e);
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

class ObservedProcess implements AgentProcess {
  private readonly output = new ReplayEmitter<OutputEvent>();
  private readonly exit = new ReplayEmitter<{ exitCode: number }>();
  private readonly close = new ReplayEmitter<{ error?: string }>();
  readonly onOutput = this.output.event;
  readonly onExit = this.exit.event;
  readonly onClose = this.close.event;
  exitCode: number | undefined;
  readonly exited: Promise<number>;
  readonly closed: Promise<void>;
  private resolveExited!: (code: number) => void;
  private resolveClosed!: () => void;
  done = false;
  /** Between the process/start request and its answer. */
  starting = true;

  constructor(
    readonly processId: string,
    readonly argv: string[],
    readonly cwd: string,
    readonly tty: boolean,
    private readonly connection: ServerConnection,
  ) {
    this.exited = new Promise((r) => (this.resolveExited = r));
    this.closed = new Promise((r) => (this.resolveClosed = r));
  }

  pushOutput(e: OutputEvent): void {
    if (!this.done) this.output.fire(e);
  }
  pushExit(code: number): void {
    if (this.done || this.exitCode !== undefined) return;
    this.exitCode = code;
    this.exit.fire({ exitCode: code });
    this.resolveExited(code);
  }
  finish(error?: string): void {
    if (this.done) return;
    this.done = true;
    this.close.fire(error === undefined ? {} : { error });
    this.resolveClosed();
  }

  async write(): Promise<WriteStatus> {
    return 'stdinClosed';
  }
  async resize(): Promise<boolean> {
    return false;
  }
  async closeStdin(): Promise<boolean> {
    return false;
  }
  async interrupt(): Promise<void> {
    await this.connection.request('process/signal', { processId: this.processId, signal: 'interrupt' });
  }
  async terminate(): Promise<boolean> {
    return (await this.connection.request('process/terminate', { processId: this.processId })).running;
  }
}

export class AgentEndpoint implements Disposable {
  private readonly connections = new Set<{ close(): void }>();

  private constructor(
    private readonly listener: WebSocketListener,
    /** The endpoint's own engine: its sessions hold agent processes only. */
    readonly server: ExecServer,
    readonly gate: AgentGate,
    /** The bearer token agents must present. */
    readonly token: string,
  ) {}

  get url(): string {
    return this.listener.url;
  }
  get port(): number {
    return this.listener.port;
  }
  get connectionCount(): number {
    return this.listener.connectionCount;
  }

  static async start(opts: AgentEndpointOptions): Promise<AgentEndpoint> {
    const token = crypto.randomBytes(32).toString('base64url');
    const digest = sha256(token);
    const rawLog = opts.log ?? (() => {});
    const log = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => rawLog(level, withoutSessionIds(message));
    const server = new ExecServer({ ...opts.serverOptions, log });
    const gate = new AgentGate({ ...opts.gate, log: (level, m) => (opts.gate.log ?? log)(level, withoutSessionIds(m)) });
    const watches = new WatchBudget();
    let endpoint: AgentEndpoint | undefined;
    let listener: WebSocketListener;
    try {
      listener = await listenWebSocket({
        host: AGENT_ENDPOINT_HOST,
        port: opts.port,
        maxPayload: opts.maxPayload,
        authenticate: (req: IncomingMessage) => checkBearer(req, digest),
        log,
        onConnection: (transport, req) => {
          const peer = `${req.socket.remoteAddress}:${req.socket.remotePort}`;
          const connectionGate = gate.connection(peer);
          const gated = gatedServer({ server, gate: connectionGate, watches, onProcessStarted: opts.onProcessStarted, onSandboxDenied: opts.onSandboxDenied });
          const served = serveConnection(gated, transport, { label: connectionGate.label, log });
          const handle = { close: () => transport.close('agent endpoint stopped') };
          endpoint?.connections.add(handle);
          void served.closed.then(() => endpoint?.connections.delete(handle));
          log('info', `${connectionGate.label} connected`);
        },
      });
    } catch (e) {
      await server.shutdown();
      throw e;
    }
    endpoint = new AgentEndpoint(listener, server, gate, token);
    return endpoint;
  }

  /** Closes every connection and ends every agent process (the engine is the endpoint's own). */
  async stop(): Promise<void> {
    for (const c of [...this.connections]) c.close();
    this.connections.clear();
    await this.listener.close();
    await this.server.shutdown();
  }

  dispose(): void {
    void this.stop();
  }
}

/**
 * A ConnectableServer whose connections are gated, and whose notification sink is tapped so
 * the processes started through it can be shown live.
 */
export function gatedServer(opts: {
  server: ConnectableServer;
  gate: import('./agent-gate').ConnectionGate;
  watches: WatchBudget;
  onProcessStarted?(p: AgentProcess): void;
  onSandboxDenied?: GateHooks['sandboxDenied'];
}): ConnectableServer {
  return {
    // serveConnection starts each request's span with it (a request's `trace` member parents it).
    telemetry: opts.server.telemetry,
    connect(sink, connectOpts) {
      const observed = new Map<string, ObservedProcess>();
      let gated: GatedServerConnection | undefined;
      const tap: NotificationSink = {
        notify<M extends NotificationMethod>(method: M, params: NotificationMap[M]): void {
          if (gated && !gated.filterNotification(method, params)) return;
          sink.notify(method, params);
          const p = params as { processId?: string };
          const o = p.processId !== undefined ? observed.get(p.processId) : undefined;
          if (!o) return;
          if (method === 'process/output') {
            const n = params as NotificationMap['process/output'];
            o.pushOutput({ seq: n.seq, stream: n.stream, data: Buffer.from(n.chunk, 'base64') });
          } else if (method === 'process/exited') {
            o.pushExit((params as NotificationMap['process/exited']).exitCode);
          } else if (method === 'process/closed') {
            observed.delete(o.processId);
            o.finish();
          }
        },
        isCongested: sink.isCongested?.bind(sink),
        onDrain: sink.onDrain?.bind(sink),
      };
      const inner = opts.server.connect(tap, connectOpts);
      gated = new GatedServerConnection(inner, opts.gate, {
        sink,
        watches: opts.watches,
        hooks: {
          // Observe before the start request: output may be notified before its answer.
          beforeProcessStart: (params: ProcessStartParams) => {
            if (!opts.onProcessStarted || typeof params.processId !== 'string' || observed.has(params.processId)) return;
            const cwd = typeof params.cwd === 'string' ? params.cwd : '';
            const argv = Array.isArray(params.argv) ? params.argv.map(String) : [];
            observed.set(params.processId, new ObservedProcess(params.processId, argv, cwd, !!params.tty, inner));
          },
          afterProcessStart: (params: ProcessStartParams, ok: boolean) => {
            const o = observed.get(params.processId);
            if (!o || !o.starting) return;
            o.starting = false;
            if (!ok) {
              observed.delete(params.processId);
              o.finish('not started');
              return;
            }
            opts.onProcessStarted?.(o);
          },
          sandboxDenied: opts.onSandboxDenied,
        },
      });
      const g = gated;
      return {
        request: (m, p) => g.request(m, p),
        requestUntyped: (m, p, call) => g.requestUntyped(m, p, call),
        notification: (m, p) => g.notification(m, p),
        close: () => {
          g.close();
          // The session is detached: this connection sees no more output of its processes.
          for (const o of observed.values()) o.finish();
          observed.clear();
        },
      };
    },
  };
}
