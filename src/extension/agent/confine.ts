// Unasked changes and reads inside the workspace are held to the workspace while the engine
// acts (agent-pin.ts): a concurrent process may swap a directory on the path for a symlink
// after the gate's check. Changes carry a sandbox that writes only the workspace and get their
// directory pinned; reads get their file pinned just before the engine reads it. Requests a
// session grant covers, or the user just allowed, are held the same way to the granted
// folders / the folders the question named (Verdict.confine says which).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCodes, RpcError } from '../../protocol/errors';
import { fsError } from '../../server/os-errors';
import { uriToPath } from '../../server/paths';
import { protectedChildren } from './paths';
import { pinParent, pinTarget, pinUnsupported, type Pinned } from './pin';
import { sandboxOf, writesStayInside, type AgentContext, type Verdict } from './verdict';

/**
 * A change that runs unasked because its paths lie inside the workspace is sent with a managed
 * sandbox that may write the workspace folders only (minus `.git/`, `.vscode/` and
 * `*.code-workspace`): the engine checks the paths again right before it acts, and
 * fs/writeFile checks the file it really opened before changing a byte. A directory swapped
 * for a symlink after this gate's check (by a concurrent process) therefore cannot redirect
 * the change out of the workspace. A request that brings its own managed sandbox keeps it, if
 * that sandbox writes only inside the workspace and temp dirs; otherwise it is asked.
 */
export async function confineUnasked(ctx: AgentContext, method: string, v: Verdict): Promise<Verdict> {
  if (ctx.onHost) return v; // the host's paths: see pinRead
  const unpinnable = cannotHold(ctx, method, v);
  if (unpinnable) return unpinnable;
  if (v.kind !== 'allow' || !v.confine) return v;
  const { roots, exact } = v.confine;
  const params = v.params as Record<string, unknown>;
  const own = sandboxOf(method, params, ctx, ctx.workspaceRoots[0] ?? '/');
  if (own.kind === 'managed') {
    // Allowed by the user (for the session or this once): their answer stands; the request's
    // own sandbox is kept and the engine applies it (not pinned: see below for why not).
    if (exact || (await writesStayInside(own, { ...ctx, workspaceRoots: roots }))) return v;
    return { kind: 'ask', needs: [], what: { summary: `${method} with a sandbox that writes outside the workspace`, details: [`Method: ${method}`, `Request: ${redactedJson(params)}`], complete: false, sessionScope: 'Allow for Session allows this request only.' }, params };
  }
  const confined: Record<string, unknown> = { ...params, sandbox: await workspaceOnlySandbox(roots) };
  // fs/writeFile already checks the file it really opened (above); the engine's own no-follow
  // check cannot walk /proc paths, so such requests keep their path.
  if (method === 'fs/writeFile' || params.followSymlinks === false) return { ...v, params: confined };
  const pins: Pinned[] = [];
  for (const key of method === 'fs/copy' || method === 'fs/rename' ? ['sourcePath', 'destinationPath'] : ['path']) {
    const mkdirP = method === 'fs/createDirectory' && params.recursive !== false;
    const r = await pinParent(uriToPath(String(params[key])), roots, ctx.protectedRoots, mkdirP, exact, ctx.platform);
    if (r.kind === 'unsupported') {
      await Promise.all(pins.map((p) => p.close()));
      return { kind: 'deny', error: refusedUnpinned(method, r.reason) };
    }
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
export function pinRead(ctx: AgentContext, method: string, v: Verdict, p: string): Verdict {
  // A remote environment's path is the host's: a pin here would open this machine's file of
  // that name (or fail), and hand the host a /proc/self/fd path of this process.
  if (ctx.onHost) return v;
  if (v.kind !== 'deny' && (v.params as Record<string, unknown>).followSymlinks === false) return v; // the engine's own no-follow walk cannot take /proc paths
  const unpinnable = cannotHold(ctx, method, v);
  if (unpinnable) return unpinnable;
  if (v.kind !== 'allow' || !v.confine) return v;
  const roots = v.confine.roots;
  const params = v.params as Record<string, unknown>;
  const prepare = async () => {
    const r = await pinTarget(p, roots, method === 'fs/readDirectory', ctx.platform);
    if (r.kind === 'error') throw fsError(r.error);
    if (r.kind === 'unsupported') throw refusedUnpinned(method, r.reason);
    if (r.kind === 'busy') throw busy();
    if (r.kind === 'moved') throw new RpcError(ErrorCodes.InvalidRequest, `permission denied: ${method}: the path changed while it was checked (now: ${r.real})`);
    if (r.kind !== 'pinned') return { params, pins: [] };
    return { params: { ...params, path: r.pin.path }, pins: [r.pin] };
  };
  return { ...v, prepare };
}

/**
 * Where paths cannot be pinned (not Linux), a request the gate would hold to its folders —
 * allowed because it lies inside them, or asked and then held to what the question named — is
 * refused before anything is asked: run unpinned it would be checked on its path and performed
 * later, and a symlink swapped in between would redirect it. Not refused, as on Linux not
 * pinned: the endpoint of a remote environment (its host's engine holds the paths), the
 * neverAsk policy (it asks for no protection), a protected path allowed for the one request.
 */
function cannotHold(ctx: AgentContext, method: string, v: Verdict): Verdict | undefined {
  if (ctx.onHost || v.kind === 'deny' || (v.kind === 'allow' && !v.confine) || (v.kind === 'ask' && !v.held)) return undefined;
  const reason = pinUnsupported(ctx.platform);
  return reason ? { kind: 'deny', error: refusedUnpinned(method, reason) } : undefined;
}

const refusedUnpinned = (method: string, reason: string) =>
  new RpcError(ErrorCodes.InvalidRequest, `permission denied: ${method}: the agent endpoint holds a file request to the folder it was allowed in by pinning its path, and cannot here: ${reason}. Refused rather than checked on the path and performed later (execServer.approval.policy neverAsk runs file requests without this protection)`);

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
