// In-process enforcement of a managed sandbox for fs/* methods: the same profile a sandboxed
// process gets, applied before the operation. Paths are judged where they really land
// (./resolve.ts: every symlink followed, dangling ones too), so a link inside a writable root
// cannot reach outside it. A refusal carries the error the reference's sandboxed fs helper
// returns for the same operation (measured): a write where only reading is allowed fails with
// EROFS → -32603 "Read-only file system (os error 30)"; any access to a `none` path with
// EACCES → -32600 "Permission denied (os error 13)"; a write below a missing directory
// outside the writable roots with ENOENT → -32004.
//
// Check-then-act: a process that can write inside a writable root can swap a checked
// directory for a symlink between this check and the operation. So the check here only gives
// the reference's error for the path as asked; the operation itself (../fs/confined.ts,
// ../fs/fs-methods.ts writeFileVerified) then opens first and judges again, with
// `confinement()`, where the opened descriptor really is (/proc/self/fd/N) before using it.
import path from 'node:path';
import { internalError, type RpcError } from '../../protocol/errors';
import { fsError } from '../os-errors';
import { accessFor, type ManagedSandboxProfile, type SandboxProfile } from './profile';
import { withCarveOuts } from './carve-outs';
import { realFs, resolvePath, resolveProfile, writableSymlinkCrossing, type FsProbe } from './resolve';
import { isInside } from '../paths';

function errno(code: 'EROFS' | 'EACCES' | 'ENOENT', p: string): RpcError {
  return fsError(Object.assign(new Error(`${code}: ${p}`), { code }));
}

export interface FsAccessRequest {
  /** Absolute local path of the request. */
  path: string;
  intent: 'read' | 'write';
  /**
   * Does the operation act on what a final symlink points to (writeFile, readFile) or on the
   * link itself (remove, rename)? Default true.
   */
  followFinal?: boolean;
  /** A recursive operation on a tree: every rule inside it must allow `intent` too. */
  tree?: boolean;
}

/** The path an operation really touches (see FsAccessRequest.followFinal). */
function target(p: string, followFinal: boolean, probe: FsProbe): { path: string; parentExists: boolean } {
  const abs = path.isAbsolute(p) ? p : path.resolve(p); // not normalized: see resolvePath
  if (!followFinal && abs !== '/') {
    const parent = resolvePath(path.dirname(abs), probe);
    return { path: path.join(parent.path, path.basename(abs)), parentExists: parent.exists };
  }
  const res = resolvePath(abs, probe);
  const parentExists = res.path === '/' || probe.kind(path.dirname(res.path)) !== 'missing';
  return { path: res.path, parentExists };
}

/** Throws the reference's error when `profile` does not allow the access; resolved profiles may be passed in. */
export function checkFsAccess(profile: SandboxProfile, req: FsAccessRequest, probe: FsProbe = realFs, resolved?: ManagedSandboxProfile): void {
  if (profile.kind !== 'managed') return;
  const base = resolveProfile(profile, probe);
  // A write under a profile whose read-only paths cross a replaceable symlink: refused whatever
  // it writes, in the reference's words (its sandboxed fs helper fails to build; reads still run there).
  const crossing = req.intent === 'write' ? writableSymlinkCrossing(profile, base, probe) : undefined;
  if (crossing) throw internalError(`fs sandbox helper failed with status exit status: 1: error building bubblewrap command: Fatal error: ${crossing}`);
  const prof = resolved ?? protectedFor(base, req.intent, probe);
  let t: { path: string; parentExists: boolean };
  try {
    t = target(req.path, req.followFinal ?? true, probe);
  } catch (e) {
    throw fsError(e); // ELOOP
  }
  judge(prof, t.path, t.parentExists, req);
}

/**
 * Writes are judged against the profile with the engine's own carve-outs (./carve-outs.ts), as
 * a sandboxed process gets them: a nested `.git` or a hard-linked file is read-only to both.
 * Reads need no scan (carve-outs only take writing away). Fake probes (unit tests) get none.
 */
function protectedFor(prof: ManagedSandboxProfile, intent: 'read' | 'write', probe: FsProbe): ManagedSandboxProfile {
  return intent === 'write' && probe === realFs ? withCarveOuts(prof).profile : prof;
}

/** The decision on a resolved path `at` (no link left in it). */
function judge(prof: ManagedSandboxProfile, at: string, parentExists: boolean, req: Omit<FsAccessRequest, 'followFinal'>): void {
  const deny = (access: 'read' | 'none') => {
    if (access === 'none') throw errno('EACCES', req.path);
    if (!parentExists) throw errno('ENOENT', req.path);
    throw errno('EROFS', req.path);
  };
  const access = accessFor(prof, at);
  if (access === 'none') deny('none');
  if (req.intent === 'write' && access !== 'write') deny(access);
  if (req.tree) {
    for (const r of prof.rules) {
      if (r.path === at || !isInside(r.path, at)) continue;
      const inner = accessFor(prof, r.path);
      if (inner === 'none') deny('none');
      if (req.intent === 'write' && inner !== 'write') deny(inner);
    }
  }
}

/**
 * Judges paths the kernel reported for an open descriptor (readlink /proc/self/fd/N, or a
 * pinned directory's real path joined with a name): already free of links, so they are judged
 * as written, without looking at the filesystem again (a racing process could change it).
 */
export interface Confinement {
  check(real: string, intent: 'read' | 'write', tree?: boolean): void;
}

/** The profile resolved once, for the checks an operation makes on what it really opened. */
export function confinement(profile: ManagedSandboxProfile, probe: FsProbe = realFs): Confinement {
  const prof = resolveProfile(profile, probe);
  let forWrites: ManagedSandboxProfile | undefined;
  return {
    check: (real, intent, tree = false) =>
      judge(intent === 'write' ? (forWrites ??= protectedFor(prof, 'write', probe)) : prof, real, true, { path: real, intent, tree }),
  };
}

/** Several accesses against one profile (resolved once). */
export function checkFsAccesses(profile: SandboxProfile, reqs: FsAccessRequest[], probe: FsProbe = realFs): void {
  if (profile.kind !== 'managed') return;
  const resolved = protectedFor(resolveProfile(profile, probe), reqs.some((r) => r.intent === 'write') ? 'write' : 'read', probe);
  for (const r of reqs) checkFsAccess(profile, r, probe, resolved);
}
