// The agent gate's classifier: for one request of an agent connection — any method, any
// handshake state — decide from the method and its params whether it runs, is refused, or
// needs the user's answer, and say in full what it would do. Params are decoded with the
// engine's own decoders (so the gate judges exactly the paths the engine will use); paths are
// judged by where they really lead. Unknown methods are refused.
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { ErrorCodes, RpcError } from '../../protocol/errors';
import type { RequestMethod } from '../../protocol/types';
import { METHODS } from '../../server/router';
import { covers, type Need } from './grants';
import { isInside, isProtectedPath, protectedChildren, realParentOf, realPathOf } from './paths';
import { confineUnasked, pinRead } from './confine';
import { decideHttp } from './http';
import { CREDENTIAL_PATHS } from './sockets';
import { decideStart } from './start';
import { decode, type AgentContext, type Described, type Verdict } from './verdict';
import { shown } from '../approval';

export type { AgentContext, Described, Verdict } from './verdict';
export { SANDBOX_ENV_EXCLUDES, workspaceWriteSandbox } from './start';
export { workspaceOnlySandbox } from './confine';

/**
 * The gate's rule for every method of the protocol, keyed by the engine's method type: a method
 * added to the protocol (RequestMap) without a rule here fails to compile.
 * - `handshake`: initialize, judged by the endpoint itself;
 * - `free`: host facts, and handles/watches the engine scopes to the connection (the
 *   engine reads no configuration file for environmentConfig/read: it answers the home dir and
 *   hostname only);
 * - `ownProcess`: acts on a process of the connection, allowed on its own processes only;
 * - `decided`: has its own rule in classify() (path reads/changes, path facts such as metadata, http, process/start);
 * - `refused`: fs/writeBlock writes into a replace stream, which fs/open never opens for an agent;
 * - `unavailable`: not offered to agents (capability discovery lists what it finds under the
 *   host's roots without a question per path).
 */
type GateRule = 'handshake' | 'free' | 'ownProcess' | 'decided' | 'refused' | 'unavailable';
const RULES: Record<RequestMethod, GateRule> = {
  initialize: 'handshake',
  'environment/info': 'free',
  'environment/status': 'free',
  'environmentConfig/read': 'free',
  'fs/readBlock': 'free',
  'fs/close': 'free',
  'fs/unwatch': 'free',
  'process/read': 'ownProcess',
  'process/write': 'ownProcess',
  'process/signal': 'ownProcess',
  'process/terminate': 'ownProcess',
  'process/resize': 'ownProcess',
  'process/closeStdin': 'ownProcess',
  'process/ack': 'ownProcess',
  'fs/readFile': 'decided',
  'fs/getMetadata': 'decided',
  'fs/canonicalize': 'decided',
  'fs/watchMissing': 'decided',
  'fs/readDirectory': 'decided',
  'fs/open': 'decided',
  'fs/walk': 'decided',
  'fs/watch': 'decided',
  'fs/writeFile': 'decided',
  'fs/createDirectory': 'decided',
  'fs/remove': 'decided',
  'fs/copy': 'decided',
  'fs/rename': 'decided',
  'http/request': 'decided',
  'process/start': 'decided',
  'fs/writeBlock': 'refused',
  'capabilityRoots/discoverV1': 'unavailable',
  'capabilities/discoverV2': 'unavailable',
};
const methodsWith = (rule: GateRule): ReadonlySet<string> => new Set(Object.entries(RULES).filter(([, r]) => r === rule).map(([m]) => m));
const FREE_METHODS = methodsWith('free');
const OWN_PROCESS_METHODS = methodsWith('ownProcess');
const REFUSED_METHODS = methodsWith('refused');
const UNAVAILABLE_METHODS = methodsWith('unavailable');

interface PathFact {
  given: string;
  real: string | undefined;
  /** The parent resolved, last component kept (what remove/rename act on). */
  realParent: string | undefined;
  inside: boolean;
  protected: boolean;
  linkedElsewhere: boolean;
  /** The user's home directory, real (a grant never spans it whole: see prefixFor). */
  home: string;
  /** The request may leave the path (a walk following directory symlinks): no grant covers it. */
  leaves?: boolean;
}

async function pathFact(ctx: AgentContext, p: string, extraProtected = false): Promise<PathFact> {
  // A remote host's path: this machine's filesystem says nothing about it. Not resolved here,
  // so outside and protected: asked every time, whatever the policy, never granted for a folder.
  if (ctx.onHost) return { given: p, real: undefined, realParent: undefined, inside: false, protected: true, linkedElsewhere: false, home: ctx.homeDir };
  const [real, realParent] = await Promise.all([realPathOf(p), realParentOf(p)]);
  const forms = [real, realParent];
  // A file with other hard links is also somewhere else (e.g. a pnpm store outside the workspace).
  const st = real === undefined ? undefined : await lstat(real).catch(() => undefined);
  const linkedElsewhere = st !== undefined && st.isFile() && st.nlink > 1;
  const inside = !linkedElsewhere && forms.every((f) => f !== undefined && ctx.workspaceRoots.some((r) => isInside(f, r)));
  const prot = extraProtected || [p, ...forms].some((f) => f === undefined || isProtectedPath(f, ctx.protectedRoots));
  const home = (await realPathOf(ctx.homeDir)) ?? ctx.homeDir;
  return { given: p, real, realParent, inside, protected: prot, linkedElsewhere, home };
}

/** A path fact whose answer tells about a secret: inside a credential store of the home directory, or /proc. */
function sensitiveFact(f: PathFact, homeDir: string): boolean {
  const stores = CREDENTIAL_PATHS.flatMap((c) => [path.join(homeDir, c), path.join(f.home, c)]);
  return [f.given, f.real, f.realParent].some((p) => p !== undefined && (isInside(p, '/proc') || stores.some((st) => isInside(p, st))));
}

function showPath(f: PathFact): string {
  const real = f.real ?? '(cannot be resolved)';
  const links = f.linkedElsewhere ? ' (a file with other hard links)' : '';
  return (real === f.given ? shown(f.given) : `${shown(f.given)} (really ${shown(real)})`) + links;
}

/**
 * The grant prefix for a path: the directory itself, or a file's directory. Never a directory
 * that holds the home directory (/, /home, ~ itself): a grant there would cover ~/.ssh. A file
 * directly in one is granted alone; a directory operation on one is not grantable (undefined):
 * "Allow for Session" on listing ~ must not allow reading every file under it.
 */
function prefixFor(f: PathFact, isDirectoryOp: boolean): string | undefined {
  const real = f.real ?? f.given;
  const holdsHome = (d: string) => isInside(f.home, d);
  if (isDirectoryOp) return holdsHome(real) ? undefined : real;
  const dir = path.dirname(real);
  return holdsHome(dir) ? real : dir;
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
    prefix: prefixFor(n.fact, n.dirOp) ?? n.fact.given,
    // A file with other hard links is also somewhere else: a folder grant never covers it.
    grantable: !n.fact.protected && n.fact.real !== undefined && !n.fact.linkedElsewhere && !n.fact.leaves && prefixFor(n.fact, n.dirOp) !== undefined,
  }));
  const protectedAny = needs.some((n) => n.fact.protected);
  if (ctx.policy === 'neverAsk' && !protectedAny) return { kind: 'allow', why: 'policy neverAsk', params };
  if (ctx.policy === 'askOutsideWorkspace' && needs.every((n) => n.fact.inside && !n.fact.protected)) {
    return { kind: 'allow', why: 'inside the workspace', params, confine: { roots: ctx.workspaceRoots, exact: false } };
  }
  if (ctx.state.covered(asNeeds)) {
    // Held to the granted folders while the engine acts, as workspace requests are held to the
    // workspace: a folder the user granted may be one a concurrent process can change. (A
    // protected path is only ever allowed for the one request, and not pinned: a pin refuses it.)
    if (protectedAny) return { kind: 'allow', why: 'allowed by the user', params };
    const roots = [...new Set(ctx.state.grants.filter((g) => asNeeds.some((n) => covers(g, { ...n, grantable: true }))).map((g) => (g as { prefix: string }).prefix))];
    return { kind: 'allow', why: 'allowed for this session', params, confine: { roots, exact: true } };
  }
  if (protectedAny) what.details.push('This touches .vscode/, .git/, a *.code-workspace file or VS Code’s own settings: asked every time, whatever the policy.');
  return { kind: 'ask', needs: asNeeds, what, params, held: !protectedAny };
}

function sessionScopeForPaths(needs: { kind: 'read' | 'write'; fact: PathFact; dirOp: boolean }[]): string {
  if (needs.some((n) => n.fact.protected || n.fact.real === undefined)) return 'Allow for Session allows this request only (protected path).';
  if (needs.some((n) => n.fact.linkedElsewhere)) return 'Allow for Session allows this request only (a file with other hard links).';
  if (needs.some((n) => n.fact.leaves)) return 'Allow for Session allows this request only (a walk that follows directory symlinks can reach anywhere).';
  if (needs.some((n) => prefixFor(n.fact, n.dirOp) === undefined)) return 'Allow for Session allows this request only (a folder that holds your home directory).';
  return (
    'Allow for Session: later ' +
    needs.map((n) => `${n.kind === 'read' ? 'reads' : 'changes'} under ${shown(prefixFor(n.fact, n.dirOp) ?? n.fact.given)}`).join(' and ') +
    ', on this connection only.'
  );
}

/** Every method the gate has a rule for; any other engine method is refused until it gets one. */
export function gatedMethods(): string[] {
  return Object.keys(RULES);
}

/** classify() reads nothing of the context but the connection's state for `method` (no path facts, no sandbox question). */
export function needsOnlyState(method: string): boolean {
  return method === 'initialize' || FREE_METHODS.has(method) || OWN_PROCESS_METHODS.has(method);
}

export async function classify(method: string, params: unknown, ctx: AgentContext): Promise<Verdict> {
  if (method === 'initialize') return { kind: 'allow', why: 'handshake', params };
  if (!Object.prototype.hasOwnProperty.call(METHODS, method) || UNAVAILABLE_METHODS.has(method)) {
    return { kind: 'deny', error: new RpcError(ErrorCodes.MethodNotFound, `method ${method} is not available on the agent endpoint`) };
  }
  if (REFUSED_METHODS.has(method)) {
    return { kind: 'deny', error: new RpcError(ErrorCodes.InvalidRequest, `${method} is not available on the agent endpoint: write with fs/writeFile`) };
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
      // A replace stream writes (fs/writeBlock, and fs/close alone replaces the file with an
      // empty one); the gate judges fs/open as a read, so an agent gets no write streams.
      if (method === 'fs/open' && decoded.mode === 'replace') {
        return { kind: 'deny', error: new RpcError(ErrorCodes.InvalidRequest, 'fs/open with mode `replace` is not available on the agent endpoint: write with fs/writeFile') };
      }
      const p = String(decoded.path);
      const followsLinks = method === 'fs/walk' && (decoded.options as { followDirectorySymlinks?: boolean }).followDirectorySymlinks === true;
      const fact = await pathFact(ctx, p);
      // A walk that follows directory symlinks can leave any root it starts in.
      if (followsLinks) {
        fact.inside = false;
        fact.leaves = true;
      }
      const verb = { 'fs/readFile': 'read the file', 'fs/readDirectory': 'list the directory', 'fs/open': 'open for reading', 'fs/walk': 'walk the tree under', 'fs/watch': 'watch' }[method];
      const recursive = method === 'fs/watch' && decoded.recursive === true ? ' (recursively)' : followsLinks ? ' (following directory symlinks)' : '';
      const needs = [{ kind: 'read' as const, fact, dirOp: method !== 'fs/readFile' && method !== 'fs/open' }];
      const summary = `${verb} ${showPath(fact)}${recursive}`;
      const v = decidePaths(ctx, params, needs, { summary, details: [`Method: ${method}`, `Path: ${showPath(fact)}${recursive}`], complete: true, sessionScope: sessionScopeForPaths(needs) });
      return method === 'fs/readFile' || method === 'fs/open' || method === 'fs/readDirectory' ? pinRead(ctx, method, v, p) : v;
    }
    case 'fs/getMetadata':
    case 'fs/canonicalize':
    case 'fs/watchMissing': {
      // What a path is, where it really leads, when it appears: facts about a file are a read
      // of it (`~/.ssh/id_ed25519` exists, its size and times; `/proc/<pid>/cwd` is where a
      // process works). Those in a credential store or /proc are judged as fs/readFile of the
      // path is, under every policy that asks; the others run unasked, also under alwaysAsk:
      // Codex probes the metadata of `.git` in every ancestor of the workspace and of
      // `~/.agents/skills` at each turn (18 questions in one apply_patch turn when all of them
      // asked, each holding the command's own question behind it). A remote host's paths cannot
      // be judged here; there they stay unasked (what is read of them is asked).
      if (ctx.onHost) return { kind: 'allow', why: 'a host path fact (its reads are asked)', params };
      const paths = method === 'fs/watchMissing' ? (decoded.missing as string[]) : [String(decoded.path)];
      const facts = await Promise.all(paths.map((p) => pathFact(ctx, p)));
      if (ctx.policy !== 'neverAsk' && !facts.some((f) => sensitiveFact(f, ctx.homeDir))) {
        return { kind: 'allow', why: 'a path fact outside the credential stores', params };
      }
      const verb = { 'fs/getMetadata': 'read the metadata of', 'fs/canonicalize': 'resolve the real path of', 'fs/watchMissing': 'watch for the creation of' }[method];
      const needs = facts.map((fact) => ({ kind: 'read' as const, fact, dirOp: false }));
      const shownPaths = facts.map(showPath).join(', ');
      return decidePaths(ctx, params, needs, { summary: `${verb} ${shownPaths}`, details: [`Method: ${method}`, ...facts.map((f) => `Path: ${showPath(f)}`)], complete: true, sessionScope: sessionScopeForPaths(needs) });
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
      const carried = !ctx.onHost && (await protectedChildren(src)).length > 0;
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
      if (ctx.onHost) return { kind: 'deny', error: new RpcError(ErrorCodes.InvalidRequest, `permission denied: http/request is not available on the agent endpoint of ${JSON.stringify(ctx.onHost.name)}`) };
      return decideHttp(ctx, params, decoded);
    case 'process/start':
      return decideStart(ctx, params, decoded);
  }
  return { kind: 'deny', error: new RpcError(ErrorCodes.MethodNotFound, `method ${method} is not available on the agent endpoint`) };
}
