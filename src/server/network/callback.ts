// The decision callback of the managed proxy (REFERENCE §1.7): a domain the launch's policy
// leaves `not_allowed` is asked of the client as a `network/policyRequest` server → client
// request, when the launch carried policyDecisionTimeoutMs. Whatever goes wrong is a deny:
// no answer in time, an answer of the wrong shape, a JSON-RPC error, no client attached (the
// session is detached), the client gone mid-question, the process or the child's connection
// gone, or too many questions already waiting. Questions are bounded per session (the
// sandboxed command is the one who makes them: a flood of names must cost a bounded amount of
// memory and never queue), and each one's wait is bounded by its timer.
import type { Protocol } from './policy';
import type { CallbackAnswer } from './decide';

/** Questions waiting for the client at once, per session; beyond this, deny at once (as the reference). */
export const MAX_PENDING_DECISIONS = 256;
/**
 * The reference denies an unanswered question policyDecisionTimeoutMs plus about 5 s after
 * asking (measured on 0.169/0.171: 1000 → 6013 ms, 3000 → 8012 ms, 12000 → 17011 ms); so does
 * this engine, so a client that answers in the reference's window is heard here too.
 */
export const DECISION_MARGIN_MS = 5_000;
/** setTimeout's largest delay; a longer one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface PolicyRequestParams {
  processId: string;
  request: { protocol: Protocol; host: string; port: number };
}

/** Who the question goes to (the session: its attached client, if that client can be asked). */
export interface ClientAsker {
  requestClient(method: string, params: unknown, signal: AbortSignal): Promise<unknown>;
}

/** A client's `result` as the reference reads it: anything but these three shapes is invalid. */
export function parseAnswer(result: unknown): CallbackAnswer {
  if (!result || typeof result !== 'object') return { type: 'invalid' };
  const d = (result as { decision?: unknown }).decision;
  if (!d || typeof d !== 'object' || Array.isArray(d)) return { type: 'invalid' };
  const { type, reason } = d as { type?: unknown; reason?: unknown };
  if (type === 'allow') return { type: 'allow' };
  if ((type === 'deny' || type === 'ask') && typeof reason === 'string') return { type, reason };
  return { type: 'invalid' };
}

export class PolicyQuestions {
  private waiting = 0;
  /** The most that were waiting at once (for tests and the log). */
  peak = 0;

  constructor(
    private readonly client: ClientAsker,
    private readonly max = MAX_PENDING_DECISIONS,
  ) {}

  get pending(): number {
    return this.waiting;
  }

  /**
   * Asks the client about one connection; resolves (never rejects) with its validated answer
   * or `invalid` (= deny not_allowed/decider). `signal`: the connection or the process ended.
   */
  async ask(params: PolicyRequestParams, timeoutMs: number, signal?: AbortSignal): Promise<CallbackAnswer> {
    if (this.waiting >= this.max || signal?.aborted) return { type: 'invalid' };
    this.waiting++;
    this.peak = Math.max(this.peak, this.waiting);
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), Math.min(timeoutMs + DECISION_MARGIN_MS, MAX_TIMER_MS));
    const onEnd = () => stop.abort();
    signal?.addEventListener('abort', onEnd, { once: true });
    try {
      return parseAnswer(await this.client.requestClient('network/policyRequest', params, stop.signal));
    } catch {
      return { type: 'invalid' };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onEnd);
      this.waiting--;
    }
  }
}

const bySession = new WeakMap<ClientAsker, PolicyQuestions>();

/** The question bound of one session (made on first use, gone with the session). */
export function policyQuestionsOf(session: ClientAsker): PolicyQuestions {
  let q = bySession.get(session);
  if (!q) bySession.set(session, (q = new PolicyQuestions(session)));
  return q;
}
