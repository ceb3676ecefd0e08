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
  /** `since`: the connection's change count when granted (a run grant lapses once the agent changed files: ConnectionState.changes). */
  | { type: 'run'; program: string; cwd: string; envKey: string; since?: number }
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

/** Changed paths a connection remembers for its questions (the count goes on past it). */
const CHANGES_KEPT = 200;

/**
 * What the connection's own unasked actions changed (sandboxed commands that ran without a
 * question, fs/* writes allowed by rule or grant), in order: a run grant is for a program file
 * and its cwd, but what `make test` runs is also its Makefile, package.json scripts,
 * conftest.py, a script the granted one sources — any of which such an action may have
 * rewritten. So every run grant lapses at the next change, and the question that follows names
 * what changed since the grant.
 */
export class ChangeLog {
  /** Changes noted so far (each path counted once per run of changes). */
  count = 0;
  private readonly recent: { seq: number; path: string }[] = [];

  note(p: string): void {
    const last = this.recent[this.recent.length - 1];
    if (last?.path === p) return;
    this.count++;
    this.recent.push({ seq: this.count, path: p });
    if (this.recent.length > CHANGES_KEPT) this.recent.shift();
  }

  /** Distinct paths changed after change number `since`, and how many changes are not listed (older than the log keeps). */
  since(since: number): { paths: string[]; unlisted: number } {
    const kept = this.recent.filter((c) => c.seq > since);
    const paths = [...new Set(kept.map((c) => c.path))];
    const first = kept[0]?.seq ?? this.count + 1;
    return { paths, unlisted: Math.max(0, first - since - 1) };
  }
}

export class ConnectionState {
  readonly grants: Grant[] = [];
  changes = new ChangeLog();
  /** Process ids this connection started (or is starting): the only ones it may drive. */
  readonly processes = new Set<string>();
  /** Questions of this connection waiting for an answer. */
  pending = 0;
  /** Hosts answered "Allow for Session" in a network question (lower-case). */
  readonly networkHosts = new Set<string>();

  covered(needs: readonly Need[]): boolean {
    return needs.length > 0 && needs.every((n) => this.grants.some((g) => this.live(g) && covers(g, n)));
  }

  /** A run grant holds until the connection's unasked actions change a file (ChangeLog). */
  live(g: Grant): boolean {
    return g.type !== 'run' || (g.since ?? 0) === this.changes.count;
  }

  /** The run grant for `n` that lapsed because files changed, with what changed since it; undefined when there is none. */
  lapsed(n: Need): { paths: string[]; unlisted: number } | undefined {
    if (n.type !== 'run') return undefined;
    const g = this.grants.find((x) => x.type === 'run' && !this.live(x) && covers(x, n));
    return g?.type === 'run' ? this.changes.since(g.since ?? 0) : undefined;
  }

  /** `since`: the change count the question showed (changes made while it was open are not covered). */
  grant(needs: readonly Need[], since = this.changes.count): void {
    for (const n of needs) {
      if (!n.grantable) continue;
      const g = grantOf(n);
      this.grants.push(g.type === 'run' ? { ...g, since } : g);
    }
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
    this.changes = base.changes;
    this.approved = new Set(approved.map((n) => JSON.stringify(n)));
    this.grants.push(...base.grants, ...held);
  }

  override covered(needs: readonly Need[]): boolean {
    return needs.length > 0 && needs.every((n) => this.approved.has(JSON.stringify(n)) || this.base.grants.some((g) => this.base.live(g) && covers(g, n)));
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
