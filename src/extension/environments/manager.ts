// Live connections to environments: lazy connect (concurrent callers share one attempt),
// state tracking for the status bar and tree, and automatic reconnection after the client
// gives up its own session-resume recovery. Free of `vscode`: the connector is injected, so
// tests drive it with real in-process and websocket servers.
import type { ClientState, ExecClient } from '../../client/api';
import type { ClientOptions } from '../../client/client';
import { Emitter, type Disposable } from '../../rpc/event';
import type { EnvironmentConfig, EnvironmentStore } from './store';
import { sessionLogTag } from '../../protocol/log-tag';
import { classifyConnectError, type ConnectFailure } from './connect-failure';

export type EnvironmentState = 'disconnected' | 'connecting' | 'connected' | 'reconnecting' | 'failed';

export interface Connector {
  /** `resumeSessionId`: resume that session (websocket environments after a window reload). */
  connect(config: EnvironmentConfig, token: string | undefined, opts?: { resumeSessionId?: string }): Promise<ExecClient>;
}

/**
 * Another way to reach a command environment than running its command, for the connector: a
 * feature that knows one (Connect to Host's server that outlives the window, ssh/persist.ts)
 * answers a client, or undefined when it does not apply to `config`. `stdio` runs the command
 * (the fallback): as saved, or with the route's `args` and `env` (ssh with the user's login
 * questions, ssh/askpass.ts).
 */
export type CommandRoute = (
  config: EnvironmentConfig,
  stdio: (launch?: { args: string[]; env?: NodeJS.ProcessEnv }) => Promise<ExecClient>,
  opts: Omit<ClientOptions, 'reconnect'>,
) => Promise<ExecClient> | undefined;

export { classifyConnectError, type ConnectFailure };

/** A connect failure with a kind the UI turns into a clear message. */
export class EnvironmentConnectError extends Error {
  constructor(
    readonly environment: string,
    readonly kind: ConnectFailure,
    detail: string,
  ) {
    super(describeFailure(environment, kind, detail));
    this.name = 'EnvironmentConnectError';
  }
}

function describeFailure(env: string, kind: ConnectFailure, detail: string): string {
  switch (kind) {
    case 'unknown environment':
      return `unknown environment "${env}"`;
    case 'unauthorized':
      return `${env} rejected the connection token (${detail}); set the right token with "Exec Server: Add Environment"`;
    case 'unreachable':
      return `cannot reach ${env}: ${detail}`;
    default:
      return `cannot connect to ${env}: ${detail}`;
  }
}

interface Entry {
  client?: ExecClient;
  pending?: Promise<ExecClient>;
  state: EnvironmentState;
  lastError?: string;
  subs: Disposable[];
  reconnectTimer?: ReturnType<typeof setTimeout>;
  reconnectAttempt: number;
  /** Set when we closed it ourselves: no reconnection. */
  closing: boolean;
}

export interface EnvironmentManagerOptions {
  /** Delays of the automatic reconnect attempts after a lost connection (default 1, 2, 5, 10, 30 s). */
  reconnectDelaysMs?: number[];
  log?(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
}

export class EnvironmentManager implements Disposable {
  private readonly entries = new Map<string, Entry>();
  private readonly changeEmitter = new Emitter<{ environment: string; state: EnvironmentState }>();
  private readonly reconnectEmitter = new Emitter<{ environment: string; client: ExecClient }>();
  private readonly lostEmitter = new Emitter<{ environment: string; reason: string }>();
  private readonly gaveUpEmitter = new Emitter<{ environment: string; reason: string }>();
  readonly onDidChangeState = this.changeEmitter.event;
  /** A lost environment is connected again (a new session: old processes are gone). */
  readonly onDidReconnect = this.reconnectEmitter.event;
  /** A connection dropped and the client could not resume its session. */
  readonly onDidLoseConnection = this.lostEmitter.event;
  /** Every automatic reconnect attempt after a lost connection failed: the environment stays "failed". */
  readonly onDidGiveUp = this.gaveUpEmitter.event;
  private disposed = false;

  constructor(
    private readonly store: EnvironmentStore,
    private readonly connector: Connector,
    private readonly options: EnvironmentManagerOptions = {},
  ) {}

  state(name: string): EnvironmentState {
    return this.entries.get(name)?.state ?? 'disconnected';
  }

  lastError(name: string): string | undefined {
    return this.entries.get(name)?.lastError;
  }

  /** The live client, if connected (no connect attempt). */
  connectedClient(name: string): ExecClient | undefined {
    const e = this.entries.get(name);
    return e?.state === 'connected' || e?.state === 'reconnecting' ? e.client : undefined;
  }

  /**
   * Connects on first use; concurrent callers share the attempt. Rejects with EnvironmentConnectError.
   * `resumeSessionId` (a window reload re-attaching terminals): the first connection resumes that
   * session, or starts a new one when the server no longer knows it; an existing connection is kept.
   */
  getClient(name: string, opts: { resumeSessionId?: string } = {}): Promise<ExecClient> {
    if (this.disposed) return Promise.reject(new Error('the extension is shutting down'));
    const e = this.entry(name);
    if (e.client && (e.state === 'connected' || e.state === 'reconnecting')) return Promise.resolve(e.client);
    if (e.pending) return e.pending;
    return this.startConnect(name, e, false, opts.resumeSessionId);
  }

  async disconnect(name: string): Promise<boolean> {
    const e = this.entries.get(name);
    if (!e) return false;
    e.closing = true;
    if (e.reconnectTimer) clearTimeout(e.reconnectTimer);
    e.reconnectTimer = undefined;
    const client = e.client ?? (await e.pending?.catch(() => undefined));
    for (const s of e.subs) s.dispose();
    e.subs = [];
    e.client = undefined;
    e.pending = undefined;
    this.entries.delete(name);
    this.changeEmitter.fire({ environment: name, state: 'disconnected' });
    if (client) await client.close().catch(() => undefined);
    return !!client;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await Promise.all([...this.entries.keys()].map((n) => this.disconnect(n)));
    this.changeEmitter.dispose();
    this.reconnectEmitter.dispose();
    this.lostEmitter.dispose();
    this.gaveUpEmitter.dispose();
  }

  private entry(name: string): Entry {
    let e = this.entries.get(name);
    if (!e) {
      e = { state: 'disconnected', subs: [], reconnectAttempt: 0, closing: false };
      this.entries.set(name, e);
    }
    return e;
  }

  private setState(name: string, e: Entry, state: EnvironmentState): void {
    if (e.state === state) return;
    e.state = state;
    if (this.entries.get(name) === e) this.changeEmitter.fire({ environment: name, state });
  }

  private startConnect(name: string, e: Entry, reconnecting = false, resumeSessionId?: string): Promise<ExecClient> {
    const config = this.store.get(name);
    if (!config) return Promise.reject(new EnvironmentConnectError(name, 'unknown environment', ''));
    e.closing = false;
    this.setState(name, e, reconnecting ? 'reconnecting' : 'connecting');
    const attempt = (async () => {
      const token = config.kind === 'websocket' ? await this.store.token(name) : undefined;
      let client: ExecClient;
      try {
        try {
          client = await this.connector.connect(config, token, resumeSessionId ? { resumeSessionId } : undefined);
        } catch (err) {
          // The session ended (TTL, server restart): a new one, as a plain connect would.
          if (!resumeSessionId || !/unknown session/i.test(err instanceof Error ? err.message : String(err))) throw err;
          this.options.log?.('info', `${name}: the previous session is gone; starting a new one`);
          client = await this.connector.connect(config, token);
        }
      } catch (err) {
        const detail = err instanceof Error ? err.message : String(err);
        throw new EnvironmentConnectError(name, classifyConnectError(err), detail);
      }
      if (e.closing || this.entries.get(name) !== e) {
        await client.close().catch(() => undefined);
        throw new Error(`${name} was disconnected while connecting`);
      }
      return client;
    })();
    e.pending = attempt;
    attempt.then(
      (client) => {
        e.pending = undefined;
        e.client = client;
        e.lastError = undefined;
        e.reconnectAttempt = 0;
        e.subs.push(client.onDidChangeState((s) => this.onClientState(name, e, client, s)));
        e.subs.push(client.onLog((l) => this.options.log?.(l.level, `${name}: ${l.message}`)));
        this.setState(name, e, 'connected');
        this.options.log?.('info', `${name}: connected (${client.sessionId ? sessionLogTag(client.sessionId) : 'no session'})`);
        if (reconnecting) this.reconnectEmitter.fire({ environment: name, client });
      },
      (err) => {
        e.pending = undefined;
        e.lastError = err instanceof Error ? err.message : String(err);
        this.options.log?.('warn', e.lastError);
        if (this.entries.get(name) !== e) return;
        // While attempts remain the environment is "reconnecting", never "failed" under a "reconnecting…" toast.
        if (reconnecting && this.scheduleReconnect(name, e)) return;
        this.setState(name, e, 'failed');
        if (reconnecting) this.gaveUpEmitter.fire({ environment: name, reason: e.lastError });
      },
    );
    return attempt;
  }

  private onClientState(name: string, e: Entry, client: ExecClient, s: ClientState): void {
    if (e.client !== client || e.closing) return;
    if (s === 'recovering') this.setState(name, e, 'reconnecting');
    else if (s === 'connected') this.setState(name, e, 'connected');
    else if (s === 'failed' || s === 'closed') {
      // The client could not resume its session: start over with a new one.
      for (const sub of e.subs) sub.dispose();
      e.subs = [];
      e.client = undefined;
      // Not "(failed)": the view says "reconnecting" now, and the toast must not contradict it.
      const reason = `${name}: connection lost and the session could not be resumed`;
      this.options.log?.('warn', reason);
      e.lastError = reason;
      if (this.scheduleReconnect(name, e)) this.setState(name, e, 'reconnecting');
      else this.setState(name, e, 'failed');
      this.lostEmitter.fire({ environment: name, reason });
      // Not at once: this runs inside the client's own state change, before it failed its
      // processes with the real reason ("session lost: …"); closing now would say "client closed".
      setTimeout(() => void client.close().catch(() => undefined), 0);
    }
  }

  /** Schedules the next automatic attempt; false when none is left (or we are closing). */
  private scheduleReconnect(name: string, e: Entry): boolean {
    const delays = this.options.reconnectDelaysMs ?? [1000, 2000, 5000, 10_000, 30_000];
    if (this.disposed || e.closing || e.reconnectAttempt >= delays.length) return false;
    const delay = delays[e.reconnectAttempt++];
    e.reconnectTimer = setTimeout(() => {
      e.reconnectTimer = undefined;
      if (this.disposed || e.closing || e.client || e.pending) return;
      this.startConnect(name, e, true).catch(() => undefined);
    }, delay);
    return true;
  }
}
