// The agent gate's decision on process/start: sandbox first (a managed sandbox that writes only
// inside the workspace and temp dirs, network off, runs unasked under the default policy, with
// the user's secrets kept out of it), the optional workspace-write sandbox for commands that
// come without one, and the full description of what would run (argv, arg0, cwd, env policy
// and variables, sandbox, stdin) for the question.
import { promises as fsp } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { managedSandbox, workspaceWriteEntries } from '../../protocol/codex-sandbox';
import type { EnvPolicy } from '../../protocol/types';
import { buildChildEnv } from '../../server/process/env-policy';
import { resolveExecutable } from '../../server/process/spawn-pty';
import type { SandboxProfile } from '../../server/sandbox/profile';
import type { Need } from './grants';
import { isInside, realPathOf } from './paths';
import { credentialPaths, hostSockets, withHiddenPaths } from './sockets';
import { sandboxOf, writesStayInside, type AgentContext, type Described, type Verdict } from './verdict';
import { commandLine, shown } from '../approval';

/** Variables never handed to a sandboxed command that runs without a question. */
export const SANDBOX_ENV_EXCLUDES = ['VSCODE_IPC_HOOK*', 'VSCODE_GIT_IPC_HANDLE', 'VSCODE_GIT_ASKPASS*', 'GIT_ASKPASS', 'SSH_AUTH_SOCK', 'GPG_AGENT_INFO'];

/** Codex's workspace-write sandbox (protocol §6b), for commands that arrive without one. */
export function workspaceWriteSandbox(cwd: string, roots: readonly string[]): unknown {
  return managedSandbox({
    entries: workspaceWriteEntries(),
    cwd: pathToFileURL(cwd).href,
    workspaceRoots: roots.map((r) => pathToFileURL(r).href),
  });
}

function describeEnv(env: Record<string, string>, policy: EnvPolicy | undefined): string[] {
  const lines: string[] = [];
  if (!policy) lines.push('Environment: exactly the variables below (nothing inherited)');
  else {
    const base = { all: 'all of VS Code’s environment', core: 'the core variables (HOME, PATH, USER, SHELL, TMPDIR…)', none: 'nothing' }[policy.inherit ?? 'all'];
    lines.push(`Environment: starts from ${base}`);
    if (policy.inherit !== 'none') {
      lines.push(
        policy.ignoreDefaultExcludes
          ? '  default excludes OFF: variables named *KEY*, *SECRET*, *TOKEN* are passed on'
          : '  variables named *KEY*, *SECRET*, *TOKEN* are dropped',
      );
    }
    if (policy.exclude?.length) lines.push(`  minus: ${policy.exclude.map(shown).join(' ')}`);
    for (const [k, v] of Object.entries(policy.set ?? {})) lines.push(`  set ${shown(`${k}=${v}`)}`);
    if (policy.includeOnly?.length) lines.push(`  keeping only: ${policy.includeOnly.map(shown).join(' ')}`);
  }
  for (const [k, v] of Object.entries(env)) lines.push(`  ${shown(`${k}=${v}`)}`);
  return lines;
}

function describeSandbox(s: SandboxProfile, injected: boolean): string {
  if (s.kind === 'none') return 'Sandbox: none — the command runs with all of your permissions and network access';
  const w = s.writableRoots.length ? s.writableRoots.map(shown).join(', ') : 'nothing';
  return `Sandbox${injected ? ' (added by the execServer.approval.sandboxAgentCommands setting)' : ''}: writes only to ${w}${s.readOnlyCarveouts.length ? ` except ${s.readOnlyCarveouts.map(shown).join(', ')}` : ''}; network ${s.network}`;
}

/** envPolicy as the engine reads it (defaults filled in), from already validated params. */
function envPolicyOf(raw: unknown): EnvPolicy | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const o = raw as Record<string, unknown>;
  const list = (v: unknown) => (Array.isArray(v) ? (v as string[]) : []);
  return {
    inherit: (o.inherit as EnvPolicy['inherit']) ?? 'all',
    ignoreDefaultExcludes: o.ignoreDefaultExcludes === true,
    exclude: list(o.exclude),
    set: o.set && typeof o.set === 'object' ? (o.set as Record<string, string>) : {},
    includeOnly: list(o.includeOnly),
  };
}

/**
 * The file argv[0] runs, found as the engine finds it (relative to the cwd, or through the
 * child's PATH), with what identifies its content: real path, device, inode, change time,
 * size. A run grant is for this file: an agent that rewrites a granted `./build.sh` (an
 * unasked write inside the workspace), swaps a symlink, or plants a `git` earlier on a
 * relative PATH entry gets another file, and is asked again. undefined when nothing runs.
 */
async function programFile(argv0: string, cwd: string, env: Record<string, string>, policy: EnvPolicy | undefined): Promise<{ real: string; id: string } | undefined> {
  let found: string;
  try {
    found = resolveExecutable(argv0, cwd, buildChildEnv(env, policy));
  } catch {
    return undefined;
  }
  const real = await fsp.realpath(found).catch(() => undefined);
  const st = real === undefined ? undefined : await fsp.stat(real, { bigint: true }).catch(() => undefined);
  if (real === undefined || st === undefined) return undefined;
  return { real, id: `${real}\0${st.dev}:${st.ino}:${st.ctimeNs}:${st.size}` };
}

export async function decideStart(ctx: AgentContext, params: unknown, d: Record<string, unknown>): Promise<Verdict> {
  const raw = params as Record<string, unknown>;
  // Validated by the engine's decoder already; read from the wire params (the decoded shape is the engine's business).
  const argv = raw.argv as string[];
  const cwd = String(d.cwd);
  const env = (raw.env ?? {}) as Record<string, string>;
  const envPolicy = envPolicyOf(raw.envPolicy);
  const arg0 = typeof raw.arg0 === 'string' ? raw.arg0 : undefined;
  let sandbox = sandboxOf('process/start', raw, ctx, cwd);
  let out: Record<string, unknown> = raw;
  let injected = false;
  if (sandbox.kind === 'none' && ctx.sandboxAll) {
    out = { ...raw, sandbox: workspaceWriteSandbox(cwd, ctx.workspaceRoots) };
    sandbox = sandboxOf('process/start', out, ctx, cwd);
    injected = true;
  }
  // On a remote host the cwd is resolved there; the program file is the host's business (not looked up here).
  const cwdReal = (await (ctx.onHost ? ctx.onHost.realPath(cwd) : realPathOf(cwd))) ?? cwd;
  const program = ctx.onHost ? undefined : await programFile(argv[0], cwd, env, envPolicy);
  // Sandbox first only where the host's server enforces managed sandboxes.
  const contained = sandbox.kind === 'managed' && sandbox.network === 'restricted' && (!ctx.onHost || ctx.onHost.sandboxes) && (await writesStayInside(sandbox, ctx));

  const command = commandLine(argv);
  const details = [
    'Method: process/start',
    `Command: ${command}`,
    ...argv.map((a, i) => `  argv[${i}]: ${shown(a)}`),
    ctx.onHost ? `Runs on: ${shown(ctx.onHost.name)} (the program is looked up there)` : `Program file: ${program ? shown(program.real) : '(not found: the start will fail)'}`,
    `arg0: ${arg0 === undefined || arg0 === null ? '(none: argv[0])' : shown(arg0)}`,
    `Working directory: ${cwdReal === cwd ? shown(cwd) : `${shown(cwd)} (really ${shown(cwdReal)})`}`,
    describeSandbox(sandbox, injected),
    ...describeEnv(env, envPolicy),
    raw.tty ? 'Terminal: a PTY; the agent may type into it.' : raw.pipeStdin ? 'stdin: open; the agent may write to it.' : 'stdin: closed.',
    'Approving lets this connection also write input to, interrupt, resize and terminate this process.',
  ];
  const flags: string[] = [];
  if (sandbox.kind === 'none') flags.push('unsandboxed');
  else if (!contained) flags.push('sandbox writes outside the workspace or allows network');
  else flags.push(injected ? 'sandboxed by your setting' : 'sandboxed');
  if (arg0 !== undefined && arg0 !== null && arg0 !== argv[0]) flags.push(`arg0 ${shown(arg0)}`);
  // A bare name found in the cwd, the workspace or a temp dir (a relative PATH entry, or PATH
  // set to such a folder) is a program the agent could have written: `git` read as /usr/bin/git
  // would under-state it.
  if (!argv[0].includes('/') && program && [cwdReal, ...ctx.workspaceRoots, ...ctx.tmpRoots].some((r) => isInside(program.real, r))) {
    flags.push(`${shown(argv[0])} is ${shown(program.real)}`);
  }
  // Named, not counted: one variable (LD_PRELOAD, BASH_ENV, GIT_CONFIG_*, NODE_OPTIONS…) can
  // make a harmless-looking command run anything, and the one line is what gets read.
  const setNames = [...new Set([...Object.keys(envPolicy?.set ?? {}), ...Object.keys(env)])];
  if (setNames.length > 0) flags.push(`sets ${namesForLine(setNames)}`);
  if (envPolicy && envPolicy.inherit !== 'none' && envPolicy.ignoreDefaultExcludes) flags.push('passes on your *KEY*/*SECRET*/*TOKEN* variables');
  const summary = `run ${command} in ${shown(cwdReal)}${flags.length ? ` (${flags.join('; ')})` : ''}; input to it will be allowed`;
  // The whole sandbox as the engine applies it (network, read-only carve-outs, hidden and
  // readable paths, not only the writable roots): a grant for a run with the network off must
  // not cover the same run with it on.
  const envKey = JSON.stringify({ file: program?.id ?? null, env, envPolicy: envPolicy ?? null, arg0: arg0 ?? null, tty: !!raw.tty, pipeStdin: !!raw.pipeStdin, sandbox: sandbox.kind === 'managed' ? sandbox : 'none' });
  // On a remote host the program file is not identified: a grant would cover a rewritten one.
  const need: Need = { type: 'run', program: argv[0], cwd: cwdReal, envKey, grantable: !ctx.onHost };
  const what: Described = {
    summary,
    details,
    complete: false,
    sessionScope: ctx.onHost ? `Allow for Session allows this request only (on ${shown(ctx.onHost.name)} the program file is not identified).` : `Allow for Session: later runs of ${shown(argv[0])} (any arguments; as long as ${program ? shown(program.real) : 'it'} is not changed or replaced) in ${shown(cwdReal)} with the same environment and sandbox settings, on this connection only.`,
  };

  if (ctx.policy === 'neverAsk') return { kind: 'allow', why: 'policy neverAsk', params: out };
  if (contained && sandbox.kind === 'managed' && ctx.policy === 'askOutsideWorkspace') {
    // Runs without a question: nothing of the user's secrets goes with it (a command the user
    // approved gets exactly the sandbox shown in the question).
    // (This machine's sockets and credential stores; a remote host's are not looked up yet.)
    const [sockets, secrets] = ctx.onHost ? [[], []] : await Promise.all([hostSockets(), credentialPaths(ctx.homeDir, ctx.protectedRoots)]);
    // Never hide what the sandbox may write (the workspace itself could sit under a hidden path).
    const hidden = [...new Set([...sockets, ...secrets])].filter((h) => !sandbox.writableRoots.some((w) => isInside(w, h)));
    return { kind: 'allow', why: 'sandboxed inside the workspace', params: withSafeEnv({ ...out, sandbox: withHiddenPaths(out.sandbox, hidden) }, envPolicy) };
  }
  if (ctx.state.covered([need])) return { kind: 'allow', why: 'allowed for this session', params: out };
  return { kind: 'ask', needs: [need], what, params: out };
}

/** Variable names for the one-line question: the first few in full (shell-quoted), then how many more the details list. */
function namesForLine(names: readonly string[]): string {
  const MAX_NAMES = 6;
  const MAX_CHARS = 200;
  const out: string[] = [];
  let chars = 0;
  for (const n of names) {
    // A name too long for the line is cut visibly (the details have it whole).
    const q = n.length > 60 ? `${shown(n.slice(0, 48))}…` : shown(n);
    if (out.length >= MAX_NAMES || (out.length > 0 && chars + q.length > MAX_CHARS)) break;
    out.push(q);
    chars += q.length;
  }
  const more = names.length - out.length;
  return `${out.join(', ')}${more > 0 ? ` and ${more} more variable${more === 1 ? '' : 's'} (see the details)` : ''}`;
}

/**
 * A sandboxed command that runs without a question still does not get VS Code's secrets: the
 * default KEY/SECRET/TOKEN name excludes are forced on and IPC/agent sockets are dropped.
 */
function withSafeEnv(params: Record<string, unknown>, policy: EnvPolicy | undefined): Record<string, unknown> {
  if (!policy || policy.inherit === 'none') return params;
  const rawPolicy = (params.envPolicy ?? {}) as Record<string, unknown>;
  const exclude = Array.isArray(rawPolicy.exclude) ? (rawPolicy.exclude as unknown[]) : [];
  return { ...params, envPolicy: { ...rawPolicy, ignoreDefaultExcludes: false, exclude: [...exclude, ...SANDBOX_ENV_EXCLUDES] } };
}
