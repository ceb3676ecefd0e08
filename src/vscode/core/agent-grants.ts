// What one agent connection has been allowed "for the session", and which processes it
// started. Grants are narrow on purpose: a program (argv[0] + cwd + the same environment
// settings), a path prefix for reads or for writes, an HTTP origin. They live in one
// connection's state only (a resumed session brings its own state back, see AgentGate);
// nothing here is shared between connections.
import { isInside } from './agent-paths';

export type Grant =
  | { type: 'run'; program: string; cwd: string; envKey: string }
  | { type: 'read' | 'write'; prefix: string }
  | { type: 'http'; origin: string };

/** What one request needs allowed. `grantable: false` (protected paths) always asks. */
export type Need =
  | { type: 'run'; program: string; cwd: string; envKey: string; grantable: boolean }
  | { type: 'read' | 'write'; path: string; prefix: string; grantable: boolean }
  | { type: 'http'; origin: string; grantable: boolean };

export function covers(g: Grant, n: Need): boolean {
  if (!n.grantable) return false;
  if (g.type === 'run' && n.type === 'run') return g.program === n.program && g.cwd === n.cwd && g.envKey === n.envKey;
  if (g.type === 'http' && n.type === 'http') return g.origin === n.origin;
  if ((g.type === 'read' || g.type === 'write') && (n.type === 'read' || n.type === 'write')) {
    // A write grant also covers reads below the same prefix; a read grant never covers writes.
    if (g.type === 'read' && n.type === 'write') return false;
    return isInside(n.path, g.prefix);
  }
  return false;
}

export function grantOf(n: Need): Grant {
  if (n.type === 'run') return { type: 'run', program: n.program, cwd: n.cwd, envKey: n.envKey };
  if (n.type === 'http') return { type: 'http', origin: n.origin };
  return { type: n.type, prefix: n.prefix };
}

export class ConnectionState {
  readonly grants: Grant[] = [];
  /** Process ids this connection started (or is starting): the only ones it may drive. */
  readonly processes = new Set<string>();
  /** Questions of this connection waiting for an answer. */
  pending = 0;

  covered(needs: readonly Need[]): boolean {
    return needs.length > 0 && needs.every((n) => this.grants.some((g) => covers(g, n)));
  }

  grant(needs: readonly Need[]): void {
    for (const n of needs) if (n.grantable) this.grants.push(grantOf(n));
  }
}
