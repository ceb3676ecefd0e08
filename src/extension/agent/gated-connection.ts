// A ServerConnection decorator for agent connections: EVERY request goes through the
// connection's gate first (agent-gate.ts), whatever the handshake state, and a refusal never
// reaches the inner connection, so nothing changes. What passes is held to the endpoint's
// bounds (agent-limits.ts): watch budget, large answers toward a client that does not read,
// HTTP body sizes. Server notifications pass through filterNotification() (HTTP bodies being
// collected, sandbox denials to report).
import { ErrorCodes, Messages, RpcError } from '../../protocol/errors';
import type { HttpBodyDeltaNotification, ParamsOf, ProcessStartParams, RequestMethod, ResultOf } from '../../protocol/types';
import type { NotificationSink, ServerConnection } from '../../server/api';
import { uriToPath } from '../../server/paths';
import type { RequestRecord } from '../../telemetry/api';
import type { ConnectionGate, Decision } from './gate';
import { AGENT_LIMITS, LargeAnswerQueue, type EndpointShares, type WatchBudget } from './limits';
import { unpinMessage } from './pin';
import { denyAnswer } from '../approval';

export interface GateHooks {
  /** An approved process/start is about to be sent to the server. */
  beforeProcessStart?(params: ProcessStartParams): void;
  /** ...and its outcome. */
  afterProcessStart?(params: ProcessStartParams, ok: boolean): void;
  /** A process of this connection exited with sandboxDenied: the sandbox blocked something. */
  sandboxDenied?(info: { connection: string; argv: string[]; cwd: string; exitCode: number }): void;
}

/** Methods whose answer can be large: run a few at a time, only while the client reads. */
const LARGE_ANSWERS = new Set(['fs/readFile', 'fs/readBlock', 'fs/readDirectory', 'fs/walk']);

interface HttpCollect {
  chunks: Buffer[];
  bytes: number;
  /** The client asked for a streamed body: deltas are forwarded (counted), not collected. */
  streamed: boolean;
  overflow: boolean;
  done(error: string | null): void;
}

export class GatedServerConnection implements ServerConnection {
  private closed = false;
  private readonly large: LargeAnswerQueue;
  /** process/read has its own queue: a long-poll holding a slot must not stall file reads. */
  private readonly reads: LargeAnswerQueue;
  private readonly watchReleases = new Map<string, () => void>();
  /** fs/watchMissing budget, released when its one fs/missingChanged arrives (the engine drops the watch then). */
  private readonly missingReleases = new Map<string, () => void>();
  private readonly http = new Map<string, HttpCollect>();
  private readonly started = new Map<string, { argv: string[]; cwd: string }>();
  /** process/start requests being decided, by process id. */
  private readonly starting = new Map<string, Promise<void>>();
  /** argv of the processes this connection started (for network questions), until closed. */
  private readonly commands = new Map<string, string[]>();

  constructor(
    private readonly inner: ServerConnection,
    readonly gate: ConnectionGate,
    private readonly opts: { sink: NotificationSink; watches: WatchBudget; shares?: EndpointShares; hooks?: GateHooks },
  ) {
    this.large = new LargeAnswerQueue(opts.sink, AGENT_LIMITS.maxLargeAnswers, opts.shares?.largeAnswers);
    // Each answer is at most the 1 MiB a process retains; more slots so long-polls of several processes do not wait on each other.
    this.reads = new LargeAnswerQueue(opts.sink, AGENT_LIMITS.maxProcessReads);
  }

  request<M extends RequestMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
    return this.requestUntyped(method, params) as Promise<ResultOf<M>>;
  }

  /** `call`: the request's telemetry record; the engine parents a started process's span with it. */
  requestUntyped(method: string, params: unknown, call?: RequestRecord): Promise<unknown> {
    // The handshake is forwarded synchronously: an `initialized` pipelined right behind it must
    // reach the engine after it (the engine ignores `initialized` before `initialize`).
    if (method === 'initialize') return this.initialize(params);
    return this.gated(method, params, call);
  }

  private async gated(method: string, params: unknown, call?: RequestRecord): Promise<unknown> {
    const startId = method === 'process/start' ? processIdOf(params) : undefined;
    // A request on a process whose start is still being decided waits for that start to be
    // forwarded (or refused), so a pipelined start + write keeps its order.
    if (startId === undefined) {
      const target = processIdOf(params);
      if (target !== undefined) await this.starting.get(target);
    } else if (!this.starting.has(startId)) {
      let forwarded!: () => void;
      this.starting.set(startId, new Promise<void>((r) => (forwarded = r)));
      const release = () => {
        this.starting.delete(startId);
        forwarded();
      };
      let approved: unknown;
      try {
        approved = (await this.gate.decide(method, params)).params;
      } catch (e) {
        release();
        throw e;
      }
      if (this.closed) {
        release();
        throw new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed);
      }
      return this.start(approved as ProcessStartParams, release, call);
    }
    return this.decideAndRun(method, params, call);
  }

  private async decideAndRun(method: string, params: unknown, call?: RequestRecord): Promise<unknown> {
    const decision = await this.gate.decide(method, params);
    if (decision.answer !== undefined) return decision.answer;
    // A large answer waits for its slot (and a reading client) before its target is pinned:
    // a pin is a descriptor held until the engine is done.
    if (LARGE_ANSWERS.has(method)) return this.large.run(() => this.pinAndRun(method, decision, true));
    return this.pinAndRun(method, decision, false, call);
  }

  private async pinAndRun(method: string, decision: Decision, queued: boolean, call?: RequestRecord): Promise<unknown> {
    const prepared = decision.prepare ? await decision.prepare() : { params: decision.params, pins: decision.pins ?? [] };
    const pins = prepared.pins;
    try {
      if (this.closed) throw new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed);
      return await this.run(method, prepared.params, queued, call);
    } catch (e) {
      // The engine names the pinned /proc/self/fd paths; the agent gets its paths back.
      if (e instanceof RpcError && pins.length > 0) throw new RpcError(e.code, unpinMessage(e.message, pins), e.data);
      throw e;
    } finally {
      await Promise.all(pins.map((p) => p.close()));
    }
  }

  private initialize(params: unknown): Promise<unknown> {
    this.gate.noteInitialize(params);
    const result = this.inner.requestUntyped('initialize', params);
    return result.then((r) => {
      const resumed = params !== null && typeof params === 'object' && typeof (params as { resumeSessionId?: unknown }).resumeSessionId === 'string';
      const sessionId = (r as { sessionId?: unknown } | undefined)?.sessionId;
      if (typeof sessionId === 'string') this.gate.sessionOpened(sessionId, resumed);
      return r;
    });
  }

  /** `queued`: a large answer that already holds its slot. */
  private async run(method: string, params: unknown, queued = false, call?: RequestRecord): Promise<unknown> {
    const p = params as Record<string, unknown>;
    switch (method) {
      case 'process/start':
        return this.start(params as ProcessStartParams, () => undefined, call);
      case 'fs/watch': {
        const release = await this.opts.watches.reserve(uriToPath(String(p.path)), p.recursive === true);
        try {
          const r = await this.inner.requestUntyped(method, params);
          this.watchReleases.get(String(p.watchId))?.();
          this.watchReleases.set(String(p.watchId), release);
          return r;
        } catch (e) {
          release();
          throw e;
        }
      }
      case 'fs/unwatch': {
        const r = await this.inner.requestUntyped(method, params);
        this.watchReleases.get(String(p.watchId))?.();
        this.watchReleases.delete(String(p.watchId));
        return r;
      }
      case 'fs/watchMissing': {
        const missing = Array.isArray(p.missing) ? p.missing.length : 1;
        const release = await this.opts.watches.reserve('', false, missing);
        try {
          const r = (await this.inner.requestUntyped(method, params)) as { watching?: boolean };
          if (r?.watching) {
            this.missingReleases.get(String(p.watchId))?.();
            this.missingReleases.set(String(p.watchId), release);
          } else release();
          return r;
        } catch (e) {
          release();
          throw e;
        }
      }
      case 'http/request':
        return this.httpRequest(p);
      case 'fs/readFile': {
        const st = await this.readFileSize(p);
        if (st !== undefined && st > AGENT_LIMITS.maxReadFileBytes) {
          throw new RpcError(ErrorCodes.InvalidRequest, `file is larger than ${AGENT_LIMITS.maxReadFileBytes} bytes: read it with fs/open + fs/readBlock`);
        }
        return queued ? this.inner.requestUntyped(method, params) : this.large.run(() => this.inner.requestUntyped(method, params));
      }
    }
    if (LARGE_ANSWERS.has(method) && !queued) return this.large.run(() => this.inner.requestUntyped(method, params));
    if (method === 'process/read') return this.reads.run(() => this.inner.requestUntyped(method, params));
    return this.inner.requestUntyped(method, params);
  }

  /**
   * The size of the file an fs/readFile names, asked of the engine rather than this machine's
   * disk: on a relayed endpoint the file is on the host. A final symlink is followed there (a
   * host whose metadata describes the link itself is asked again at the link's target).
   */
  private async readFileSize(p: Record<string, unknown>): Promise<number | undefined> {
    type Meta = { isFile?: boolean; isSymlink?: boolean; size?: number };
    const meta = (path: unknown) => this.inner.requestUntyped('fs/getMetadata', { path, sandbox: p.sandbox ?? null }).then((m) => m as Meta, () => undefined);
    let st = await meta(p.path);
    if (st?.isSymlink && !st.isFile) {
      const real = (await this.inner.requestUntyped('fs/canonicalize', { path: p.path, sandbox: p.sandbox ?? null }).catch(() => undefined)) as { path?: unknown } | undefined;
      st = real?.path ? await meta(real.path) : undefined;
    }
    return st?.isFile && typeof st.size === 'number' ? st.size : undefined;
  }

  private async start(params: ProcessStartParams, forwarded: () => void, call?: RequestRecord): Promise<unknown> {
    const id = params.processId;
    this.opts.hooks?.beforeProcessStart?.(params);
    // Known before the engine answers: its child may reach for the network at once.
    if (Array.isArray(params.argv)) this.commands.set(id, params.argv.map(String));
    try {
      const pending = this.inner.requestUntyped('process/start', params, call);
      forwarded(); // the engine has taken its place in this process's order
      const r = await pending;
      this.started.set(id, { argv: params.argv, cwd: String(params.cwd) });
      this.opts.hooks?.afterProcessStart?.(params, true);
      return r;
    } catch (e) {
      this.gate.state.processes.delete(id);
      this.gate.processGone(id);
      this.commands.delete(id);
      this.opts.hooks?.afterProcessStart?.(params, false);
      throw e;
    }
  }

  /**
   * The engine buffers a whole non-streamed body and streams without backpressure; for an agent
   * both are bounded: the body is always requested streamed and collected (or forwarded) here,
   * up to maxHttpResponseBytes.
   */
  private async httpRequest(p: Record<string, unknown>): Promise<unknown> {
    if (typeof p.bodyBase64 === 'string' && Buffer.byteLength(p.bodyBase64, 'base64') > AGENT_LIMITS.maxHttpRequestBytes) {
      throw new RpcError(ErrorCodes.InvalidRequest, `http/request body is larger than ${AGENT_LIMITS.maxHttpRequestBytes} bytes`);
    }
    const requestId = String(p.requestId);
    if (this.http.has(requestId)) throw new RpcError(ErrorCodes.InvalidRequest, `http/request ${requestId} is already in flight`);
    // Each may hold up to maxHttpResponseBytes toward the client (streamed bodies have no backpressure).
    if (this.http.size >= AGENT_LIMITS.maxHttpInFlight) {
      throw new RpcError(ErrorCodes.InvalidRequest, `at most ${AGENT_LIMITS.maxHttpInFlight} http/request bodies may be in flight per agent connection`);
    }
    const shares = this.opts.shares;
    if (shares && shares.http >= shares.limits.maxEndpointHttpInFlight) {
      throw new RpcError(ErrorCodes.InvalidRequest, `at most ${shares.limits.maxEndpointHttpInFlight} http/request bodies may be in flight per agent endpoint`);
    }
    const streamed = p.streamResponse === true;
    let finish!: (error: string | null) => void;
    const finished = new Promise<string | null>((r) => (finish = r));
    const c: HttpCollect = { chunks: [], bytes: 0, streamed, overflow: false, done: (e) => finish(e) };
    this.trackHttp(requestId, c);
    let result: { status: number; headers: unknown; bodyBase64?: string };
    try {
      result = (await this.inner.requestUntyped('http/request', { ...p, streamResponse: true })) as typeof result;
    } catch (e) {
      this.untrackHttp(requestId);
      throw e;
    }
    if (streamed) return result;
    // A declared length over the bound is refused before any of the body is read.
    if (declaredLength(result.headers) > AGENT_LIMITS.maxHttpResponseBytes) this.overflow(requestId, c);
    const error = await finished;
    if (c.overflow) throw new RpcError(ErrorCodes.InvalidRequest, `http/request response body is larger than ${AGENT_LIMITS.maxHttpResponseBytes} bytes (use streamResponse)`);
    if (error !== null) throw new RpcError(ErrorCodes.InternalError, `http/request failed while reading the body: ${error}`);
    return { ...result, bodyBase64: Buffer.concat(c.chunks).toString('base64') };
  }

  private trackHttp(requestId: string, c: HttpCollect): void {
    this.http.set(requestId, c);
    if (this.opts.shares) this.opts.shares.http++;
  }

  private untrackHttp(requestId: string): void {
    if (this.http.delete(requestId) && this.opts.shares) this.opts.shares.http--;
  }

  /** A server notification of this connection: false = do not forward it to the agent. */
  filterNotification(method: string, params: unknown): boolean {
    if (method === 'http/request/bodyDelta') {
      const n = params as HttpBodyDeltaNotification;
      const c = this.http.get(n.requestId);
      if (!c) return true;
      if (n.done) this.untrackHttp(n.requestId);
      if (c.overflow) return false; // what was in flight when the body was stopped
      const data = n.deltaBase64 ? Buffer.from(n.deltaBase64, 'base64') : Buffer.alloc(0);
      c.bytes += data.length;
      if (c.bytes > AGENT_LIMITS.maxHttpResponseBytes) {
        this.overflow(n.requestId, c, n.seq);
        return false;
      }
      if (c.streamed) {
        if (n.done) c.done(n.error ?? null);
        return true;
      }
      if (data.length > 0) c.chunks.push(data);
      if (n.done) c.done(n.error ?? null);
      return false;
    }
    if (method === 'process/exited') {
      const n = params as { processId: string; exitCode: number; sandboxDenied?: boolean };
      const s = this.started.get(n.processId);
      if (s && n.sandboxDenied) this.opts.hooks?.sandboxDenied?.({ connection: this.gate.label, argv: s.argv, cwd: s.cwd, exitCode: n.exitCode });
    }
    if (method === 'process/closed') {
      this.gate.processGone((params as { processId: string }).processId);
      this.started.delete((params as { processId: string }).processId);
      this.commands.delete((params as { processId: string }).processId);
    }
    if (method === 'fs/missingChanged') {
      const id = String((params as { watchId: unknown }).watchId);
      this.missingReleases.get(id)?.();
      this.missingReleases.delete(id);
    }
    return true;
  }

  /**
   * A body passed the bound: the engine stops reading it (without that, the rest of an endless
   * body would still stream through this process only to be dropped), what was collected is
   * released, and a streaming client is told its body ended in error.
   */
  private overflow(requestId: string, c: HttpCollect, seq?: number): void {
    if (c.overflow) return;
    c.overflow = true;
    c.chunks = [];
    this.inner.cancelHttpRequest?.(requestId);
    c.done(null);
    if (c.streamed) {
      this.opts.sink.notify('http/request/bodyDelta', {
        requestId,
        seq: seq ?? 1,
        deltaBase64: '',
        done: true,
        error: `response body is larger than ${AGENT_LIMITS.maxHttpResponseBytes} bytes`,
      });
    }
  }

  notification(method: string, params: unknown): boolean {
    return this.inner.notification(method, params);
  }

  /**
   * A request of the engine to this connection's client (server → client). The one there is,
   * network/policyRequest, is answered here by the user (the gate), never by the agent: a
   * command must not be let onto the network by the agent that started it. Anything else, or
   * a question about a process this connection did not start, is refused.
   */
  async engineRequest(method: string, params: unknown): Promise<unknown> {
    if (method !== 'network/policyRequest') throw new RpcError(ErrorCodes.MethodNotFound, Messages.methodNotFound(method));
    const p = (params ?? {}) as { processId?: unknown; request?: { protocol?: unknown; host?: unknown; port?: unknown } };
    const processId = typeof p.processId === 'string' ? p.processId : '';
    const r = p.request ?? {};
    if (!this.gate.state.processes.has(processId) || typeof r.host !== 'string' || typeof r.port !== 'number') return denyAnswer('not_allowed');
    return this.gate.askNetwork({ host: r.host, port: r.port, protocol: String(r.protocol), argv: this.commands.get(processId) });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.gate.close();
    this.large.close();
    this.reads.close();
    for (const r of this.watchReleases.values()) r();
    this.watchReleases.clear();
    for (const r of this.missingReleases.values()) r();
    this.missingReleases.clear();
    for (const [id, c] of [...this.http]) {
      c.done(Messages.connectionClosed);
      this.untrackHttp(id);
    }
    this.inner.close();
  }
}

function processIdOf(params: unknown): string | undefined {
  if (!params || typeof params !== 'object') return undefined;
  const id = (params as { processId?: unknown }).processId;
  return typeof id === 'string' ? id : typeof id === 'number' ? String(id) : undefined;
}

/** The response's Content-Length, or -1 when absent or not a number. */
function declaredLength(headers: unknown): number {
  if (!Array.isArray(headers)) return -1;
  const h = headers.find((x: { name?: unknown }) => typeof x?.name === 'string' && x.name.toLowerCase() === 'content-length') as { value?: unknown } | undefined;
  const n = Number(h?.value);
  return Number.isFinite(n) ? n : -1;
}
