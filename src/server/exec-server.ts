// The stateful exec-server engine: a registry of sessions that outlive their connections.
// Transports call connect() once per client connection; the session (and its processes)
// survives a detach for `detachedSessionTtlMs`, so a client can resume it.
import { ErrorCodes, Messages, RpcError, invalidRequest } from '../protocol/errors';
import type { ConnectOptions, NotificationSink, ServerConnection, ServerOptions } from './api';
import { Connection } from './connection';
import type { ConnectionHost } from './context';
import { DEFAULT_MAX_IN_FLIGHT } from './in-flight';
import { MAX_READ_FILE_BYTES } from './fs/fs-methods';
import type { PidNamespaceMode } from './sandbox/bwrap';
import { sandboxSupport } from './sandbox/support';
import { ProcessBudget, Session, type SessionLimits } from './session';
import { NOOP_SERVER_TELEMETRY, type ServerTelemetry } from '../telemetry/api';
import { sessionLogTag } from '../protocol/log-tag';

export const DEFAULTS = {
  detachedSessionTtlMs: 30_000,
  exitedProcessRetentionMs: 30_000,
  maxRetainedBytesPerProcess: 1024 * 1024,
  maxOpenHandles: 128,
  maxProcessesPerSession: 1024,
  maxInFlightPerConnection: DEFAULT_MAX_IN_FLIGHT,
} as const;

/** How long shutdown() waits for killed children to be reaped. */
const SHUTDOWN_WAIT_MS = 3_000;

export class ExecServer implements ConnectionHost {
  private readonly opts: { -readonly [K in keyof typeof DEFAULTS]: number } & Pick<SessionLimits, 'budget'> & { maxReadFileBytes: number };
  private readonly sessions = new Map<string, Session>();
  private readonly connections = new Set<Connection>();
  /** Every session ever created that may still have children (for shutdown). */
  private readonly endedWaits = new Set<Promise<void>>();
  private shuttingDown = false;
  /** Spans and metrics (the no-op unless ServerOptions.telemetry is given). */
  readonly telemetry: ServerTelemetry;
  readonly sandboxPidNamespace: PidNamespaceMode;
  readonly sandboxTransparentTcp: boolean;

  constructor(private readonly options: ServerOptions = {}) {
    this.telemetry = options.telemetry ?? NOOP_SERVER_TELEMETRY;
    this.sandboxPidNamespace = options.linuxSandboxPidNamespace ?? 'isolate';
    this.sandboxTransparentTcp = options.linuxSandboxTransparentTcp ?? false;
    this.opts = {
      detachedSessionTtlMs: options.detachedSessionTtlMs ?? DEFAULTS.detachedSessionTtlMs,
      exitedProcessRetentionMs: options.exitedProcessRetentionMs ?? DEFAULTS.exitedProcessRetentionMs,
      maxRetainedBytesPerProcess: options.maxRetainedBytesPerProcess ?? DEFAULTS.maxRetainedBytesPerProcess,
      maxOpenHandles: options.maxOpenHandles ?? DEFAULTS.maxOpenHandles,
      maxProcessesPerSession: options.maxProcessesPerSession ?? DEFAULTS.maxProcessesPerSession,
      maxInFlightPerConnection: options.maxInFlightPerConnection ?? DEFAULTS.maxInFlightPerConnection,
      maxReadFileBytes: options.maxReadFileBytes ?? MAX_READ_FILE_BYTES,
      budget:
        options.maxHeldProcesses !== undefined || options.maxOutputWindowBytes !== undefined
          ? new ProcessBudget(options.maxHeldProcesses, options.maxOutputWindowBytes)
          : undefined,
    };
    // Probed once (cached per bwrap path), started now without waiting (the probe spawns a
    // tiny sandbox; the VS Code extension host's activation and the CLI's startup must not
    // block on it) and logged when settled, so a host that cannot sandbox says so at startup
    // rather than at the first managed process/start (which then gets -32600).
    void sandboxSupport().then((s) =>
      this.log(s.ok ? 'info' : 'warn', s.ok ? `managed sandboxes: enforced with ${s.tools.bwrap}` : `managed sandboxes: unavailable: ${s.reason}`),
    );
  }

  log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void {
    this.options.log?.(level, message);
  }

  connect(sink: NotificationSink, opts: ConnectOptions = {}): ServerConnection {
    const conn = new Connection(this, sink, opts, this.opts.maxOpenHandles, this.opts.maxInFlightPerConnection, this.opts.maxReadFileBytes);
    if (this.shuttingDown) conn.close();
    else {
      this.connections.add(conn);
      this.telemetry.connectionOpened();
    }
    return conn;
  }

  /** A connection ended (initialized or not). */
  connectionClosed(conn: Connection): void {
    if (this.connections.delete(conn)) this.telemetry.connectionClosed();
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** initialize: a new session, or resume a detached one. */
  openSession(owner: Connection, sink: NotificationSink, resumeSessionId: string | undefined, flowControl = false): Session {
    if (this.shuttingDown) throw invalidRequest('server is shutting down');
    if (resumeSessionId !== undefined) {
      const s = this.sessions.get(resumeSessionId);
      if (!s || s.ended) throw invalidRequest(Messages.unknownSession(resumeSessionId));
      if (s.attachedTo) throw new RpcError(ErrorCodes.SessionAttached, Messages.sessionAttached(resumeSessionId));
      s.attach(owner, sink, flowControl);
      this.log('info', `${owner.label}: resumed ${sessionLogTag(s.id)}`);
      return s;
    }
    const s = new Session(this.opts, this.telemetry);
    this.sessions.set(s.id, s);
    this.telemetry.sessionOpened();
    s.attach(owner, sink, flowControl);
    this.log('info', `${owner.label}: new ${sessionLogTag(s.id)}`);
    return s;
  }

  /** The connection ended: detach (keep processes for the TTL) or end the session (stdio). */
  releaseSession(owner: Connection, s: Session, terminate: boolean): void {
    if (s.attachedTo !== owner) return; // already taken over or ended
    if (terminate) {
      this.endSession(s);
      return;
    }
    s.detach(this.opts.detachedSessionTtlMs, () => {
      this.log('info', `${sessionLogTag(s.id)} expired after ${this.opts.detachedSessionTtlMs} ms detached`);
      this.endSession(s);
    });
  }

  private endSession(s: Session): void {
    if (this.sessions.delete(s.id)) this.telemetry.sessionEnded();
    const waits = s.end();
    const all = Promise.all(waits).then(() => undefined);
    this.endedWaits.add(all);
    void all.then(() => this.endedWaits.delete(all));
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** What the bounded processes hold now (ServerOptions.maxHeldProcesses); undefined without a bound. */
  get processBudget(): { processes: number; windowBytes: number } | undefined {
    return this.opts.budget?.inUse;
  }

  /** Terminates every process of every session, closes connections, clears timers. */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    for (const c of [...this.connections]) c.close();
    for (const s of [...this.sessions.values()]) this.endSession(s);
    const all = Promise.all([...this.endedWaits]);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, SHUTDOWN_WAIT_MS)))]);
    clearTimeout(timer);
  }
}
