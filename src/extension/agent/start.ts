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
import { setOpenFolders } from '../../server/sandbox/carve-outs';
import { protectionOf } from '../../server/sandbox/plant-guard';
import type { SandboxProfile } from '../../server/sandbox/profile';
import { resolveProfile } from '../../server/sandbox/resolve';
import type { Need } from './grants';
import { isInside, realPathOf } from './paths';
import { credentialPaths, hostSockets, withHiddenPaths } from './sockets';
import { sandboxOf, writesStayInside, type AgentContext, type Described, type Verdict } from './verdict';
import { commandLine, countedRuns, shown, wrapDetail } from '../approval';

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

/** `source`: whose environment the executor starts from (VS Code's here, the host executor's on a remote endpoint). */
function describeEnv(env: Record<string, string>, policy: EnvPolicy | undefined, source = 'VS Code’s environment'): string[] {
  const lines: string[] = [];
  if (!policy) lines.push('Environment: exactly the variables below (nothing inherited)');
  else {
    const base = { all: `all of ${source}`, core: 'the core variables (HOME, PATH, USER, SHELL, TMPDIR…)', none: 'nothing' }[policy.inherit ?? 'all'];
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
  // A managed-proxy launch (networkProxy): the agent's own allow entries are not trusted; the
  // gate puts the user's allowlist in their place and has every other host asked of the user
  // (network/policyRequest, answered by ConnectionGate.askNetwork). Its deny entries stay.
  // The same on a remote environment's endpoint: the host's server asks, the relay asks the user.
  const proxy = sandbox.kind === 'managed' && ctx.policy !== 'neverAsk' && ctx.network ? gatedProxyLaunch(raw.networkProxy, ctx.network) : undefined;
  if (proxy) out = { ...out, networkProxy: proxy.launch };
  // On a remote host the cwd is resolved there; the program file is the host's business (not looked up here).
  const cwdReal = (await (ctx.onHost ? ctx.onHost.realPath(cwd) : realPathOf(cwd))) ?? cwd;
  const program = ctx.onHost ? undefined : await programFile(argv[0], cwd, env, envPolicy);
  // Sandbox first only where the host's server enforces managed sandboxes.
  // Network off, or only through the proxy to hosts the user allows (a launch that lets names
  // lead to local addresses, allowLocalBinding, is not contained).
  const networkContained = sandbox.kind === 'managed' && (sandbox.network === 'restricted' || (proxy !== undefined && !proxy.localBinding));
  const contained = sandbox.kind === 'managed' && networkContained && (!ctx.onHost || ctx.onHost.sandboxes) && (await writesStayInside(sandbox, ctx));
  // Unasked only when the engine can keep its promise about .git/.vscode/*.code-workspace: every
  // existing one carved out and every new one caught (../../server/sandbox/plant-guard.ts). A
  // workspace too big to scan or watch asks instead. (A remote host's own scan is not seen here.)
  // The engine protects the workspace folders a temp dir of the sandbox reaches too (a
  // repository appearing in them is opened by the Git extension by itself).
  if (!ctx.onHost) setOpenFolders(ctx.workspaceRoots);
  const protection = contained && sandbox.kind === 'managed' && !ctx.onHost ? protectionOf(resolveProfile(sandbox).writableRoots) : { complete: true };

  const command = commandLine(argv);
  const details = [
    'Method: process/start',
    // Agent text of any length: wrapped (the details tab has no word wrap; a payload at column 723 is unseen).
    ...wrapDetail(countedRuns(`Command: ${command}`)),
    ...argv.flatMap((a, i) => wrapDetail(countedRuns(`  argv[${i}]: ${shown(a)}`))),
    ctx.onHost ? `Runs on: ${shown(ctx.onHost.name)} (the program is looked up there)` : `Program file: ${program ? shown(program.real) : '(not found: the start will fail)'}`,
    `arg0: ${arg0 === undefined || arg0 === null ? '(none: argv[0])' : shown(arg0)}`,
    `Working directory: ${cwdReal === cwd ? shown(cwd) : `${shown(cwd)} (really ${shown(cwdReal)})`}`,
    describeSandbox(sandbox, injected),
    ...(proxy ? [proxy.description] : []),
    ...describeEnv(env, envPolicy, ctx.onHost ? `the environment of the executor on ${shown(ctx.onHost.name)}` : undefined).flatMap((l) => wrapDetail(countedRuns(l))),
    raw.tty ? 'Terminal: a PTY; the agent may type into it.' : raw.pipeStdin ? 'stdin: open; the agent may write to it.' : 'stdin: closed.',
    'Approving lets this connection also write input to, interrupt, resize and terminate this process.',
  ];
  const flags: string[] = [];
  if (sandbox.kind === 'none') flags.push('unsandboxed');
  else if (ctx.onHost && !ctx.onHost.sandboxes) flags.push(`sandbox requested, but the executor on ${shown(ctx.onHost.name)} does not say it enforces sandboxes`);
  else if (!contained) flags.push('sandbox writes outside the workspace or allows network');
  else if (!protection.complete) flags.push(`sandboxed, but the workspace could not be fully checked for .git/.vscode (${protection.reason}): the command could plant code that runs outside the sandbox`);
  else flags.push(injected ? 'sandboxed by your setting' : 'sandboxed');
  if (proxy) flags.push(proxy.localBinding ? 'network through the proxy, local addresses allowed' : 'network through the proxy: other hosts are asked');
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
  // Flags first: what the one line is cut to must still say "unsandboxed" or "sets LD_PRELOAD".
  const summary = `run ${flags.length ? `(${flags.join('; ')}) ` : ''}${command} in ${shown(cwdReal)}; input to it will be allowed`;
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

  // Allowed for the session before, but files changed since by what this connection ran or wrote
  // unasked: the Makefile, the scripts, the conftest.py of this run may be the agent's now.
  const lapsed = ctx.state.lapsed(need);
  if (lapsed) {
    const listed = lapsed.paths.slice(0, 5).map(shown).join(', ');
    const more = lapsed.paths.length - Math.min(5, lapsed.paths.length) + lapsed.unlisted;
    flags.unshift(`was allowed for the session; files changed by the agent since: ${listed || '(not listed)'}${more > 0 ? ` and ${more} more` : ''}`);
    details.push(...wrapDetail(`Files changed by the agent's unasked commands and writes since it was allowed: ${[...lapsed.paths.map(shown), ...(lapsed.unlisted > 0 ? [`${lapsed.unlisted} more not kept`] : [])].join(', ')}`));
  }
  what.summary = `run ${flags.length ? `(${flags.join('; ')}) ` : ''}${command} in ${shown(cwdReal)}; input to it will be allowed`;

  if (ctx.policy === 'neverAsk') return { kind: 'allow', why: 'policy neverAsk', params: out };
  if (contained && protection.complete && sandbox.kind === 'managed' && ctx.policy === 'askOutsideWorkspace') {
    // Runs without a question: nothing of the user's secrets goes with it (a command the user
    // approved gets exactly the sandbox shown in the question).
    // (This machine's sockets and credential stores; a remote host's are not looked up yet.)
    const [sockets, secrets] = ctx.onHost ? [[], []] : await Promise.all([hostSockets(), credentialPaths(ctx.homeDir, ctx.protectedRoots)]);
    // Never hide what the sandbox may write (the workspace itself could sit under a hidden path).
    const hidden = [...new Set([...sockets, ...secrets])].filter((h) => !sandbox.writableRoots.some((w) => isInside(w, h)));
    // What it changes is remembered (../../server/sandbox/plant-guard.ts watchChanges): a granted
    // `make test` whose Makefile it rewrote is asked again. (A remote host's changes are not seen
    // here; its run grants never cover later runs anyway.)
    const changes = ctx.onHost ? undefined : { roots: resolveProfile(sandbox).writableRoots };
    return { kind: 'allow', why: 'sandboxed inside the workspace', params: withSafeEnv({ ...out, sandbox: withHiddenPaths(out.sandbox, hidden) }, envPolicy), changes };
  }
  // Covered by a grant, or just approved: the engine must run the file that was judged. Were it
  // to look `./b.sh` up again, a symlink (or a folder on the way) re-pointed by an unasked
  // sandboxed command in between would run another file, unsandboxed (7 of 30 runs in test/extension/agent/grants.exec-race).
  // So a program that lies where such a command may write runs by its judged real path; the
  // name it was asked by stays its argv[0] (arg0).
  if (ctx.state.covered([need])) return { kind: 'allow', why: 'allowed for this session', params: pinnedProgram(out, argv, arg0, program, [cwdReal, ...ctx.workspaceRoots, ...ctx.tmpRoots]) };
  return { kind: 'ask', needs: [need], what, params: out };
}

/** `params` with argv[0] replaced by the program's real path when it lies in one of `writable` (see decideStart). */
function pinnedProgram(params: Record<string, unknown>, argv: string[], arg0: string | undefined, program: { real: string } | undefined, writable: readonly string[]): Record<string, unknown> {
  if (!program || program.real === argv[0] || !writable.some((r) => isInside(program.real, r))) return params;
  return { ...params, argv: [program.real, ...argv.slice(1)], arg0: arg0 ?? argv[0] };
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

/**
 * The managed-proxy launch as the gate sends it on: the agent's deny entries, the user's
 * allowlist (execServer.network.allowedDomains) as the only allow entries, and the decision
 * callback on (policyDecisionTimeoutMs = the question timeout), so every other host becomes a
 * question. undefined when the start has no (object) networkProxy.
 */
export function gatedProxyLaunch(raw: unknown, network: NonNullable<AgentContext['network']>): { launch: Record<string, unknown>; localBinding: boolean; description: string } | undefined {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const launch = raw as Record<string, unknown>;
  const p = (launch.proxy && typeof launch.proxy === 'object' ? launch.proxy : {}) as Record<string, unknown>;
  const given = p.domains && typeof p.domains === 'object' && !Array.isArray(p.domains) ? (p.domains as Record<string, unknown>) : {};
  const denied = Object.keys(given).filter((k) => given[k] === 'deny');
  const domains: Record<string, string> = Object.fromEntries(denied.map((k) => [k, 'deny']));
  for (const d of network.allowedDomains) if (domains[d] === undefined) domains[d] = 'allow';
  const dropped = Object.keys(given).filter((k) => given[k] === 'allow' && !network.allowedDomains.includes(k));
  const localBinding = p.allowLocalBinding === true;
  const description = [
    'Network: only through the managed proxy;',
    `allowed without a question: ${network.allowedDomains.length ? network.allowedDomains.map(shown).join(', ') : 'none (execServer.network.allowedDomains)'};`,
    denied.length ? `denied: ${denied.map(shown).join(', ')};` : '',
    dropped.length ? `asked instead of allowed as the agent asked: ${dropped.map(shown).join(', ')};` : '',
    'every other host is asked',
    localBinding ? '(the launch lets allowed names lead to this machine\'s local and private addresses)' : '',
  ].filter(Boolean).join(' ');
  return { launch: { ...launch, proxy: { ...p, domains }, policyDecisionTimeoutMs: network.questionTimeoutMs }, localBinding, description };
}
