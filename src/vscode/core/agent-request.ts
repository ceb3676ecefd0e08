// The agent gate's classifier: for one request of an agent connection — any method, any
// handshake state — decide from the method and its params whether it runs, is refused, or
// needs the user's answer, and say in full what it would do. Params are decoded with the
// engine's own decoders (so the gate judges exactly the paths the engine will use); paths are
// judged by where they really lead. Unknown methods are refused.
import { lstat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCodes, RpcError } from '../../protocol/errors';
import type { EnvPolicy } from '../../protocol/types';
import { fsError } from '../../server/os-errors';
import { uriToPath } from '../../server/paths';
import { METHODS } from '../../server/router';
import { parseSandbox, type SandboxProfile } from '../../server/sandbox/profile';
import type { ConnectionState, Need } from './agent-grants';
import { isInside, isProtectedPath, protectedChildren, realParentOf, realPathOf } from './agent-paths';
import { pinParent, pinTarget, type Pinned } from './agent-pin';
import { credentialPaths, hostSockets, withHiddenPaths } from './agent-sockets';
import type { ApprovalPolicy } from './approval';
import { commandLine, shown } from './display-text';

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
    }
  | { kind: 'deny'; error: RpcError }
  | { kind: 'ask'; needs: Need[]; what: Described; params: unknown };

/** Methods that act on a process of the connection: allowed on its own processes only. */
const OWN_PROCESS_METHODS = new Set(['process/read', 'process/write', 'process/signal', 'process/terminate', 'process/resize', 'process/closeStdin']);
/** Handshake, host facts, metadata, and handles/watches the engine scopes to the connection. */
const FREE_METHODS = new Set([
  'environment/info',
  'environment/status',
  // The engine reads no configuration file: it answers the home dir and hostname only.
  'environmentConfig/read',
  'fs/getMetadata',
  'fs/canonicalize',
  'fs/watchMissing',
  'fs/readBlock',
  'fs/close',
  'fs/unwatch',
]);

/** Variables never handed to a sandboxed command that runs without a question. */
export const SANDBOX_ENV_EXCLUDES = ['VSCODE_IPC_HOOK*', 'VSCODE_GIT_IPC_HANDLE', 'VSCODE_GIT_ASKPASS*', 'GIT_ASKPASS', 'SSH_AUTH_SOCK', 'GPG_AGENT_INFO'];

function decode(method: string, params: unknown): unknown {
  const spec = METHODS[method];
  return spec.decode(params); // throws the engine's own -32602 for malformed params
}

interface PathFact {
  given: string;
  real: string | undefined;
  /** The parent resolved, last component kept (what remove/rename act on). */
  realParent: string | undefined;
  inside: boolean;
  protected: boolean;
  linkedElsewhere: boolean;
}

async function pathFact(ctx: AgentContext, p: string, extraProtected = false): Promise<PathFact> {
  const [real, realParent] = await Promise.all([realPathOf(p), realParentOf(p)]);
  const forms = [real, realParent];
  // A file with other hard links is also somewhere else (e.g. a pnpm store outside the workspace).
  const st = real === undefined ? undefined : await lstat(real).catch(() => undefined);
  const linkedElsewhere = st !== undefined && st.isFile() && st.nlink > 1;
  const inside = !linkedElsewhere && forms.every((f) => f !== undefined && ctx.workspaceRoots.some((r) => isInside(f, r)));
  const prot = extraProtected || [p, ...forms].some((f) => f === undefined || isProtectedPath(f, ctx.protectedRoots));
  return { given: p, real, realParent, inside, protected: prot, linkedElsewhere };
}

function showPath(f: PathFact): string {
  const real = f.real ?? '(cannot be resolved)';
  const links = f.linkedElsewhere ? ' (a file with other hard links)' : '';
  return (real === f.given ? shown(f.given) : `${shown(f.given)} (really ${shown(real)})`) + links;
}

/** The grant prefix for a path: the directory itself, or a file's directory (never / or the home directory). */
function prefixFor(f: PathFact, isDirectoryOp: boolean): string {
  const real = f.real ?? f.given;
  if (isDirectoryOp) return real;
  const dir = path.dirname(real);
  return dir === '/' || dir === os.homedir() ? real : dir;
}

/** Decision for requests that touch paths (reads and writes). */
function decidePaths(
  ctx: AgentContext,
  params: unknown,
  needs: { kind: 'read' | 'write'; fact: PathFact; dirOp: boolean }[],
  what: Described,
): Verdict {
  // Protection is about changes: reading .git/ or .vscode/ inside the workspace needs no question.
  for (const n of needs) if (n.kind === 'read') n.fact.protected = false;
  const asNeeds: Need[] = needs.map((n) => ({
    type: n.kind,
    path: n.fact.real ?? n.fact.given,
    prefix: prefixFor(n.fact, n.dirOp),
    grantable: !n.fact.protected && n.fact.real !== undefined,
  }));
  const protectedAny = needs.some((n) => n.fact.protected);
  if (ctx.policy === 'neverAsk' && !protectedAny) return { kind: 'allow', why: 'policy neverAsk', params };
  if (ctx.policy === 'askOutsideWorkspace' && needs.every((n) => n.fact.inside && !n.fact.protected)) {
    return { kind: 'allow', why: 'inside the workspace', params };
  }
  if (ctx.state.covered(asNeeds)) return { kind: 'allow', why: 'allowed for this session', params };
  if (protectedAny) what.details.push('This touches .vscode/, .git/, a *.code-workspace file or VS Code’s own settings: asked every time, whatever the policy.');
  return { kind: 'ask', needs: asNeeds, what, params };
}

/**
 * A change that runs unasked because its paths lie inside the workspace is sent with a managed
 * sandbox that may write the workspace folders only (minus `.git/`, `.vscode/` and
 * `*.code-workspace`): the engine checks the paths again right before it acts, and
 * fs/writeFile checks the file it really opened before changing a byte. A directory swapped
 * for a symlink after this gate's check (by a concurrent process) therefore cannot redirect
 * the change out of the workspace. A request that brings its own managed sandbox keeps it, if
 * that sandbox writes only inside the workspace and temp dirs; otherwise it is asked.
 */
async function confineUnasked(ctx: AgentContext, method: string, v: Verdict): Promise<Verdict> {
  if (v.kind !== 'allow' || v.why !== 'inside the workspace') return v;
  const params = v.params as Record<string, unknown>;
  const own = sandboxOf(method, params, ctx, ctx.workspaceRoots[0] ?? '/');
  if (own.kind === 'managed') {
    if (await writesStayInside(own, ctx)) return v;
    return { kind: 'ask', needs: [], what: { summary: `${method} with a sandbox that writes outside the workspace`, details: [`Method: ${method}`, `Request: ${redactedJson(params)}`], complete: false, sessionScope: 'Allow for Session allows this request only.' }, params };
  }
  const confined: Record<string, unknown> = { ...params, sandbox: await workspaceOnlySandbox(ctx.workspaceRoots) };
  // fs/writeFile already checks the file it really opened (above); the engine's own no-follow
  // check cannot walk /proc paths, so such requests keep their path.
  if (method === 'fs/writeFile' || params.followSymlinks === false) return { ...v, params: confined };
  const pins: Pinned[] = [];
  for (const key of method === 'fs/copy' || method === 'fs/rename' ? ['sourcePath', 'destinationPath'] : ['path']) {
    const mkdirP = method === 'fs/createDirectory' && params.recursive !== false;
    const r = await pinParent(uriToPath(String(params[key])), ctx.workspaceRoots, ctx.protectedRoots, mkdirP);
    if (r.kind === 'busy') {
      await Promise.all(pins.map((p) => p.close()));
      return { kind: 'deny', error: busy() };
    }
    if (r.kind === 'missing') {
      // No parent directory: answered here as the engine would (a forced delete of nothing
      // succeeds), so a directory raced in afterwards cannot redirect anything.
      await Promise.all(pins.map((p) => p.close()));
      if (method === 'fs/remove' && params.force !== false) return { ...v, params, answer: {} };
      return { kind: 'deny', error: new RpcError(ErrorCodes.NotFound, 'No such file or directory (os error 2)') };
    }
    if (r.kind === 'moved') {
      await Promise.all(pins.map((p) => p.close()));
      return { kind: 'deny', error: new RpcError(ErrorCodes.InvalidRequest, `permission denied: ${method}: the path changed while it was checked (now: ${r.real})`) };
    }
    if (r.kind === 'pinned') {
      pins.push(r.pin);
      confined[key] = r.pin.path;
    }
  }
  return { ...v, params: confined, pins };
}

/**
 * A read that runs unasked because its path lies inside the workspace reads the very file it
 * was allowed for: the file is opened here, checked where it really is, and the engine reads
 * /proc/self/fd/N (a symlink swapped in meanwhile cannot turn it into a read of ~/.ssh).
 */
function pinRead(ctx: AgentContext, method: string, v: Verdict, p: string): Verdict {
  if (v.kind !== 'allow' || v.why !== 'inside the workspace') return v;
  const params = v.params as Record<string, unknown>;
  if (params.followSymlinks === false) return v; // the engine's own no-follow walk cannot take /proc paths
  const prepare = async () => {
    const r = await pinTarget(p, ctx.workspaceRoots, method === 'fs/readDirectory');
    if (r.kind === 'error') throw fsError(r.error);
    if (r.kind === 'busy') throw busy();
    if (r.kind === 'moved') throw new RpcError(ErrorCodes.InvalidRequest, `permission denied: ${method}: the path changed while it was checked (now: ${r.real})`);
    if (r.kind !== 'pinned') return { params, pins: [] };
    return { params: { ...params, path: r.pin.path }, pins: [r.pin] };
  };
  return { ...v, prepare };
}

const busy = () => new RpcError(ErrorCodes.Overloaded, 'server overloaded: too many file operations in flight on the agent endpoint; retry');

/** A managed sandbox that reads everything and writes only the workspace folders (protected entries read-only). */
export async function workspaceOnlySandbox(roots: readonly string[]): Promise<unknown> {
  const entries: unknown[] = [{ path: { type: 'special', value: { kind: 'root' } }, access: 'read' }];
  for (const r of roots) {
    entries.push({ path: { type: 'path', path: pathToFileURL(r).href }, access: 'write' });
    for (const p of [path.join(r, '.git'), path.join(r, '.vscode'), ...(await protectedChildren(r))]) {
      entries.push({ path: { type: 'path', path: pathToFileURL(p).href }, access: 'read', missing_path_behavior: 'skip' });
    }
  }
  return { permissions: { type: 'managed', file_system: { type: 'restricted', entries }, network: 'restricted' } };
}

function redactedJson(params: Record<string, unknown>): string {
  return JSON.stringify({ ...params, dataBase64: typeof params.dataBase64 === 'string' ? `<${Buffer.byteLength(params.dataBase64, 'base64')} bytes>` : undefined });
}

function sessionScopeForPaths(needs: { kind: 'read' | 'write'; fact: PathFact; dirOp: boolean }[]): string {
  if (needs.some((n) => n.fact.protected || n.fact.real === undefined)) return 'Allow for Session allows this request only (protected path).';
  return (
    'Allow for Session: later ' +
    needs.map((n) => `${n.kind === 'read' ? 'reads' : 'changes'} under ${shown(prefixFor(n.fact, n.dirOp))}`).join(' and ') +
    ', on this connection only.'
  );
}

export async function classify(method: string, params: unknown, ctx: AgentContext): Promise<Verdict> {
  if (method === 'initialize') return { kind: 'allow', why: 'handshake', params };
  if (!Object.prototype.hasOwnProperty.call(METHODS, method)) {
    return { kind: 'deny', error: new RpcError(ErrorCodes.MethodNotFound, `method ${method} is not available on the agent endpoint`) };
  }
  const raw = decode(method, params);
  // Some decoders return the bare id/path string, the others an object.
  const decoded = (typeof raw === 'string' ? { processId: raw, path: raw } : raw) as Record<string, unknown>;
  if (FREE_METHODS.has(method)) return { kind: 'allow', why: 'no effect outside the connection', params };
  if (OWN_PROCESS_METHODS.has(method)) {
    const id = String(decoded.processId);
    if (ctx.state.processes.has(id)) return { kind: 'allow', why: 'a process this connection started', params };
    return { kind: 'deny', error: new RpcError(ErrorCodes.InvalidRequest, `permission denied: process ${id} was not started by this connection`) };
  }
  switch (method) {
    case 'fs/readFile':
    case 'fs/readDirectory':
    case 'fs/open':
    case 'fs/walk':
    case 'fs/watch': {
      const p = String(decoded.path);
      const followsLinks = method === 'fs/walk' && (decoded.options as { followDirectorySymlinks?: boolean }).followDirectorySymlinks === true;
      const fact = await pathFact(ctx, p);
      // A walk that follows directory symlinks can leave any root it starts in.
      if (followsLinks) fact.inside = false;
      const verb = { 'fs/readFile': 'read the file', 'fs/readDirectory': 'list the directory', 'fs/open': 'open for reading', 'fs/walk': 'walk the tree under', 'fs/watch': 'watch' }[method];
      const recursive = method === 'fs/watch' && decoded.recursive === true ? ' (recursively)' : followsLinks ? ' (following directory symlinks)' : '';
      const needs = [{ kind: 'read' as const, fact, dirOp: method !== 'fs/readFile' && method !== 'fs/open' }];
      const summary = `${verb} ${showPath(fact)}${recursive}`;
      const v = decidePaths(ctx, params, needs, { summary, details: [`Method: ${method}`, `Path: ${showPath(fact)}${recursive}`], complete: true, sessionScope: sessionScopeForPaths(needs) });
      return method === 'fs/readFile' || method === 'fs/open' || method === 'fs/readDirectory' ? pinRead(ctx, method, v, p) : v;
    }
    case 'fs/writeFile':
    case 'fs/createDirectory':
    case 'fs/remove': {
      const fact = await pathFact(ctx, String(decoded.path));
      const bytes = method === 'fs/writeFile' ? Buffer.byteLength(String(decoded.data), 'base64') : 0;
      const verb = { 'fs/writeFile': `write ${bytes} bytes to`, 'fs/createDirectory': 'create the directory', 'fs/remove': decoded.recursive ? 'delete (recursively)' : 'delete' }[method];
      const needs = [{ kind: 'write' as const, fact, dirOp: method !== 'fs/writeFile' }];
      return confineUnasked(ctx, method, decidePaths(ctx, params, needs, { summary: `${verb} ${showPath(fact)}`, details: [`Method: ${method}`, `Path: ${showPath(fact)}`], complete: true, sessionScope: sessionScopeForPaths(needs) }));
    }
    case 'fs/copy':
    case 'fs/rename': {
      const src = String(decoded.src);
      const carried = (await protectedChildren(src)).length > 0;
      const sf = await pathFact(ctx, src);
      const df = await pathFact(ctx, String(decoded.dst), carried);
      const needs = [
        { kind: method === 'fs/copy' ? ('read' as const) : ('write' as const), fact: sf, dirOp: true },
        { kind: 'write' as const, fact: df, dirOp: true },
      ];
      const verb = method === 'fs/copy' ? 'copy' : 'move';
      const details = [`Method: ${method}`, `From: ${showPath(sf)}`, `To: ${showPath(df)}`];
      if (carried) details.push('The source holds .vscode/, .git/ or *.code-workspace entries that would land in the destination.');
      return confineUnasked(ctx, method, decidePaths(ctx, params, needs, { summary: `${verb} ${showPath(sf)} to ${showPath(df)}`, details, complete: !carried, sessionScope: sessionScopeForPaths(needs) }));
    }
    case 'http/request':
      return decideHttp(ctx, params, decoded);
    case 'process/start':
      return decideStart(ctx, params, decoded);
  }
  return { kind: 'deny', error: new RpcError(ErrorCodes.MethodNotFound, `method ${method} is not available on the agent endpoint`) };
}

function decideHttp(ctx: AgentContext, params: unknown, d: Record<string, unknown>): Verdict {
  const url = String(d.url);
  let origin = url;
  try {
    origin = new URL(url).origin;
  } catch {
    // the engine rejects it; the question still shows it
  }
  const body = d.body as Buffer | undefined;
  const headers = (d.headers as { name: string; value: string }[]).map((h) => `${shown(h.name)}: ${shown(h.value)}`);
  const need: Need = { type: 'http', origin, grantable: true };
  if (ctx.policy === 'neverAsk') return { kind: 'allow', why: 'policy neverAsk', params };
  if (ctx.state.covered([need])) return { kind: 'allow', why: 'allowed for this session', params };
  const summary = `make an HTTP ${shown(String(d.method))} request to ${shown(url)}${body && body.length > 0 ? ` sending ${body.length} bytes` : ''}`;
  const details = [`Method: http/request`, `HTTP method: ${shown(String(d.method))}`, `URL: ${shown(url)}`, `Headers: ${headers.length ? headers.join(', ') : '(none)'}`];
  if (body && body.length > 0) details.push(`Body: ${body.length} bytes: ${shown(body.subarray(0, 2048).toString('utf8'))}${body.length > 2048 ? ' … (cut)' : ''}`);
  return { kind: 'ask', needs: [need], what: { summary, details, complete: headers.length === 0 && !body?.length, sessionScope: `Allow for Session: later HTTP requests to ${shown(origin)}, on this connection only.` }, params };
}

/** Codex's workspace-write sandbox (protocol §6b), for commands that arrive without one. */
export function workspaceWriteSandbox(cwd: string, roots: readonly string[]): unknown {
  const special = (kind: string, subpath?: string) => ({ type: 'special', value: subpath ? { kind, subpath } : { kind } });
  const skip = (subpath: string) => ({ path: special('project_roots', subpath), access: 'read', missing_path_behavior: 'skip' });
  return {
    permissions: {
      type: 'managed',
      file_system: {
        type: 'restricted',
        entries: [
          { path: special('root'), access: 'read' },
          { path: special('project_roots'), access: 'write' },
          { path: special('slash_tmp'), access: 'write' },
          { path: special('tmpdir'), access: 'write' },
          skip('.git'),
          skip('.agents'),
          skip('.codex'),
          skip('.aws'),
        ],
      },
      network: 'restricted',
    },
    cwd: pathToFileURL(cwd).href,
    workspaceRoots: roots.map((r) => pathToFileURL(r).href),
    windowsSandboxLevel: 'disabled',
    windowsSandboxProxySettingsMode: 'reconcile',
    useLegacyLandlock: false,
  };
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

/** The sandbox exactly as the engine decodes it (its own decoder when it has one). */
function sandboxOf(method: string, params: Record<string, unknown>, ctx: AgentContext, cwd: string): SandboxProfile {
  const d = decode(method, params) as { sandbox?: SandboxProfile };
  if (d.sandbox && typeof d.sandbox === 'object' && 'kind' in d.sandbox) return d.sandbox;
  return parseSandbox(params.sandbox, { cwd, workspaceRoots: [...ctx.workspaceRoots], tmpDir: os.tmpdir(), homeDir: os.homedir() });
}

async function decideStart(ctx: AgentContext, params: unknown, d: Record<string, unknown>): Promise<Verdict> {
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
  const cwdReal = (await realPathOf(cwd)) ?? cwd;
  const contained = sandbox.kind === 'managed' && sandbox.network === 'restricted' && (await writesStayInside(sandbox, ctx));

  const command = commandLine(argv);
  const details = [
    'Method: process/start',
    `Command: ${command}`,
    ...argv.map((a, i) => `  argv[${i}]: ${shown(a)}`),
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
  const envChanges = Object.keys(env).length + Object.keys(envPolicy?.set ?? {}).length;
  if (envChanges > 0) flags.push(`${envChanges} environment variable${envChanges === 1 ? '' : 's'} set`);
  if (envPolicy && envPolicy.inherit !== 'none' && envPolicy.ignoreDefaultExcludes) flags.push('passes on your *KEY*/*SECRET*/*TOKEN* variables');
  const summary = `run ${command} in ${shown(cwdReal)}${flags.length ? ` (${flags.join('; ')})` : ''}; input to it will be allowed`;
  const envKey = JSON.stringify({ env, envPolicy: envPolicy ?? null, arg0: arg0 ?? null, tty: !!raw.tty, sandbox: sandbox.kind === 'managed' ? sandbox.writableRoots : 'none' });
  const need: Need = { type: 'run', program: argv[0], cwd: cwdReal, envKey, grantable: true };
  const what: Described = {
    summary,
    details,
    complete: false,
    sessionScope: `Allow for Session: later runs of ${shown(argv[0])} (any arguments) in ${shown(cwdReal)} with the same environment and sandbox settings, on this connection only.`,
  };

  if (ctx.policy === 'neverAsk') return { kind: 'allow', why: 'policy neverAsk', params: out };
  if (contained && sandbox.kind === 'managed' && ctx.policy === 'askOutsideWorkspace') {
    // Runs without a question: nothing of the user's secrets goes with it (a command the user
    // approved gets exactly the sandbox shown in the question).
    const [sockets, secrets] = await Promise.all([hostSockets(), credentialPaths(ctx.homeDir, ctx.protectedRoots)]);
    // Never hide what the sandbox may write (the workspace itself could sit under a hidden path).
    const hidden = [...new Set([...sockets, ...secrets])].filter((h) => !sandbox.writableRoots.some((w) => isInside(w, h)));
    return { kind: 'allow', why: 'sandboxed inside the workspace', params: withSafeEnv({ ...out, sandbox: withHiddenPaths(out.sandbox, hidden) }, envPolicy) };
  }
  if (ctx.state.covered([need])) return { kind: 'allow', why: 'allowed for this session', params: out };
  return { kind: 'ask', needs: [need], what, params: out };
}

/** Every writable root of a managed sandbox lies (really) inside a workspace folder or a temp dir. */
async function writesStayInside(s: Extract<SandboxProfile, { kind: 'managed' }>, ctx: AgentContext): Promise<boolean> {
  if (s.fullWrite) return false;
  const allowed = [...ctx.workspaceRoots, ...ctx.tmpRoots];
  for (const w of s.writableRoots) {
    const real = await realPathOf(w);
    if (real === undefined || !allowed.some((r) => isInside(real, r))) return false;
  }
  return true;
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
