// The approval policy, the button titles, and the gate for command lines that other
// extensions give through the API / programmatic commands (scope "api"). Agent connections
// have their own gate (agent-gate.ts), which covers every request. Free of `vscode`: the host
// injects the settings, the workspace roots and the prompt, so it is unit-tested in plain Node.
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandLine, shown } from './display-text';
import { isInside } from '../../server/paths';

/** The one containment check (src/server/paths.ts), re-exported for this feature's modules. */
export { isInside };

/**
 * Default seconds an agent's question waits. Codex gives up on an MCP server start after 30 s;
 * answering later would start a process nobody reads. 25 s leaves margin for the round trip.
 */
export const DEFAULT_AGENT_TIMEOUT_SECONDS = 25;

export { commandLine } from './display-text';

export type ApprovalPolicy = 'alwaysAsk' | 'askOutsideWorkspace' | 'neverAsk';
export const APPROVAL_POLICIES: readonly ApprovalPolicy[] = ['alwaysAsk', 'askOutsideWorkspace', 'neverAsk'];

/** Button titles: the e2e harness clicks them by title, keep them exactly. */
export const ALLOW = 'Allow';
export const ALLOW_FOR_SESSION = 'Allow for Session';
export const DENY = 'Deny';
export type ApprovalChoice = typeof ALLOW | typeof ALLOW_FOR_SESSION | typeof DENY;
export const APPROVAL_CHOICES: readonly ApprovalChoice[] = [ALLOW, ALLOW_FOR_SESSION, DENY];

export type FsOperation = 'write' | 'create directory' | 'delete' | 'copy' | 'rename';

/** `environment`: where the paths live (default: this machine, i.e. Local). */
export type ApprovalRequest =
  | { kind: 'run'; argv: string[]; cwd: string; environment?: string }
  | { kind: 'fs'; operation: FsOperation; path: string; destination?: string; environment?: string };

export interface ApprovalHost {
  policy(): ApprovalPolicy;
  timeoutMs(): number;
  /**
   * Absolute paths of the workspace folders in an environment: file-scheme folders for this
   * machine (environment undefined or Local), exec-server://<environment>/ folders otherwise.
   */
  workspaceRoots(environment?: string): string[];
  /** Shows the question; resolves with the chosen button, or undefined if dismissed. */
  prompt(message: string, choices: readonly ApprovalChoice[]): Promise<string | undefined>;
  log?(message: string): void;
}

export interface ApprovalDecision {
  allowed: boolean;
  /** Why, for logs and for the JSON-RPC error message of a denial. */
  reason: 'policy' | 'inside workspace' | 'session' | 'user allowed' | 'user denied' | 'dismissed' | 'timed out';
}

/** Turns a wire path (file:// URI or plain path) into a normalized absolute path, or undefined. */
export function toLocalPath(p: unknown): string | undefined {
  if (typeof p !== 'string' || p === '') return undefined;
  try {
    const abs = p.startsWith('file:') ? fileURLToPath(p) : p;
    return path.isAbsolute(abs) ? path.resolve(abs) : undefined;
  } catch {
    return undefined;
  }
}



/** Who is asking, as the notification names it. */
function requesterOf(scope: string): string {
  return scope === 'agent' ? 'an agent' : 'another extension';
}

/** The notification text. The e2e harness matches "Exec Server:" — keep the wording. */
export function describeRequest(req: ApprovalRequest, scope = 'agent'): string {
  const who = requesterOf(scope);
  const where = req.environment !== undefined && req.environment !== 'Local' ? ` on ${req.environment}` : '';
  // The command line is shown whole and shell-quoted (no link shapes, invisible characters escaped).
  if (req.kind === 'run') return `Exec Server: ${who} wants to run \`${commandLine(req.argv)}\` in ${shown(req.cwd)}${where}`;
  const target = req.destination !== undefined ? `${shown(req.path)} to ${shown(req.destination)}` : shown(req.path);
  return `Exec Server: ${who} wants to ${req.operation} ${target}${where}`;
}

function pathsOf(req: ApprovalRequest): string[] {
  if (req.kind === 'run') return [req.cwd];
  return req.destination !== undefined ? [req.path, req.destination] : [req.path];
}

interface Waiter {
  scope: string;
  settle(d: ApprovalDecision): void;
}

export class ApprovalGate {
  private readonly sessionAllowed = new Set<string>();
  private readonly waiting = new Set<Waiter>();

  constructor(private readonly host: ApprovalHost) {}

  /**
   * Decides one request. `scope` names who asks ("agent", "api"): "Allow for Session" allows
   * every further request of that scope until resetSession(scope).
   */
  async check(req: ApprovalRequest, scope = 'agent'): Promise<ApprovalDecision> {
    const policy = this.host.policy();
    if (policy === 'neverAsk') return { allowed: true, reason: 'policy' };
    if (this.sessionAllowed.has(scope)) return { allowed: true, reason: 'session' };
    if (policy === 'askOutsideWorkspace') {
      const roots = this.host.workspaceRoots(req.environment);
      const paths = pathsOf(req).map(toLocalPath);
      if (paths.every((p) => p !== undefined && roots.some((r) => isInside(p, r)))) {
        return { allowed: true, reason: 'inside workspace' };
      }
    }
    return this.ask(req, scope);
  }

  /** Forgets "Allow for Session" for a scope (e.g. when the agent endpoint stops). */
  resetSession(scope: string): void {
    this.sessionAllowed.delete(scope);
  }

  isSessionAllowed(scope: string): boolean {
    return this.sessionAllowed.has(scope);
  }

  private ask(req: ApprovalRequest, scope: string): Promise<ApprovalDecision> {
    const message = describeRequest(req, scope);
    const timeoutMs = Math.max(1, this.host.timeoutMs());
    return new Promise<ApprovalDecision>((resolve) => {
      let done = false;
      const waiter: Waiter = {
        scope,
        settle: (d) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          this.waiting.delete(waiter);
          this.host.log?.(`approval: ${message} → ${d.allowed ? 'allowed' : 'denied'} (${d.reason})`);
          resolve(d);
        },
      };
      // No answer in time means no.
      const timer = setTimeout(() => waiter.settle({ allowed: false, reason: 'timed out' }), timeoutMs);
      this.waiting.add(waiter);
      this.host.prompt(message, APPROVAL_CHOICES).then(
        (choice) => {
          if (choice === ALLOW) waiter.settle({ allowed: true, reason: 'user allowed' });
          else if (choice === ALLOW_FOR_SESSION) {
            // A click after the timeout grants nothing (settle() already ran); other open
            // questions stay open and are answered one by one.
            if (!done) this.sessionAllowed.add(scope);
            waiter.settle({ allowed: true, reason: 'user allowed' });
          } else if (choice === DENY) waiter.settle({ allowed: false, reason: 'user denied' });
          else waiter.settle({ allowed: false, reason: 'dismissed' });
        },
        () => waiter.settle({ allowed: false, reason: 'dismissed' }),
      );
    });
  }
}
