// The agent endpoint: a loopback websocket serving the extension's in-process ExecServer so
// an agent (e.g. the Codex CLI) can use this machine as an environment. Every upgrade must
// present `Authorization: Bearer <token>` matching a fresh random token (compared by SHA-256
// digest in constant time; 401 otherwise). Each connection is wrapped in the approval gate;
// processes the agent starts are reported (with their live output) so the UI shows them.
import * as crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { OutputEvent, ProcessHandle } from '../../client/api';
import type { NotificationMap, NotificationMethod, ProcessStartParams, WriteStatus } from '../../protocol/types';
import { Emitter, type Disposable, type Event } from '../../rpc/event';
import type { NotificationSink, ServerConnection } from '../../server/api';
import type { ConnectableServer } from '../../transports/in-process';
import { serveConnection } from '../../transports/serve';
import { listenWebSocket, type AuthResult, type WebSocketListener } from '../../transports/websocket-server';
import { bearerToken, digestsEqual, sha256 } from '../../transports/ws-auth';
import type { ApprovalDecision, ApprovalRequest } from './approval';
import { GatedServerConnection } from './gated-connection';

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
  server: ConnectableServer;
  /** 0 = a free port. */
  port: number;
  decide(req: ApprovalRequest): Promise<ApprovalDecision>;
  onProcessStarted?(p: AgentProcess): void;
  log?(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
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
    const log = opts.log ?? (() => {});
    let endpoint: AgentEndpoint | undefined;
    const listener = await listenWebSocket({
      host: AGENT_ENDPOINT_HOST,
      port: opts.port,
      authenticate: (req: IncomingMessage) => checkBearer(req, digest),
      log,
      onConnection: (transport, req) => {
        const gated = gatedServer(opts);
        const served = serveConnection(gated, transport, { label: `agent ${req.socket.remoteAddress}:${req.socket.remotePort}`, log });
        const handle = { close: () => transport.close('agent endpoint stopped') };
        endpoint?.connections.add(handle);
        void served.closed.then(() => endpoint?.connections.delete(handle));
        log('info', `agent connected from ${req.socket.remoteAddress}:${req.socket.remotePort}`);
      },
    });
    endpoint = new AgentEndpoint(listener, token);
    return endpoint;
  }

  async stop(): Promise<void> {
    for (const c of [...this.connections]) c.close();
    this.connections.clear();
    await this.listener.close();
  }

  dispose(): void {
    void this.stop();
  }
}

/**
 * A ConnectableServer whose connections are gated, and whose notification sink is tapped so
 * the processes started through it can be shown live.
 */
export function gatedServer(opts: Pick<AgentEndpointOptions, 'server' | 'decide' | 'onProcessStarted'>): ConnectableServer {
  return {
    connect(sink, connectOpts) {
      const observed = new Map<string, ObservedProcess>();
      const tap: NotificationSink = {
        notify<M extends NotificationMethod>(method: M, params: NotificationMap[M]): void {
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
      const gated = new GatedServerConnection(inner, opts.decide, {
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
      });
      return {
        request: (m, p) => gated.request(m, p),
        requestUntyped: (m, p) => gated.requestUntyped(m, p),
        notification: (m, p) => gated.notification(m, p),
        close: () => {
          gated.close();
          // The session is detached: this connection sees no more output of its processes.
          for (const o of observed.values()) o.finish();
          observed.clear();
        },
      };
    },
  };
}
