// capabilityRoots/discoverV1 (../discovery/roots.ts) and capabilities/discoverV2
// (../discovery/discover-v2.ts) method table. Decoding follows the reference's messages
// (measured on 0.169 and 0.171): a malformed root fails the whole call with -32602, more than
// 128 roots with -32600; a root's own failure is in its `error`. discoverV2's `sandbox` is a
// FileSystemSandboxContext whose permissions, cwd and windowsSandboxLevel are required.
import os from 'node:os';
import { Messages, invalidParams, invalidRequest } from '../../protocol/errors';
import { MAX_CAPABILITY_ROOTS, discoverRoots, type CapabilityRootQuery } from '../discovery/roots';
import { discoverV2 } from '../discovery/discover-v2';
import { CAN_PIN } from '../fs/confined';
import * as P from '../params';
import { uriToPath } from '../paths';
import { parseSandbox, type SandboxProfile } from '../sandbox/profile';
import { spec, type DiscoveryMethod, type MethodTable } from './spec';

const WINDOWS_SANDBOX_LEVELS = ['disabled', 'restricted-token', 'elevated', 'mxc'] as const;

/** A root's `sandbox` (the reference's WireFileSystemSandboxContext: permissions + windowsSandboxLevel, cwd and roots optional). */
function rootSandbox(raw: unknown, rootPath: string): SandboxProfile {
  if (raw === undefined || raw === null) return { kind: 'none', type: 'absent' };
  const o = P.object(raw, 'WireFileSystemSandboxContext');
  if (o.permissions === undefined) throw invalidParams(Messages.missingField('permissions'));
  if (o.windowsSandboxLevel === undefined) throw invalidParams(Messages.missingField('windowsSandboxLevel'));
  P.variant(o, 'windowsSandboxLevel', WINDOWS_SANDBOX_LEVELS);
  return parseSandbox(o, { cwd: rootPath, tmpDir: os.tmpdir() });
}

/** discoverV2's `sandbox` (FileSystemSandboxContext): fields checked in the reference's order. */
function contextSandbox(raw: unknown): SandboxProfile {
  if (raw === undefined || raw === null) return { kind: 'none', type: 'absent' };
  const o = P.object(raw, 'FileSystemSandboxContext');
  if (o.permissions === undefined) throw invalidParams(Messages.missingField('permissions'));
  // The permissions' own errors (an unknown type) come before a missing sibling, as serde reads them.
  parseSandbox({ permissions: o.permissions }, { cwd: '/', tmpDir: os.tmpdir() });
  if (o.cwd === undefined) throw invalidParams(Messages.missingField('cwd'));
  const cwd = uriToPath(P.str(o, 'cwd'));
  if (o.windowsSandboxLevel === undefined) throw invalidParams(Messages.missingField('windowsSandboxLevel'));
  P.variant(o, 'windowsSandboxLevel', WINDOWS_SANDBOX_LEVELS);
  const roots = Array.isArray(o.workspaceRoots) ? o.workspaceRoots.filter((r): r is string => typeof r === 'string').map(uriToPath) : undefined;
  return parseSandbox(o, { cwd, workspaceRoots: roots, tmpDir: os.tmpdir(), homeDir: os.homedir() });
}

export const discoveryMethods: MethodTable<DiscoveryMethod> = {
  'capabilityRoots/discoverV1': spec(
    'capability discovery',
    (raw) => {
      const o = P.object(raw, 'WireCapabilityRootsDiscoverParams');
      if (o.roots === undefined) throw invalidParams(Messages.missingField('roots'));
      if (!Array.isArray(o.roots)) P.strArray(o, 'roots'); // throws the reference's "expected a sequence"
      const list = o.roots as unknown[];
      const roots: CapabilityRootQuery[] = list.map((r) => {
        const ro = P.object(r, 'WireCapabilityRootDiscoverRequest');
        const id = P.str(ro, 'id');
        const p = uriToPath(P.str(ro, 'path'));
        return { id, path: p, sandbox: rootSandbox(ro.sandbox, p) };
      });
      if (roots.length > MAX_CAPABILITY_ROOTS) throw invalidRequest(`capability root discovery accepts at most ${MAX_CAPABILITY_ROOTS} roots`);
      return roots;
    },
    (_c, roots) => discoverRoots(roots),
  ),
  'capabilities/discoverV2': spec(
    'capability discovery',
    (raw) => {
      const o = P.object(raw, 'DiscoverV2CapabilitiesRequest');
      if (o.cwd === undefined) throw invalidParams(Messages.missingField('cwd'));
      uriToPath(P.str(o, 'cwd')); // validated as the reference does; the locations do not depend on it
      const sandbox = contextSandbox(o.sandbox);
      // Judging where an opened file really is needs /proc: refused rather than read unchecked.
      if (sandbox.kind === 'managed' && !CAN_PIN) throw invalidRequest(`managed sandbox requested but it cannot be enforced: sandboxed capability discovery needs /proc (Linux); this server runs on ${process.platform}`);
      return sandbox;
    },
    (_c, sandbox) => discoverV2(sandbox),
  ),
};
