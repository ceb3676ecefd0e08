// Network questions of the environments the user drives (Local, websocket, command, ssh,
// containers): a command there that runs behind the managed proxy (another extension's
// process/start with `networkProxy`) reaches for a host its launch does not cover, and the
// engine asks its client (network/policyRequest). Without an answerer that question was
// refused unseen; here it becomes the agent gate's question (Allow / Allow for Session / Deny,
// naming the environment, the host and the port), under the same rules: the user's allowlist
// and this connection's "Allow for Session" hosts answer unasked, neverAsk allows, too many open
// questions are denied at once, no answer in time is a deny (fail closed), and so is the engine
// giving up or the connection closing. Free of `vscode`: the UI is the host's `ask`.
import type { ServerRequestHandler } from '../../rpc/channel';
import { ErrorCodes, Messages, RpcError } from '../../protocol/errors';
import { commandLine, shown } from './display-text';
import { ALLOW_ANSWER, allowedByList, denyAnswer, describeNetworkQuestion, normalizeHost, type NetworkAnswer } from './network';
import { APPROVAL_CHOICES, type ApprovalPolicy } from './policy';
import { poseQuestion, type ApprovalQuestion } from './question';

/** Network questions one environment connection may have open at once; more are denied unasked. */
export const MAX_OPEN_NETWORK_QUESTIONS = 8;
/** Questions ids of these start here, apart from the agent gates' (their details tabs are named by id). */
const FIRST_ID = 100_001;
let nextId = FIRST_ID;

/** The agent gate's question shape (./question.ts), always a network one. */
export interface UserNetworkQuestion extends ApprovalQuestion {
  kind: 'network';
}

export interface NetworkQuestionHost {
  policy(): ApprovalPolicy;
  /** execServer.network.allowedDomains */
  allowedDomains(): string[];
  timeoutMs(): number;
  /** Shows the question; resolves with the chosen button title, or undefined if dismissed. */
  ask(q: UserNetworkQuestion): Promise<string | undefined>;
  /** Denied because nobody answered within `seconds`. */
  timedOut?(q: UserNetworkQuestion, seconds: number): void;
  /** A button clicked after the question was settled: nothing happened. */
  late?(q: UserNetworkQuestion, choice: string): void;
  log?(level: 'info' | 'warn', message: string): void;
}

/**
 * The answerer of one connection to `environment` (ClientOptions.onServerRequest). Its "Allow
 * for Session" hosts live as long as it does (the client: one per connect).
 */
export function environmentNetworkQuestions(environment: string, host: NetworkQuestionHost): ServerRequestHandler {
  const sessionHosts = new Set<string>();
  let open = 0;
  return async (method, params, signal) => {
    if (method !== 'network/policyRequest') throw new RpcError(ErrorCodes.MethodNotFound, Messages.methodNotFound(method));
    const p = (params ?? {}) as { processId?: unknown; request?: { protocol?: unknown; host?: unknown; port?: unknown } };
    const r = p.request ?? {};
    if (typeof r.host !== 'string' || typeof r.port !== 'number' || typeof p.processId !== 'string') return denyAnswer('not_allowed');
    const name = normalizeHost(r.host);
    if (signal.aborted) return denyAnswer('not_allowed');
    if (host.policy() === 'neverAsk' || allowedByList(host.allowedDomains(), name) || sessionHosts.has(name)) return ALLOW_ANSWER;
    if (open >= MAX_OPEN_NETWORK_QUESTIONS) return denyAnswer('too_many_questions');
    open++;
    try {
      return await pose(environment, host, { processId: p.processId, host: r.host, port: r.port, protocol: String(r.protocol) }, signal, () => sessionHosts.add(name));
    } finally {
      open--;
    }
  };
}

function pose(
  environment: string,
  host: NetworkQuestionHost,
  req: { processId: string; host: string; port: number; protocol: string },
  signal: AbortSignal,
  grantForSession: () => void,
): Promise<NetworkAnswer> {
  const id = nextId++;
  const who = environment;
  let settledResolve!: () => void;
  const q: UserNetworkQuestion = {
    id,
    connection: `${environment} (not an agent)`,
    message: describeNetworkQuestion({ host: req.host, port: req.port, protocol: req.protocol }, who),
    detail: [
      `Exec Server approval #${id}`,
      `Environment: ${shown(environment)}`,
      `Host: ${shown(req.host)}`,
      `Port: ${req.port}`,
      `Protocol: ${req.protocol}`,
      `Process: ${commandLine([req.processId])}`,
      '',
      `Allow for Session: later connections of this connection's commands to ${shown(req.host)} (any port).`,
    ].join('\n'),
    complete: true,
    choices: APPROVAL_CHOICES,
    settled: new Promise<void>((r) => (settledResolve = r)),
    kind: 'network',
  };
  host.log?.('info', `approval #${id}: ${environment} asks: network ${req.protocol} ${JSON.stringify(req.host)}:${req.port} for process ${JSON.stringify(req.processId)}`);
  const started = Date.now();
  // The engine stopped waiting (its policyDecisionTimeoutMs, the command's connection or the
  // process gone) or the connection closed: the question is settled as a deny, and said so.
  let onAbort = () => {};
  const posed = poseQuestion(q, settledResolve, host, {
    grantForSession,
    onSettled: () => signal.removeEventListener('abort', onAbort),
    onPosed: (settle) => {
      onAbort = () => {
        if (settle(false, 'the engine stopped waiting')) host.timedOut?.(q, Math.round((Date.now() - started) / 1000));
      };
      signal.addEventListener('abort', onAbort, { once: true });
    },
  });
  return posed.outcome.then(({ allowed, why }) =>
    allowed ? ALLOW_ANSWER : denyAnswer(why.startsWith('no answer') || why === 'the engine stopped waiting' ? 'timed_out' : 'user_denied'),
  );
}
