// One posed question and its answer, for both places that ask the user about a request they
// cannot decide alone: the agent gate (src/extension/agent/gate.ts) and the network questions
// of the environments the user drives (./network-questions.ts). The rules are one: the first of
// answer, timeout or an outside settle (the agent left, the engine stopped waiting) decides; a
// later click changes nothing and is reported; "Allow for Session" grants only when it decides.
// Free of `vscode`: showing the question is the asker's `ask`.
import { ALLOW, ALLOW_FOR_SESSION, DENY, type ApprovalChoice } from './policy';

/** What a question shows (the notification, its details tab, the log). */
export interface ApprovalQuestion {
  /** Unique per asker, for the details view and the log. */
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
  /** Settles when the answer no longer matters (answered, timed out, asker gone). */
  settled: Promise<void>;
  /** A network question (a host to reach) rather than a request to run or change something. */
  kind?: 'network';
}

export interface QuestionAsker<Q extends ApprovalQuestion> {
  timeoutMs(): number;
  /** Shows the question; resolves with the chosen button title, or undefined if dismissed. */
  ask(q: Q): Promise<string | undefined>;
  /** Denied because nobody answered within `seconds`. */
  timedOut?(q: Q, seconds: number): void;
  /** A button clicked after the question was settled: nothing happened. */
  late?(q: Q, choice: string): void;
  log?(level: 'info', message: string): void;
}

export interface PosedQuestion {
  /** Resolves once, with the decision and why; never rejects. */
  outcome: Promise<{ allowed: boolean; why: string }>;
  /** Decides from outside (the agent left, the engine stopped waiting); false if already decided. */
  settle(allowed: boolean, why: string): boolean;
}

export interface QuestionHooks {
  /** "Allow for Session" decided it: grant what this request needed. */
  grantForSession(): void;
  /** Runs once, when the outcome is decided (before the outcome resolves). */
  onSettled?(): void;
  /** Runs before the question is shown: register `settle` where an outside end can reach it. */
  onPosed?(settle: PosedQuestion['settle']): void;
}

/**
 * Shows `q` and waits for the answer or its timer (no answer in time is a deny: fail closed).
 * `settledResolve` resolves `q.settled`.
 */
export function poseQuestion<Q extends ApprovalQuestion>(q: Q, settledResolve: () => void, asker: QuestionAsker<Q>, hooks: QuestionHooks): PosedQuestion {
  let done = false;
  let resolveOutcome!: (o: { allowed: boolean; why: string }) => void;
  const outcome = new Promise<{ allowed: boolean; why: string }>((r) => (resolveOutcome = r));
  const settle = (allowed: boolean, why: string): boolean => {
    if (done) return false;
    done = true;
    clearTimeout(timer);
    hooks.onSettled?.();
    asker.log?.('info', `approval #${q.id}: ${allowed ? 'allowed' : 'denied'} (${why})`);
    settledResolve();
    resolveOutcome({ allowed, why });
    return true;
  };
  const timeoutMs = Math.max(1, asker.timeoutMs());
  const timer = setTimeout(() => {
    settle(false, `no answer within ${Math.round(timeoutMs / 1000)} s`);
    asker.timedOut?.(q, Math.round(timeoutMs / 1000));
  }, timeoutMs);
  hooks.onPosed?.(settle);
  let answer: Promise<string | undefined>;
  try {
    answer = Promise.resolve(asker.ask(q));
  } catch {
    answer = Promise.resolve(undefined);
  }
  answer.then(
    (choice) => {
      if (done) {
        // Too late: the request was already refused (timeout, asker gone). Nothing changes.
        if (choice !== undefined) {
          asker.log?.('info', `approval #${q.id}: "${choice}" clicked after the question was settled; ignored`);
          asker.late?.(q, choice);
        }
        return;
      }
      if (choice === ALLOW) settle(true, 'user allowed');
      else if (choice === ALLOW_FOR_SESSION) {
        // Only what this request needed; other open questions stay open.
        hooks.grantForSession();
        settle(true, 'user allowed for this session');
      } else if (choice === DENY) settle(false, 'the VS Code user denied it');
      else settle(false, 'the question was dismissed');
    },
    () => settle(false, 'the question was dismissed'),
  );
  return { outcome, settle };
}
