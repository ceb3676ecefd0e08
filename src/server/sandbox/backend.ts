// How process/start runs a command under a managed sandbox: a backend turns the spawn request
// into one that starts the platform's sandboxing tool (bubblewrap on Linux; a macOS seatbelt
// backend would build a `sandbox-exec -p <profile>` argv the same way). The process layer
// (../process) spawns the wrapped request like any other: pipes or PTY, same events.
//
// Process groups. Pipe children are spawned `detached` (their own session and group) and a
// PTY child leads the terminal's session; interrupt is SIGINT to that group, or Ctrl-C on the
// terminal to its foreground group, and terminate is SIGKILL to the group. bubblewrap is not
// given --new-session: the command then stays in that group and on that terminal, so all of
// this keeps working unchanged (measured: a `trap … INT` shell, `stty size` after a resize).
// What --new-session guards against is TIOCSTI injection into a terminal shared with the
// caller; here the child already has its own session (pipes: no terminal at all; PTY: a
// terminal whose only reader is the sandbox). Terminate still reaches everything: bwrap is
// in the killed group, and with --die-with-parent + a pid namespace, the sandbox's pid 1
// and every process in it die with bwrap, even ones that left the group (not so with the pid
// namespace inherited, --linux-sandbox-pid-namespace inherit: as on the reference, a process
// that left the group outlives terminate).
import fs from 'node:fs';
import { invalidRequest } from '../../protocol/errors';
import type { SpawnRequest } from '../process/child';
import { READY_PREFIX, wrapArgv, type BwrapTools, type PidNamespaceMode, type ProxiedSandbox } from './bwrap';
import type { ManagedSandboxProfile } from './profile';
import { withCarveOuts } from './carve-outs';
import { preparedNamespace } from './prepared-namespace';
import { guardSandbox, type GuardLease, type Planted } from './plant-guard';
import { resolveProfile, writableSymlinkCrossing } from './resolve';
import { ensureToolFiles, sandboxSupport } from './support';

export interface SandboxBackend {
  /** What process/start answers in `sandboxType` (the value Codex knows for Linux). */
  readonly sandboxType: string;
  /**
   * The request that runs `req` confined by `profile` (argv replaced; arg0 handled inside);
   * `proxied`: behind the managed network proxy's relay (../network), network unshared.
   */
  wrap(profile: ManagedSandboxProfile, req: SpawnRequest, proxied?: ProxiedSandbox): SpawnRequest;
  /**
   * Watches what the sandbox of `profile` creates from now on (./plant-guard.ts): call before
   * spawning it, release once it closed; `onPlant` must stop it.
   */
  guard(profile: ManagedSandboxProfile, onPlant: (p: Planted[]) => void): GuardLease;
}

export class BwrapBackend implements SandboxBackend {
  readonly sandboxType = 'linuxSeccomp';
  constructor(
    private readonly tools: BwrapTools,
    /** ServerOptions.linuxSandboxPidNamespace (./bwrap.ts PidNamespaceMode). */
    private readonly pidNamespace: PidNamespaceMode = 'isolate',
  ) {}

  wrap(profile: ManagedSandboxProfile, req: SpawnRequest, proxied?: ProxiedSandbox): SpawnRequest {
    ensureToolFiles(this.tools);
    const resolved = resolveProfile(profile);
    // The engine's own read-only carve-outs below the writable roots (./carve-outs.ts).
    const carved = withCarveOuts(resolved).profile;
    const crossing = writableSymlinkCrossing(profile, resolved);
    if (crossing) {
      // As the reference: the start succeeds, nothing of the command runs, the reason goes to
      // stderr and the exit code is 1.
      const say = 'printf "%s\\n" "$1" >&2; exit 1';
      return { ...req, argv: [this.tools.sh, '-c', say, 'exec-server-sandbox', `error building bubblewrap command: Fatal error: ${crossing}`], arg0: undefined };
    }
    const argv = wrapArgv(carved, { argv: req.argv, cwd: req.cwd, arg0: req.arg0, proxied }, this.tools, undefined, this.pidNamespace, (m) => preparedNamespace(m, this.tools));
    // A setup that fails before the command runs is done again (./setup-retry.ts); the first
    // program's first argument is where it says the sandbox is set up (./bwrap.ts READY_PREFIX).
    const first = argv.findIndex((a) => a.startsWith(READY_PREFIX));
    if (first < 0) throw new Error('the sandbox argv has no first program'); // wrapArgv always puts it there
    return { ...req, argv, arg0: undefined, closesDescriptors: true, sandboxSetup: { readyFdArg: first + 2 } };
  }

  guard(profile: ManagedSandboxProfile, onPlant: (p: Planted[]) => void): GuardLease {
    return guardSandbox(resolveProfile(profile).writableRoots, onPlant);
  }
}

/** The first child of `pid` (the oldest one: /proc lists them in the order they were made). */
export function firstChildOf(pid: number): number | undefined {
  try {
    const first = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)[0];
    return first ? Number(first) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * bubblewrap's pid for a sandboxed process whose spawned pid is `spawnedPid`: that process itself
 * (what wrapArgv builds execs its way to bwrap: sh, env, [nsenter,] bwrap; no process of its own).
 */
export function bwrapPidOf(spawnedPid: number): number | undefined {
  return spawnedPid;
}

/**
 * The backend for this host, or -32600 naming why managed sandboxes cannot be enforced here.
 * Waits for the startup probe while it runs (never an unconfined run while the answer is unknown).
 */
export async function sandboxBackend(pidNamespace: PidNamespaceMode = 'isolate'): Promise<SandboxBackend> {
  const support = await sandboxSupport();
  if (!support.ok) throw invalidRequest(`managed sandbox requested but it cannot be enforced: ${support.reason}`);
  return new BwrapBackend(support.tools, pidNamespace);
}
