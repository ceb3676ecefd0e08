// The agent gate's shared vocabulary: what a decision sees (AgentContext), what it says
// (Verdict, Described), and the engine-exact readings of a request the deciders share (params
// decoded with the engine's own decoders, the sandbox as the engine will apply it).
import os from 'node:os';
import type { RpcError } from '../../protocol/errors';
import { METHODS } from '../../server/router';
import { parseSandbox, type SandboxProfile } from '../../server/sandbox/profile';
import type { ConnectionState, Need } from './grants';
import { isInside, realPathOf } from './paths';
import type { Pinned } from './pin';
import type { ApprovalPolicy } from '../approval';

export interface AgentContext {
  policy: ApprovalPolicy;
  /** Workspace folders on this machine, symlinks resolved. */
  workspaceRoots: readonly string[];
  /** Temp directories a sandbox may write without counting as "outside" (Codex always adds them). */
  tmpRoots: readonly string[];
  /** VS Code's own settings/extension directories: always ask, like `.vscode/`. */
  protectedRoots: readonly string[];
  /** Give every process/start without a managed sandbox Codex's workspace-write sandbox. */
  sandboxAll: boolean;
  /** The user's home directory (its credential stores are hidden from sandboxed commands). */
  homeDir: string;
  state: ConnectionState;
  /** Where this extension host runs (process.platform; tests name another): path pinning is Linux only (pin.ts). */
  platform?: NodeJS.Platform;
  /** A remote environment's endpoint: paths are resolved on that host (gate.ts HostPaths). */
  onHost?: { name: string; realPath(p: string): Promise<string | undefined>; sandboxes: boolean };
  /**
   * This endpoint answers the managed proxy's questions itself (not through a relay): the
   * user's allowlist, and how long a network question waits.
   */
  network?: { allowedDomains: readonly string[]; questionTimeoutMs: number };
}

/** What a request would do, for the question and the log. Agent text is shell-quoted (display-text.ts). */
export interface Described {
  /** One line. */
  summary: string;
  /** Every fact, one a line (full argv, cwd, arg0, env changes, sandbox, real paths). */
  details: string[];
  /** True when `summary` already says everything `details` holds. */
  complete: boolean;
  /** What "Allow for Session" would allow, in words. */
  sessionScope: string;
}

export type Verdict =
  /** `pins`: directories held open for the engine (agent-pin.ts); close them when it is done. */
  | {
      kind: 'allow';
      why: string;
      params: unknown;
      pins?: Pinned[];
      answer?: unknown;
      /** Pinning deferred to just before the engine runs it (a queued read must not hold a descriptor while it waits). */
      prepare?: () => Promise<{ params: unknown; pins: Pinned[] }>;
      /**
       * A path request allowed because its paths lie in these folders (the workspace folders,
       * or the prefixes of the session grants that cover it): the engine must act inside them
       * even if a path changes after the check (agent-confine.ts). `exact`: roots that are a
       * single file or folder granted alone, whose parent is not itself allowed.
       */
      confine?: { roots: readonly string[]; exact: boolean };
      /**
       * Allowed without a question and may change files: a sandboxed process/start (its
       * writable roots are watched while it runs) or an fs/* write (these paths). What changed
       * goes into the connection's ChangeLog, and its run grants lapse.
       */
      changes?: { roots?: readonly string[]; paths?: readonly string[] };
    }
  | { kind: 'deny'; error: RpcError }
  /** `held`: once allowed, the request is held to the folders the question named (a path request that is not protected). */
  | { kind: 'ask'; needs: Need[]; what: Described; params: unknown; held?: boolean };

/** The params as the engine decodes them (throws the engine's own -32602 for malformed params). */
export function decode(method: string, params: unknown): unknown {
  return METHODS[method].decode(params)
}

/** The sandbox exactly as the engine decodes it (its own decoder when it has one). */
export function sandboxOf(method: string, params: Record<string, unknown>, ctx: AgentContext, cwd: string): SandboxProfile {
  const d = decode(method, params) as { sandbox?: SandboxProfile };
  if (d.sandbox && typeof d.sandbox === 'object' && 'kind' in d.sandbox) return d.sandbox;
  return parseSandbox(params.sandbox, { cwd, workspaceRoots: [...ctx.workspaceRoots], tmpDir: os.tmpdir(), homeDir: os.homedir() });
}

/** Every writable root of a managed sandbox lies (really) inside a workspace folder or a temp dir. */
export async function writesStayInside(s: Extract<SandboxProfile, { kind: 'managed' }>, ctx: AgentContext): Promise<boolean> {
  if (s.fullWrite) return false;
  const allowed = [...ctx.workspaceRoots, ...ctx.tmpRoots];
  for (const w of s.writableRoots) {
    const real = await (ctx.onHost ? ctx.onHost.realPath(w) : realPathOf(w));
    if (real === undefined || !allowed.some((r) => isInside(real, r))) return false;
  }
  return true;
}
