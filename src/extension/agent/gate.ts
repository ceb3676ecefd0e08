// The agent endpoint's approval gate. One AgentGate per endpoint; one ConnectionGate per agent
// connection, consulted for EVERY request whatever the handshake state (agent-request.ts
// decides). Questions are answered one by one: each has its own timer, a grant never answers
// another question, a click after the timeout or after the agent left does nothing, and
// "Allow for Session" grants live in that connection's state only. The log gets the full
// request of every question, minus bulk data and anything secret (session ids, tokens).
import os from 'node:os';
import { ErrorCodes, Messages, RpcError } from '../../protocol/errors';
import { ApprovedState, approvalGrants, ConnectionState } from './grants';
import type { Pinned } from './pin';
import { realPathOf } from './paths';
import { classify, type AgentContext, type Described } from './request';
import { ALLOW, ALLOW_FOR_SESSION, APPROVAL_CHOICES, DENY, type ApprovalChoice, type ApprovalPolicy } from '../approval';

/** Questions one connection may have open at once; more are refused without asking. */
export const MAX_PENDING_QUESTIONS = 8;
/** ...and all connections of one endpoint together (many connections must not flood the screen). */
export const MAX_PENDING_QUESTIONS_PER_ENDPOINT = 32;

export interface AgentQuestion {
  /** Unique per gate, for the details view and the log. */
  id: number;
  /** "agent connection #3 (127.0.0.1:50312, client codex-environment)". */
  connection: string;
  /** One line for the notification; agent text in it is shell-quoted (never a link). */
  message: string;
  /** Everything about the request, one fact a line. */
  detail: string;
  /** True when `message` already shows everything `detail` holds. */
  complete: boolean;
  choices: readonly ApprovalChoice[];
  /** Settles when the answer no longer matters (answered, timed out, agent gone). */
  settled: Promise<void>;
}

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
  /** A button was clicked after the question was settled (timed out / agent gone): nothing happened. */
  late?(q: AgentQuestion, choice: string): void;
  log?(level: 'debug' | 'info' | 'warn', message: string): void;
  /**
   * A remote environment's endpoint (relay.ts): `workspaceRoots` are paths on that host and
   * every path fact is resolved there (this machine's filesystem says nothing about the host's).
   */
  onHost?: HostPaths;
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

  constructor(readonly host: AgentGateHost) {}

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

  async context(state: ConnectionState): Promise<AgentContext> {
    const onHost = this.host.onHost;
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
      };
    }
    const real = async (ps: string[]) => (await Promise.all(ps.map((p) => realPathOf(p)))).filter((p): p is string => p !== undefined);
    const tmp = [...new Set(['/tmp', os.tmpdir()])];
    return {
      policy: this.host.policy(),
      workspaceRoots: await real(this.host.workspaceRoots()),
      tmpRoots: await real(tmp),
      protectedRoots: await real(this.host.protectedRoots?.() ?? []),
      sandboxAll: this.host.sandboxAll(),
      homeDir: this.host.homeDir?.() ?? os.homedir(),
      state,
    };
  }
}

interface Waiter {
  settle(allowed: boolean, why: string): void;
}

export class ConnectionGate {
  state = new ConnectionState();
  clientName: string | undefined;
  private closed = false;
  private readonly waiters = new Set<Waiter>();

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

  /** Decides one request; throws an RpcError when it must not run. */
  async decide(method: string, params: unknown): Promise<Decision> {
    if (this.closed) throw new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed);
    const startId = method === 'process/start' ? processIdOf(params) : undefined;
    const verdict = await classify(method, params, await this.gate.context(this.state));
    if (verdict.kind === 'deny') {
      this.host.log?.('info', `approval: ${this.label}: refused ${redactForLog(method, params)}: ${verdict.error.message}`);
      throw verdict.error;
    }
    if (verdict.kind === 'allow') {
      this.host.log?.('debug', `approval: ${this.label}: ${verdict.why}: ${redactForLog(method, verdict.params)}`);
      if (startId !== undefined) this.state.processes.add(startId);
      return { params: verdict.params, pins: verdict.pins, answer: verdict.answer, prepare: verdict.prepare };
    }
    if (this.state.pending >= MAX_PENDING_QUESTIONS || this.gate.pending >= MAX_PENDING_QUESTIONS_PER_ENDPOINT) {
      throw new RpcError(ErrorCodes.InvalidRequest, `permission denied: ${method}: too many questions are already waiting for the user`);
    }
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
      return { params: again.params };
    }
    if (again.kind === 'ask') {
      this.host.log?.('info', `approval: ${this.label}: refused after the answer, the request changed: ${redactForLog(method, params)}`);
      throw new RpcError(ErrorCodes.InvalidRequest, `permission denied: ${method}: what it would run or change changed while the question was open; ask again`);
    }
    if (startId !== undefined) this.state.processes.add(startId);
    return { params: again.params, pins: again.pins, answer: again.answer, prepare: again.prepare };
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
      message: `Exec Server: ${who} wants to ${what.summary}`,
      detail: [`Exec Server approval #${id}`, `Requested by: ${who}`, ...what.details, '', what.sessionScope].join('\n'),
      complete: what.complete,
      choices: APPROVAL_CHOICES,
      settled: new Promise<void>((r) => (settledResolve = r)),
    };
    this.host.log?.('info', `approval #${id}: ${who} asks: ${logged}`);
    state.pending++;
    this.gate.pending++;
    return new Promise((resolve) => {
      let done = false;
      const waiter: Waiter = {
        settle: (allowed, why) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          state.pending--;
          this.gate.pending--;
          this.waiters.delete(waiter);
          this.host.log?.('info', `approval #${id}: ${allowed ? 'allowed' : 'denied'} (${why})`);
          settledResolve();
          resolve({ allowed, why });
        },
      };
      const timeoutMs = Math.max(1, this.host.timeoutMs());
      // No answer in time means no; the agent has usually given up by then.
      const timer = setTimeout(() => waiter.settle(false, `no answer within ${Math.round(timeoutMs / 1000)} s`), timeoutMs);
      this.waiters.add(waiter);
      let answer: Promise<string | undefined>;
      try {
        answer = Promise.resolve(this.host.ask(q));
      } catch {
        answer = Promise.resolve(undefined);
      }
      answer.then(
        (choice) => {
          if (done) {
            // Too late: the request was already refused (timeout, agent gone). Nothing changes.
            if (choice !== undefined) {
              this.host.log?.('info', `approval #${id}: "${choice}" clicked after the question was settled; ignored`);
              this.host.late?.(q, choice);
            }
            return;
          }
          if (choice === ALLOW) waiter.settle(true, 'user allowed');
          else if (choice === ALLOW_FOR_SESSION) {
            // Only this connection's state, only what this request needed; other open questions stay open.
            state.grant(needs);
            waiter.settle(true, 'user allowed for this session');
          } else if (choice === DENY) waiter.settle(false, 'the VS Code user denied it');
          else waiter.settle(false, 'the question was dismissed');
        },
        () => waiter.settle(false, 'the question was dismissed'),
      );
    });
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
  }
}

function processIdOf(params: unknown): string | undefined {
  if (!params || typeof params !== 'object') return undefined;
  const id = (params as { processId?: unknown }).processId;
  return typeof id === 'string' ? id : typeof id === 'number' ? String(id) : undefined;
}
