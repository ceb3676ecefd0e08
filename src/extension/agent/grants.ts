// What one agent connection has been allowed "for the session", and which processes it
// started. Grants are narrow on purpose: a program (argv[0] + cwd + the same environment
// settings), a path prefix for reads or for writes, an HTTP origin (with the local or private
// addresses its host name was shown to resolve to, see agent-http.ts). They live in one
// connection's state only (a resumed session brings its own state back, see AgentGate);
// nothing here is shared between connections.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { isInside } from './paths';

export type Grant =
  | { type: 'run'; program: string; cwd: string; envKey: string }
  | { type: 'read' | 'write'; prefix: string }
  | { type: 'http'; origin: string; local?: readonly string[] };

/** What one request needs allowed. `grantable: false` (protected paths) always asks. */
export type Need =
  | { type: 'run'; program: string; cwd: string; envKey: string; grantable: boolean }
  | { type: 'read' | 'write'; path: string; prefix: string; grantable: boolean }
  /** `local`: the local or private addresses the host name leads to now (sorted; none: public only). */
  | { type: 'http'; origin: string; grantable: boolean; local?: readonly string[] };

export function covers(g: Grant, n: Need): boolean {
  if (!n.grantable) return false;
  if (g.type === 'run' && n.type === 'run') return g.program === n.program && g.cwd === n.cwd && g.envKey === n.envKey;
  // A name granted while it led to public addresses does not cover it once it leads to this
  // machine or a private network (DNS rebinding): only local addresses the question showed.
  if (g.type === 'http' && n.type === 'http') return g.origin === n.origin && (n.local ?? []).every((a) => (g.local ?? []).includes(a));
  if ((g.type === 'read' || g.type === 'write') && (n.type === 'read' || n.type === 'write')) {
    // A write grant also covers reads below the same prefix; a read grant never covers writes.
    if (g.type === 'read' && n.type === 'write') return false;
    return isInside(n.path, g.prefix);
  }
  return false;
}

export function grantOf(n: Need): Grant {
  if (n.type === 'run') return { type: 'run', program: n.program, cwd: n.cwd, envKey: n.envKey };
  if (n.type === 'http') return { type: 'http', origin: n.origin, local: n.local ?? [] };
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

/**
 * The connection's state as it is once the user answered "Allow" (or "Allow for Session") to
 * one question: the request is judged again against it before it runs. Exactly the needs the
 * question showed are covered (plus the connection's grants); if the request now needs
 * anything else — its program file was rewritten, a folder on its path became a symlink while
 * the question was open — it is not covered and is refused. The folders the approved paths
 * are in stand as grants here (approvalGrants), so that the engine is held to them while it
 * acts (agent-confine.ts).
 */
export class ApprovedState extends ConnectionState {
  private readonly approved: Set<string>;

  constructor(
    private readonly base: ConnectionState,
    approved: readonly Need[],
    held: readonly Grant[],
  ) {
    super();
    this.approved = new Set(approved.map((n) => JSON.stringify(n)));
    this.grants.push(...base.grants, ...held);
  }

  override covered(needs: readonly Need[]): boolean {
    return needs.length > 0 && needs.every((n) => this.approved.has(JSON.stringify(n)) || this.base.grants.some((g) => covers(g, n)));
  }
}

/**
 * For each approved path: the nearest existing directory holding it (what a sandbox can name
 * and a pin can check; a `mkdir -p` target or a new file does not exist yet).
 */
export async function approvalGrants(needs: readonly Need[]): Promise<Grant[]> {
  const out: Grant[] = [];
  for (const n of needs) {
    if (n.type !== 'read' && n.type !== 'write') continue;
    let dir = path.dirname(n.path);
    for (;;) {
      const st = await fsp.stat(dir).catch(() => undefined);
      if (st?.isDirectory() || path.dirname(dir) === dir) break;
      dir = path.dirname(dir);
    }
    out.push({ type: n.type, prefix: dir });
  }
  return out;
}
