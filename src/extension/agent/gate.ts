// The agent endpoint's approval gate. One AgentGate per endpoint; one ConnectionGate per agent
// connection, consulted for EVERY request whatever the handshake state (agent-request.ts
// decides). Questions are answered one by one: each has its own timer, a grant never answers
// another question, a click after the timeout or after the agent left does nothing, and
// "Allow for Session" grants live in that connection's state only. The log gets the full
// request of every question, minus bulk data and anything secret (session ids, tokens).
import os from 'node:os';
import { ErrorCodes, Messages, RpcError } from '../../protocol/errors';
import { ApprovedState, approvalGrants, ConnectionState } from './grants';
import { pinUnsupported, type Pinned } from './pin';
import { watchChanges } from '../../server/sandbox/plant-guard';
import { sandboxPrivateDirPath } from '../../server/sandbox/support';
import { realPathOf } from './paths';
import { classify, needsOnlyState, type AgentContext, type Described } from './request';
import { ALLOW_ANSWER, allowedByList, APPROVAL_CHOICES, commandLine, countedRuns, denyAnswer, describeNetworkQuestion, poseQuestion, shown, type ApprovalPolicy, type ApprovalQuestion, type NetworkAnswer, type NetworkQuestion } from '../approval';

/** Questions one connection may have open at once; more are refused without asking. */
export const MAX_PENDING_QUESTIONS = 8;
/** ...and all connections of one endpoint together (many connections must not flood the screen). */
export const MAX_PENDING_QUESTIONS_PER_ENDPOINT = 32;

/** A question of the gate (the shape its UI shows: ../approval/question.ts). */
export type AgentQuestion = ApprovalQuestion;

export interface AgentGateHost {
  policy(): ApprovalPolicy;
  /** execServer.approval.sandboxAgentCommands */
  sandboxAll(): boolean;
  timeoutMs(): number;
  /** Workspace folders on this machine (resolved to real paths by the gate). */
  workspaceRoots(): string[];
  /** VS Code's own settings/extensions directories (always ask; hidden from sandboxed commands). */
  protectedRoots?(): string[];
  /** The user's home directory (default: os.homedir()). */
  homeDir?(): string;
  /** Shows the question; resolves with the chosen button title, or undefined if dismissed. */
  ask(q: AgentQuestion): Promise<string | undefined>;
  /** execServer.network.allowedDomains: hosts a sandboxed command may reach without a question. */
  allowedDomains?(): string[];
  /** A question was denied because nobody answered within `seconds`. */
  timedOut?(q: AgentQuestion, seconds: number): void;
  /** A button was clicked after the question was settled (timed out / agent gone): nothing happened. */
  late?(q: AgentQuestion, choice: string): void;
  log?(level: 'debug' | 'info' | 'warn', message: string): void;
  /** Where this extension host runs (default process.platform): decides whether paths can be pinned (pin.ts). */
  platform?: NodeJS.Platform;
  /**
   * A remote environment's endpoint (relay.ts): `workspaceRoots` are paths on that host and
   * every path fact is resolved there (this machine's filesystem says nothing about the host's).
   */
  onHost?: HostPaths;
  /** Every decision, for the endpoint's audit log (audit.ts). */
  audit?(record: { connection: string; client?: string; method: string; request: string; outcome: 'allowed' | 'refused'; by: 'rule' | 'user'; why: string }): void;
}

/** Path facts of a remote host, as its own server reports them. */
export interface HostPaths {
  /** The environment's name, in questions. */
  name: string;
  /** The real path on the host (fs/canonicalize there); undefined when it cannot say in time (= outside). */
  realPath(p: string): Promise<string | undefined>;
  /** The host's server enforces managed sandboxes (else every command asks). */
  sandboxes(): Promise<boolean>;
}

const SECRET_NAME = /KEY|SECRET|TOKEN|PASSW|AUTH|CREDENTIAL|COOKIE|SESSION/i;
const BULK = new Set(['dataBase64', 'bodyBase64', 'chunk', 'deltaBase64']);

/** The request as logged: everything, except bulk bytes (sizes instead) and secret values. */
export function redactForLog(method: string, params: unknown): string {
  const walk = (v: unknown, key: string | undefined, parentKey: string | undefined): unknown => {
    if (typeof v === 'string') {
      if (key !== undefined && BULK.has(key)) return `<${Buffer.byteLength(v, 'base64')} bytes>`;
      if (key === 'resumeSessionId' || key === 'sessionId') return '<redacted>';
      if ((parentKey === 'env' || parentKey === 'set') && key !== undefined && SECRET_NAME.test(key)) return '<redacted>';
      return v;
    }
    if (Array.isArray(v)) {
      if (key === 'headers') {
        return v.map((h) => (h && typeof h === 'object' && SECRET_NAME.test(String((h as { name?: unknown }).name)) ? { ...h, value: '<redacted>' } : h));
      }
      return v.map((x) => walk(x, undefined, key));
    }
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k, key)]));
    return v;
  };
  return `${method} ${JSON.stringify(walk(params, undefined, undefined))}`;
}

export interface Decision {
  /** The params to send on (a sandbox may have been added, the environment tightened, a directory pinned). */
  params: unknown;
  /** Directories pinned for the engine (agent-pin.ts): close them once it answered. */
  pins?: Pinned[];
  /** Answered by the gate itself: the engine is not asked. */
  answer?: unknown;
  /** Pins the target just before the engine runs (see Verdict); replaces `params`. */
  prepare?: () => Promise<{ params: unknown; pins: Pinned[] }>;
}

export class AgentGate {
  private nextQuestion = 1;
  private nextConnection = 1;
  /** Open questions of all connections. */
  pending = 0;
  /** Session id → the state of the connection that opened it (a resume brings it back). Never logged. */
  private readonly sessions = new Map<string, ConnectionState>();

  constructor(readonly host: AgentGateHost) {
    // Said once where the endpoint starts, and again in every refusal (confine.ts).
    const unsupported = host.onHost ? undefined : pinUnsupported(host.platform);
    if (unsupported) host.log?.('warn', `approval: ${unsupported}: file requests the gate would hold to their folders (read, list, open, write, create, delete, copy, move) are refused unless execServer.approval.policy is neverAsk`);
  }

  connection(peer: string): ConnectionGate {
    const to = this.host.onHost ? ` → ${JSON.stringify(this.host.onHost.name)}` : '';
    return new ConnectionGate(this, `agent connection #${this.nextConnection++} (${peer})${to}`);
  }

  /** @internal */ questionId(): number {
    return this.nextQuestion++;
  }
  /** @internal */ rememberSession(id: string, state: ConnectionState): void {
    this.sessions.set(id, state);
    if (this.sessions.size > 1024) this.sessions.delete(this.sessions.keys().next().value as string);
  }
  /** @internal */ sessionState(id: string): ConnectionState | undefined {
    return this.sessions.get(id);
  }

  /**
   * `paths` false: the request needs only the connection's state (needsOnlyState). On a remote
   * endpoint the path facts are host round trips (fs/canonicalize over the gate's link), which
   * a process/read or process/ack must not wait for.
   */
  async context(state: ConnectionState, paths = true): Promise<AgentContext> {
    const onHost = this.host.onHost;
    if (onHost && !paths) {
      return { policy: this.host.policy(), workspaceRoots: [], tmpRoots: [], protectedRoots: [], sandboxAll: this.host.sandboxAll(), homeDir: this.host.homeDir?.() ?? '/', state, onHost: { ...onHost, sandboxes: false } };
    }
    if (onHost) {
      const real = async (ps: string[]) => (await Promise.all(ps.map((p) => onHost.realPath(p)))).filter((p): p is string => p !== undefined);
      return {
        policy: this.host.policy(),
        workspaceRoots: await real(this.host.workspaceRoots()),
        tmpRoots: await real(['/tmp']),
        protectedRoots: [],
        sandboxAll: this.host.sandboxAll(),
        homeDir: this.host.homeDir?.() ?? '/',
        state,
        onHost: { ...onHost, sandboxes: await onHost.sandboxes() },
        // A relayed proxied launch is rewritten as a local one (start.ts): the host's server asks.
        network: { allowedDomains: this.host.allowedDomains?.() ?? [], questionTimeoutMs: Math.max(1, this.host.timeoutMs()) },
      };
    }
    const real = async (ps: string[]) => (await Promise.all(ps.map((p) => realPathOf(p)))).filter((p): p is string => p !== undefined);
    const tmp = [...new Set(['/tmp', os.tmpdir()])];
    return {
      policy: this.host.policy(),
      workspaceRoots: await real(this.host.workspaceRoots()),
      tmpRoots: await real(tmp),
      // The engine's own sandbox files live in the temp dir: a session grant on it must not
      // cover the seccomp programs every later sandbox loads (always asked, never granted).
      protectedRoots: [...(await real(this.host.protectedRoots?.() ?? [])), sandboxPrivateDirPath(), ...(await real([sandboxPrivateDirPath()]))],
      sandboxAll: this.host.sandboxAll(),
      homeDir: this.host.homeDir?.() ?? os.homedir(),
      state,
      platform: this.host.platform ?? process.platform,
      network: { allowedDomains: this.host.allowedDomains?.() ?? [], questionTimeoutMs: Math.max(1, this.host.timeoutMs()) },
    };
  }
}

interface Waiter {
  settle(allowed: boolean, why: string): unknown;
}

/** fs/* methods that change files, and the params naming what they change. */
const WRITES: Record<string, readonly string[]> = {
  'fs/writeFile': ['path'],
  'fs/createDirectory': ['path'],
  'fs/remove': ['path'],
  'fs/copy': ['destinationPath'],
  'fs/rename': ['sourcePath', 'destinationPath'],
};

export class ConnectionGate {
  state = new ConnectionState();
  clientName: string | undefined;
  private closed = false;
  private readonly waiters = new Set<Waiter>();
  /** Unasked sandboxed processes whose writable roots are watched until they close (ChangeLog). */
  private readonly watched = new Map<string, () => void>();

  constructor(
    private readonly gate: AgentGate,
    readonly label: string,
  ) {}

  private get host(): AgentGateHost {
    return this.gate.host;
  }

  /** The handshake: always forwarded (the engine checks it); the client name labels questions. */
  noteInitialize(params: unknown): void {
    const name = params && typeof params === 'object' ? (params as { clientName?: unknown }).clientName : undefined;
    if (typeof name === 'string') this.clientName = name;
  }

  /** Decides one request; throws an RpcError when it must not run. Every outcome is audited. */
  async decide(method: string, params: unknown): Promise<Decision> {
    const audit = (outcome: 'allowed' | 'refused', by: 'rule' | 'user', why: string) =>
      this.host.audit?.({ connection: this.label, client: this.clientName, method, request: redactForLog(method, params), outcome, by, why });
    let asked = false;
    try {
      const d = await this.decideUnaudited(method, params, () => (asked = true));
      audit('allowed', asked ? 'user' : 'rule', d.why);
      return d.decision;
    } catch (e) {
      audit('refused', asked ? 'user' : 'rule', e instanceof Error ? e.message : String(e));
      throw e;
    }
  }

  private async decideUnaudited(method: string, params: unknown, asking: () => void): Promise<{ decision: Decision; why: string }> {
    if (this.closed) throw new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed);
    const startId = method === 'process/start' ? processIdOf(params) : undefined;
    const verdict = await classify(method, params, await this.gate.context(this.state, !needsOnlyState(method)));
    if (verdict.kind === 'deny') {
      this.host.log?.('info', `approval: ${this.label}: refused ${redactForLog(method, params)}: ${verdict.error.message}`);
      throw verdict.error;
    }
    if (verdict.kind === 'allow') {
      this.host.log?.('debug', `approval: ${this.label}: ${verdict.why}: ${redactForLog(method, verdict.params)}`);
      if (startId !== undefined) this.state.processes.add(startId);
      this.noteChanges(method, params, startId, verdict.changes);
      return { why: verdict.why, decision: { params: verdict.params, pins: verdict.pins, answer: verdict.answer, prepare: verdict.prepare } };
    }
    if (this.state.pending >= MAX_PENDING_QUESTIONS || this.gate.pending >= MAX_PENDING_QUESTIONS_PER_ENDPOINT) {
      throw new RpcError(ErrorCodes.InvalidRequest, `permission denied: ${method}: too many questions are already waiting for the user`);
    }
    asking();
    const { allowed, why } = await this.ask(method, verdict.params, verdict.what, verdict.needs);
    if (!allowed) throw new RpcError(ErrorCodes.InvalidRequest, `permission denied: ${method} was not approved (${why})`);
    if (this.closed) throw new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed);
    // The answer is for what the question showed, seconds ago. Judged again now: a program
    // rewritten or a folder swapped for a symlink meanwhile needs something else (refused), and
    // the paths are held to where the question said while the engine acts.
    const again = await classify(method, params, await this.gate.context(new ApprovedState(this.state, verdict.needs, await approvalGrants(verdict.needs))));
    if (again.kind === 'deny') throw again.error;
    // Still asking for exactly what was answered (e.g. a workspace change with its own wider
    // sandbox, whose question has no path needs): the answer covers it.
    if (again.kind === 'ask' && JSON.stringify(again.needs) === JSON.stringify(verdict.needs) && again.what.summary === verdict.what.summary) {
      if (startId !== undefined) this.state.processes.add(startId);
      return { why, decision: { params: again.params } };
    }
    if (again.kind === 'ask') {
      this.host.log?.('info', `approval: ${this.label}: refused after the answer, the request changed: ${redactForLog(method, params)}`);
      throw new RpcError(ErrorCodes.InvalidRequest, `permission denied: ${method}: what it would run or change changed while the question was open; ask again`);
    }
    if (startId !== undefined) this.state.processes.add(startId);
    return { why, decision: { params: again.params, pins: again.pins, answer: again.answer, prepare: again.prepare } };
  }

  /**
   * An action allowed without a question that may change files: an fs/* write is noted now
   * (before it runs: a run grant must not cover what follows it); a sandboxed process's
   * writable roots are watched from before it is spawned until it closes.
   */
  private noteChanges(method: string, params: unknown, startId: string | undefined, changes: { roots?: readonly string[] } | undefined): void {
    const keys = WRITES[method];
    if (keys && params && typeof params === 'object') {
      for (const k of keys) {
        const p = (params as Record<string, unknown>)[k];
        if (typeof p === 'string') this.state.changes.note(p);
      }
    }
    if (startId !== undefined && changes?.roots && changes.roots.length > 0) {
      this.watched.get(startId)?.();
      this.watched.set(startId, watchChanges(changes.roots, (p) => this.state.changes.note(p)));
    }
  }

  /** The process closed (or never started): its changes are no longer watched. */
  processGone(processId: string): void {
    this.watched.get(processId)?.();
    this.watched.delete(processId);
  }

  private ask(method: string, params: unknown, what: Described, needs: Parameters<ConnectionState['grant']>[0]): Promise<{ allowed: boolean; why: string }> {
    const id = this.gate.questionId();
    const who = `${this.label}${this.clientName ? `, client ${JSON.stringify(this.clientName)}` : ''}`;
    const logged = redactForLog(method, params);
    const state = this.state;
    let settledResolve!: () => void;
    const q: AgentQuestion = {
      id,
      connection: who,
      message: `Exec Server: ${who} wants to ${countedRuns(what.summary)}`,
      detail: [`Exec Server approval #${id}`, `Requested by: ${who}`, ...what.details.map(countedRuns), '', what.sessionScope].join('\n'),
      complete: what.complete,
      choices: APPROVAL_CHOICES,
      settled: new Promise<void>((r) => (settledResolve = r)),
    };
    this.host.log?.('info', `approval #${id}: ${who} asks: ${logged}`);
    const since = state.changes.count;
    return this.pose(q, settledResolve, () => state.grant(needs, since));
  }

  /**
   * A sandboxed command of this connection wants to reach a host its launch does not cover
   * (network/policyRequest from the engine's managed proxy). The user's allowlist and this
   * connection's "Allow for Session" hosts answer without asking; neverAsk allows; otherwise
   * the user is asked, under the same bounds as every other question (too many open: denied at
   * once). Resolves with the answer for the engine, never rejects.
   */
  async askNetwork(request: NetworkQuestion): Promise<NetworkAnswer> {
    const host = request.host.toLowerCase();
    if (this.closed) return denyAnswer('agent_disconnected');
    if (this.host.policy() === 'neverAsk') return ALLOW_ANSWER;
    if (allowedByList(this.host.allowedDomains?.() ?? [], host)) return ALLOW_ANSWER;
    if (this.state.networkHosts.has(host)) return ALLOW_ANSWER;
    if (this.state.pending >= MAX_PENDING_QUESTIONS || this.gate.pending >= MAX_PENDING_QUESTIONS_PER_ENDPOINT) return denyAnswer('too_many_questions');
    const id = this.gate.questionId();
    const who = `${this.label}${this.clientName ? `, client ${JSON.stringify(this.clientName)}` : ''}`;
    let settledResolve!: () => void;
    const message = describeNetworkQuestion(request, who);
    const q: AgentQuestion = {
      id,
      connection: who,
      message,
      detail: [
        `Exec Server approval #${id}`,
        `Requested by: ${who}`,
        `Host: ${shown(request.host)}`,
        `Port: ${request.port}`,
        `Protocol: ${request.protocol}`,
        `Command: ${request.argv ? commandLine(request.argv) : '(unknown)'}`,
        '',
        `Allow for Session: later connections of this agent connection's commands to ${shown(request.host)} (any port).`,
      ].join('\n'),
      complete: true,
      choices: APPROVAL_CHOICES,
      settled: new Promise<void>((r) => (settledResolve = r)),
      kind: 'network',
    };
    this.host.log?.('info', `approval #${id}: ${who} asks: network ${request.protocol} ${JSON.stringify(request.host)}:${request.port} for ${JSON.stringify(request.argv ?? [])}`);
    const state = this.state;
    const { allowed, why } = await this.pose(q, settledResolve, () => state.networkHosts.add(host));
    if (allowed) return ALLOW_ANSWER;
    return denyAnswer(why.startsWith('no answer') ? 'timed_out' : why === 'the agent disconnected' ? 'agent_disconnected' : 'user_denied');
  }

  /** Shows `q` and waits for the answer, its timer or the agent leaving. */
  private pose(q: AgentQuestion, settledResolve: () => void, grantForSession: () => void): Promise<{ allowed: boolean; why: string }> {
    const state = this.state;
    state.pending++;
    this.gate.pending++;
    const waiter: Waiter = { settle: () => undefined };
    return poseQuestion(q, settledResolve, this.host, {
      grantForSession,
      onSettled: () => {
        state.pending--;
        this.gate.pending--;
        this.waiters.delete(waiter);
      },
      // Registered before the question shows, so the agent leaving settles it whenever it happens.
      onPosed: (settle) => {
        waiter.settle = settle;
        this.waiters.add(waiter);
      },
    }).outcome;
  }

  /** After a successful initialize: remember the session (new) or take back its state (resumed). */
  sessionOpened(sessionId: string, resumed: boolean): void {
    if (resumed) {
      const prior = this.gate.sessionState(sessionId);
      // The same agent (it knew the unguessable id) gets its own grants and processes back.
      if (prior) this.state = prior;
    }
    this.gate.rememberSession(sessionId, this.state);
  }

  /** The agent left: its open questions are refused (a later click does nothing). */
  close(): void {
    this.closed = true;
    for (const w of [...this.waiters]) w.settle(false, 'the agent disconnected');
    for (const stop of this.watched.values()) stop();
    this.watched.clear();
  }
}

function processIdOf(params: unknown): string | undefined {
  if (!params || typeof params !== 'object') return undefined;
  const id = (params as { processId?: unknown }).processId;
  return typeof id === 'string' ? id : typeof id === 'number' ? String(id) : undefined;
}
