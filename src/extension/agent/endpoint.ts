// The agent endpoint: a loopback websocket serving its OWN in-process ExecServer (never the
// user's Local one: no agent can resume a session it did not open) so an agent (e.g. the Codex
// CLI) can use this machine as an environment. Every upgrade must present
// `Authorization: Bearer <token>` matching its token — given (the extension's, kept in
// SecretStorage so it survives reloads) or fresh and random — (compared by SHA-256 digest in
// constant time; 401 otherwise). Every request of every connection passes the agent gate
// (agent-gate.ts); processes the agent starts are reported (with their live output) so the UI
// shows them, and a sandbox denial is reported with the command it stopped.
import * as crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { OutputEvent, ProcessHandle } from '../../client/api';
import { processEventOf } from '../../client/process-events';
import { ClientProcess, type ProcessEvent } from '../../client/process-handle';
import type { NotificationMap, NotificationMethod, ProcessStartParams, WriteStatus } from '../../protocol/types';
import { ErrorCodes } from '../../protocol/errors';
import type { Disposable, Event } from '../../rpc/event';
import type { MessageTransport } from '../../rpc/transport';
import type { NotificationSink, ServerConnection, ServerOptions } from '../../server/api';
import { ExecServer } from '../../server/exec-server';
import type { ConnectableServer } from '../../transports/in-process';
import { serveConnection } from '../../transports/serve';
import { listenWebSocket, type AuthResult, type WebSocketListener } from '../../transports/websocket-server';
import { bearerToken, digestsEqual, sha256 } from '../../transports/ws-auth';
import { AuditLog } from './audit';
import { AgentGate, type AgentGateHost } from './gate';
import { AGENT_LIMITS, EndpointShares, WatchBudget } from './limits';
import { GatedServerConnection, type GateHooks } from './gated-connection';
import { hostPaths } from './host-paths';
import { relayServer, type RelayTarget } from './relay';

export const AGENT_ENDPOINT_HOST = '127.0.0.1';

/**
 * A process an agent started, followed through its connection's notifications. It is a
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
  /**
   * The bearer token (default: a fresh random one). The extension passes the one it keeps in
   * SecretStorage, so an agent's configuration survives a window reload; it must be at least
   * MIN_AGENT_TOKEN_LENGTH characters of base64url.
   */
  token?: string;
  /** Settings, workspace and the question UI of the gate. */
  gate: AgentGateHost;
  /** Options of the endpoint's own ExecServer (tests shorten its timers). */
  serverOptions?: Omit<ServerOptions, 'log'>;
  /** Largest websocket frame accepted from an agent (default 64 MiB). */
  maxPayload?: number;
  /**
   * A remote environment's endpoint: agent connections are relayed to its host (relay.ts)
   * instead of this endpoint's own engine, behind the same gate (which then judges paths on
   * the host: AgentGateHost.onHost).
   */
  relay?: RelayTarget;
  /** Where the audit log is kept across reloads (audit.ts; undefined: in memory only). */
  auditFile?: string;
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
 * An agent's process as the UI sees it: the client's own process handle (ClientProcess: seq
 * order, duplicates dropped, events held until delivered), fed with the notifications of the
 * agent's connection. Read-only: writes answer `stdinClosed` (stdin belongs to the agent).
 * Events are held until the first subscription (the terminal opens after process/start was
 * answered, and output may precede the answer); they are then delivered on the next
 * macrotask, so the subscriber's other subscriptions made in the same turn see them too.
 */
class WatchedProcess implements AgentProcess {
  private readonly handle: ClientProcess;
  private released = false;
  readonly onOutput: Event<OutputEvent>;
  readonly onExit: Event<{ exitCode: number }>;
  readonly onClose: Event<{ error?: string }>;
  /** Between the process/start request and its answer. */
  starting = true;

  constructor(
    readonly processId: string,
    readonly argv: string[],
    readonly cwd: string,
    readonly tty: boolean,
    connection: ServerConnection,
  ) {
    this.handle = new ClientProcess(processId, {
      write: async () => 'stdinClosed',
      resize: async () => false,
      closeStdin: async () => false,
      interrupt: async (id) => void (await connection.request('process/signal', { processId: id, signal: 'interrupt' })),
      terminate: async (id) => (await connection.request('process/terminate', { processId: id })).running,
    });
    const releasing =
      <T>(event: Event<T>): Event<T> =>
      (listener) => {
        const d = event(listener);
        if (!this.released) {
          this.released = true;
          this.handle.release();
        }
        return d;
      };
    this.onOutput = releasing(this.handle.onOutput);
    this.onExit = releasing(this.handle.onExit);
    this.onClose = releasing(this.handle.onClose);
  }

  get exitCode(): number | undefined {
    return this.handle.exitCode;
  }
  get exited(): Promise<number> {
    return this.handle.exited;
  }
  get closed(): Promise<void> {
    return this.handle.closed;
  }
  deliver(event: ProcessEvent): void {
    this.handle.deliver(event);
  }
  /** Nothing more will be seen (the agent's connection closed, or the start failed). */
  end(error?: string): void {
    if (error !== undefined) this.handle.fail(error);
    else this.handle.deliver({ kind: 'closed', seq: this.handle.lastSeq + 1 });
  }
  write(): Promise<WriteStatus> {
    return this.handle.write('');
  }
  resize(rows: number, cols: number): Promise<boolean> {
    return this.handle.resize(rows, cols);
  }
  closeStdin(): Promise<boolean> {
    return this.handle.closeStdin();
  }
  interrupt(): Promise<void> {
    return this.handle.interrupt();
  }
  terminate(): Promise<boolean> {
    return this.handle.terminate();
  }
}

/** A fresh endpoint token: 32 random bytes, base64url (43 characters). */
export function newAgentToken(): string {
  return crypto.randomBytes(32).toString('base64url');
}

/** A given token must be as strong as a generated one: 32 bytes of base64url. */
export const MIN_AGENT_TOKEN_LENGTH = 43;
const TOKEN_SHAPE = /^[A-Za-z0-9_-]+$/;

export class AgentEndpoint implements Disposable {
  private readonly connections = new Set<{ close(): void }>();

  private constructor(
    private readonly listener: WebSocketListener,
    /** The endpoint's own engine: its sessions hold agent processes only. */
    readonly server: ExecServer,
    readonly gate: AgentGate,
    /** The bearer token agents must present. */
    readonly token: string,
    private readonly hostPaths?: { close(): void },
    /** Every decision of the gate (audit.ts), for the user to open and export. */
    readonly audit: AuditLog = new AuditLog('Local'),
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
    if (opts.token !== undefined && (opts.token.length < MIN_AGENT_TOKEN_LENGTH || !TOKEN_SHAPE.test(opts.token))) {
      throw new Error(`the agent endpoint token must be at least ${MIN_AGENT_TOKEN_LENGTH} base64url characters`);
    }
    const token = opts.token ?? newAgentToken();
    const digest = sha256(token);
    const rawLog = opts.log ?? (() => {});
    const log = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => rawLog(level, withoutSessionIds(message));
    // The engine runs in the extension host: what its processes hold is the user's memory.
    const server = new ExecServer({
      maxHeldProcesses: AGENT_LIMITS.maxHeldProcesses,
      maxOutputWindowBytes: AGENT_LIMITS.maxOutputWindowBytes,
      maxReadFileBytes: AGENT_LIMITS.maxReadFileBytes,
      ...opts.serverOptions,
      log,
    });
    const onHost = opts.relay ? hostPaths(opts.relay) : undefined;
    const audit = new AuditLog(opts.relay?.name ?? 'Local', undefined, opts.auditFile, (m) => log('warn', m));
    const gate = new AgentGate({ ...opts.gate, onHost, audit: (r) => audit.add(r), log: (level, m) => (opts.gate.log ?? log)(level, withoutSessionIds(m)) });
    const watches = new WatchBudget();
    const shares = new EndpointShares();
    let open = 0;
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
          if (open >= AGENT_LIMITS.maxConnections) return refuseConnection(transport, peer, log);
          open++;
          transport.onClose(() => open--);
          const connectionGate = gate.connection(peer);
          const target: ConnectableServer = opts.relay ? { telemetry: server.telemetry, connect: relayServer(opts.relay, log, (why) => transport.close(why)).connect } : server;
          const gated = gatedServer({ server: target, gate: connectionGate, watches, shares, onProcessStarted: opts.onProcessStarted, onSandboxDenied: opts.onSandboxDenied });
          const served = serveConnection(gated, transport, { label: connectionGate.label, log });
          const handle = { close: () => transport.close('agent endpoint stopped') };
          endpoint?.connections.add(handle);
          void served.closed.then(() => endpoint?.connections.delete(handle));
          log('info', `${connectionGate.label} connected`);
        },
      });
    } catch (e) {
      onHost?.close();
      await server.shutdown();
      throw e;
    }
    // The gate's host link is opened now, not at the first question (ssh + the host's node take seconds).
    void onHost?.sandboxes();
    endpoint = new AgentEndpoint(listener, server, gate, token, onHost, audit);
    return endpoint;
  }

  /** Closes every connection and ends every agent process (the engine is the endpoint's own). */
  async stop(): Promise<void> {
    for (const c of [...this.connections]) c.close();
    this.connections.clear();
    await this.listener.close();
    this.hostPaths?.close();
    await this.server.shutdown();
  }

  dispose(): void {
    void this.stop();
  }
}

/**
 * A connection over the endpoint's cap: its first request (or, after 2 s, nobody) gets a JSON-RPC
 * error saying why, then the websocket is closed (1013: try again later). Nothing reaches the gate.
 */
function refuseConnection(transport: MessageTransport, peer: string, log: (level: 'warn', m: string) => void): void {
  const message = `too many agent connections: at most ${AGENT_LIMITS.maxConnections} per agent endpoint`;
  log('warn', `agent connection from ${peer} refused: ${message}`);
  const end = () => transport.close(message);
  const timer = setTimeout(() => {
    transport.send({ jsonrpc: '2.0', id: null, error: { code: ErrorCodes.InvalidRequest, message } });
    end();
  }, 2_000);
  const sub = transport.onMessage((m) => {
    const id = m !== null && typeof m === 'object' && 'id' in m ? (m as { id: unknown }).id : undefined;
    if (id === undefined) return; // a notification: no answer
    clearTimeout(timer);
    sub.dispose();
    transport.send({ jsonrpc: '2.0', id, error: { code: ErrorCodes.InvalidRequest, message } });
    end();
  });
  transport.onClose(() => {
    clearTimeout(timer);
    sub.dispose();
  });
}

/**
 * A ConnectableServer whose connections are gated, and whose notification sink is tapped so
 * the processes started through it can be shown live.
 */
export function gatedServer(opts: {
  server: ConnectableServer;
  gate: import('./gate').ConnectionGate;
  watches: WatchBudget;
  shares?: EndpointShares;
  onProcessStarted?(p: AgentProcess): void;
  onSandboxDenied?: GateHooks['sandboxDenied'];
}): ConnectableServer {
  return {
    // serveConnection starts each request's span with it (a request's `trace` member parents it).
    telemetry: opts.server.telemetry,
    connect(sink, connectOpts) {
      const observed = new Map<string, WatchedProcess>();
      let gated: GatedServerConnection | undefined;
      const tap: NotificationSink = {
        notify<M extends NotificationMethod>(method: M, params: NotificationMap[M]): void {
          if (gated && !gated.filterNotification(method, params)) return;
          sink.notify(method, params);
          const e = processEventOf(method, params);
          const o = e && observed.get(e.processId);
          if (!e || !o) return;
          o.deliver(e.event);
          if (e.event.kind === 'closed') observed.delete(e.processId);
        },
        isCongested: sink.isCongested?.bind(sink),
        onDrain: sink.onDrain?.bind(sink),
        // The engine's questions (network/policyRequest) are the gate's to answer, not the agent's.
        request: (method, params) => (gated ? gated.engineRequest(method, params) : Promise.reject(new Error('connection not ready'))),
      };
      const inner = opts.server.connect(tap, connectOpts);
      gated = new GatedServerConnection(inner, opts.gate, {
        sink,
        watches: opts.watches,
        shares: opts.shares,
        hooks: {
          // Observe before the start request: output may be notified before its answer.
          beforeProcessStart: (params: ProcessStartParams) => {
            if (!opts.onProcessStarted || typeof params.processId !== 'string' || observed.has(params.processId)) return;
            const cwd = typeof params.cwd === 'string' ? params.cwd : '';
            const argv = Array.isArray(params.argv) ? params.argv.map(String) : [];
            observed.set(params.processId, new WatchedProcess(params.processId, argv, cwd, !!params.tty, inner));
          },
          afterProcessStart: (params: ProcessStartParams, ok: boolean) => {
            const o = observed.get(params.processId);
            if (!o || !o.starting) return;
            o.starting = false;
            if (!ok) {
              observed.delete(params.processId);
              o.end('not started');
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
          for (const o of observed.values()) o.end();
          observed.clear();
        },
      };
    },
  };
}
