// In-process enforcement of a managed sandbox for fs/* methods: the same profile a sandboxed
// process gets, applied before the operation. Paths are judged where they really land
// (./resolve.ts: every symlink followed, dangling ones too), so a link inside a writable root
// cannot reach outside it. A refusal carries the error the reference's sandboxed fs helper
// returns for the same operation (measured): a write where only reading is allowed fails with
// EROFS → -32603 "Read-only file system (os error 30)"; any access to a `none` path with
// EACCES → -32600 "Permission denied (os error 13)"; a write below a missing directory
// outside the writable roots with ENOENT → -32004.
//
// Limit (documented in docs/security.md): check-then-act. A process that can write inside a writable
// root can swap a checked directory for a symlink between our check and the operation.
// fs/writeFile closes that window by checking the file it really opened before writing
// (../fs/fs-methods.ts writeFileVerified); the other methods keep it (one event-loop turn).
import fs from 'node:fs';
import path from 'node:path';
import type { RpcError } from '../../protocol/errors';
import { fsError } from '../os-errors';
import { accessFor, isInside, type ManagedSandboxProfile, type SandboxProfile } from './profile';
import { realFs, resolvePath, resolveProfile, type FsProbe } from './resolve';

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
  const prof = resolved ?? resolveProfile(profile, probe);
  let t: { path: string; parentExists: boolean };
  try {
    t = target(req.path, req.followFinal ?? true, probe);
  } catch (e) {
    throw fsError(e); // ELOOP
  }
  const deny = (access: 'read' | 'none') => {
    if (access === 'none') throw errno('EACCES', req.path);
    if (!t.parentExists) throw errno('ENOENT', req.path);
    throw errno('EROFS', req.path);
  };
  const access = accessFor(prof, t.path);
  if (access === 'none') deny('none');
  if (req.intent === 'write' && access !== 'write') deny(access);
  if (req.tree) {
    for (const r of prof.rules) {
      if (r.path === t.path || !isInside(r.path, t.path)) continue;
      const inner = accessFor(prof, r.path);
      if (inner === 'none') deny('none');
      if (req.intent === 'write' && inner !== 'write') deny(inner);
    }
  }
}

/** Several accesses against one profile (resolved once). */
export function checkFsAccesses(profile: SandboxProfile, reqs: FsAccessRequest[], probe: FsProbe = realFs): void {
  if (profile.kind !== 'managed') return;
  const resolved = resolveProfile(profile, probe);
  for (const r of reqs) checkFsAccess(profile, r, probe, resolved);
}

/** Is `p` an existing directory (a recursive remove/copy/rename then acts on a tree)? */
export function isDirectory(p: string): boolean {
  try {
    return fs.lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}
