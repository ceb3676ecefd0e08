// The `sandbox` parameter of process/start and fs/* decoded into one platform-neutral
// profile: which absolute local paths are readable / writable / hidden, and whether the
// network is allowed. Pure (no filesystem access): the backends (./bwrap.ts for Linux, and
// in-process fs enforcement) decide what to do with paths that do not exist. Variant names
// and messages follow the reference's decoder (codex 0.169, measured), so a client sees the
// same -32602 for the same mistake.
import path from 'node:path';
import { Messages, invalidParams, invalidRequest } from '../../protocol/errors';
import { uriToPath } from '../paths';

import type { SandboxAccess } from '../../protocol/codex-sandbox';
export type { SandboxAccess };
/** `skip`: the rule is dropped when its path does not exist. `default`: no explicit behaviour (the reference skips too). */
export type MissingPathBehavior = 'skip' | 'default';

export interface SandboxRule {
  /** Absolute, normalized local path (not symlink-resolved: that needs the filesystem). */
  path: string;
  access: SandboxAccess;
  missing: MissingPathBehavior;
  /** Added by the engine's carve-out scan (./carve-outs.ts), not sent by the client. */
  scanned?: boolean;
}

export type SandboxProfile =
  | { kind: 'none'; type: 'absent' | 'disabled' | 'external' }
  | {
      kind: 'managed';
      /** Everything is readable unless a more specific rule says otherwise (`root` read/write). */
      fullRead: boolean;
      /** Everything is writable (`file_system: unrestricted`, or `root` write). */
      fullWrite: boolean;
      /** Every rule, in request order. The most specific (longest) path decides; on a tie the most restrictive access. */
      rules: SandboxRule[];
      /** Paths (and everything below) a write rule opens, most general first. */
      writableRoots: string[];
      /** Read-only rules inside a writable root (e.g. `<project>/.git`): re-protected. */
      readOnlyCarveouts: string[];
      /** Paths whose access is `none`. */
      unreadable: string[];
      /** Read rules (what a non-fullRead profile may still read). */
      readableRoots: string[];
      network: 'restricted' | 'enabled';
      /** The working directory the profile was resolved against. */
      cwd: string;
    };
export type ManagedSandboxProfile = Extract<SandboxProfile, { kind: 'managed' }>;

export interface SandboxContext {
  /** Absolute local cwd of the request (fallback for the sandbox's own `cwd`). */
  cwd: string;
  /** Absolute local paths or file:// URIs; used when the sandbox object has no `workspaceRoots`. */
  workspaceRoots?: string[];
  /** The temp directory `tmpdir` maps to ($TMPDIR of the child / server). */
  tmpDir: string;
  homeDir?: string;
}

/**
 * `minimal` read access: what a program needs to start (loader, libraries, /etc config).
 * Our reading of the reference's platform defaults on Linux; listed paths that do not
 * exist are skipped.
 */
export const MINIMAL_READ_PATHS = ['/bin', '/sbin', '/usr', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'];

/** Subpaths the reference keeps read-only inside writable roots (listed in Codex's own profiles). */
export const PROTECTED_SUBPATHS = ['.git', '.agents', '.codex', '.aws'];

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function obj(v: unknown, what: string): Obj {
  if (!isObj(v)) throw invalidParams(`invalid type: ${describe(v)}, expected ${what}`);
  return v;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a sequence';
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  return typeof v === 'object' ? 'a map' : `${typeof v} \`${String(v)}\``;
}

function field(o: Obj, k: string): unknown {
  if (!(k in o) || o[k] === undefined) throw invalidParams(Messages.missingField(k));
  return o[k];
}

function expectedList(values: readonly string[]): string {
  const q = values.map((v) => `\`${v}\``);
  if (q.length === 1) return q[0];
  if (q.length === 2) return `${q[0]} or ${q[1]}`;
  return `one of ${q.join(', ')}`;
}

function variant<T extends string>(v: unknown, values: readonly T[]): T {
  if (typeof v !== 'string') throw invalidParams(`invalid type: ${describe(v)}, expected a string variant`);
  if (!(values as readonly string[]).includes(v)) throw invalidParams(`unknown variant \`${v}\`, expected ${expectedList(values)}`);
  return v as T;
}

/** A wire path (URI or [extension] absolute path) → absolute local path. */
function localPath(v: unknown, what: string): string {
  if (typeof v !== 'string') throw invalidParams(`invalid type: ${describe(v)}, expected ${what}`);
  return path.resolve(uriToPath(v));
}

function subpathOf(base: string, sub: unknown): string {
  if (sub === undefined || sub === null) return base;
  if (typeof sub !== 'string') throw invalidParams(`invalid type: ${describe(sub)}, expected a relative subpath`);
  if (path.isAbsolute(sub)) throw invalidParams(`sandbox subpath must be relative: ${sub}`);
  const p = path.resolve(base, sub);
  // `..` segments must not climb out of the special path they qualify.
  if (p !== base && !p.startsWith(base.endsWith('/') ? base : base + '/')) throw invalidParams(`sandbox subpath escapes its root: ${sub}`);
  return p;
}

const SPECIAL_KINDS = ['root', 'minimal', 'current_working_directory', 'project_roots', 'tmpdir', 'slash_tmp', 'unknown'] as const;
const ACCESS = ['read', 'write', 'deny', 'none'] as const;

function workspaceRootsOf(sandbox: Obj, ctx: SandboxContext): string[] {
  const raw = sandbox.workspaceRoots;
  if (raw !== undefined && raw !== null) {
    if (!Array.isArray(raw)) throw invalidParams(`invalid type: ${describe(raw)}, expected a sequence`);
    return raw.map((r) => localPath(r, 'a workspace root URI'));
  }
  // No fallback to cwd: measured on the reference, a profile without workspaceRoots gives
  // `project_roots` nothing (a write in cwd is denied).
  return (ctx.workspaceRoots ?? []).map((r) => localPath(r, 'a workspace root'));
}

/** The paths one entry's `path` names (several for project_roots / minimal, none for unknown). */
function entryPaths(p: Obj, access: SandboxAccess, sandbox: Obj, ctx: SandboxContext, cwd: string): string[] {
  const type = variant(field(p, 'type'), ['path', 'glob_pattern', 'special'] as const);
  if (type === 'path') return [localPath(field(p, 'path'), 'a path URI')];
  if (type === 'glob_pattern') {
    // bubblewrap binds paths, not patterns; a pattern expanded once at spawn would miss files
    // created later. Refused rather than enforced partially.
    throw invalidRequest('sandbox glob_pattern entries are not supported by this exec-server');
  }
  const value = obj(field(p, 'value'), 'a special path');
  const kind = variant(field(value, 'kind'), SPECIAL_KINDS);
  const sub = value.subpath;
  switch (kind) {
    case 'root':
      return [subpathOf('/', sub)];
    case 'minimal':
      return MINIMAL_READ_PATHS.map((m) => subpathOf(m, sub));
    case 'current_working_directory':
      return [subpathOf(cwd, sub)];
    case 'project_roots':
      return workspaceRootsOf(sandbox, ctx).map((r) => subpathOf(r, sub));
    case 'tmpdir':
      return [subpathOf(path.resolve(ctx.tmpDir), sub)];
    case 'slash_tmp':
      return [subpathOf('/tmp', sub)];
    case 'unknown':
      // A special path a newer client knows and we do not. Dropping a read/write grant only
      // narrows access; dropping a denial would widen it, so that is refused.
      if (access === 'none') throw invalidRequest('sandbox entry denies an unknown special path; refusing to run without enforcing it');
      return [];
  }
}


const STRICTNESS: Record<SandboxAccess, number> = { write: 0, read: 1, none: 2 };

/**
 * The deciding rule per exact rule path (ties resolved to the most restrictive), built once per
 * rules array: a lookup walks the path's ancestors (its depth) instead of every rule, so a
 * profile with thousands of carve-outs (./carve-outs.ts) is not quadratic to build or to turn
 * into bwrap arguments (measured: 55 ms per start for 200 carve-outs before).
 */
const ruleIndex = new WeakMap<readonly SandboxRule[], Map<string, SandboxRule>>();

function indexOf(rules: readonly SandboxRule[]): Map<string, SandboxRule> {
  let idx = ruleIndex.get(rules);
  if (idx) return idx;
  idx = new Map();
  for (const r of rules) {
    const key = path.resolve(r.path);
    const had = idx.get(key);
    if (!had || STRICTNESS[r.access] > STRICTNESS[had.access]) idx.set(key, r);
  }
  ruleIndex.set(rules, idx);
  return idx;
}

/** The most specific rule containing `p` (ties: the most restrictive), if any. */
export function decidingRule(profile: Pick<ManagedSandboxProfile, 'rules'>, p: string): SandboxRule | undefined {
  const idx = indexOf(profile.rules);
  let cur = path.resolve(p);
  for (;;) {
    const r = idx.get(cur);
    if (r) return r;
    const up = path.dirname(cur);
    if (up === cur) return undefined;
    cur = up;
  }
}

/**
 * Access a managed profile grants to an absolute, already symlink-resolved path: the most
 * specific rule containing it decides (ties: most restrictive); nothing matching → `none`,
 * or `read` when the profile reads everything.
 */
export function accessFor(profile: ManagedSandboxProfile, p: string): SandboxAccess {
  const best = decidingRule(profile, p);
  if (best) return best.access;
  if (profile.fullWrite) return 'write';
  return profile.fullRead ? 'read' : 'none';
}

/**
 * Decodes a `sandbox` parameter. null/absent, `disabled` and `external` → kind 'none'
 * (no confinement by us); `managed` → the resolved profile. Malformed → RpcError -32602;
 * a profile this server cannot enforce faithfully → -32600.
 */
export function parseSandbox(raw: unknown, ctx: SandboxContext): SandboxProfile {
  if (raw === null || raw === undefined) return { kind: 'none', type: 'absent' };
  const sandbox = obj(raw, 'struct SandboxParams');
  const permissions = obj(field(sandbox, 'permissions'), 'a permission profile');
  const type = variant(field(permissions, 'type'), ['managed', 'disabled', 'external'] as const);
  if (type !== 'managed') return { kind: 'none', type };

  const cwd = sandbox.cwd !== undefined && sandbox.cwd !== null ? localPath(sandbox.cwd, 'a cwd URI') : path.resolve(ctx.cwd);
  // Field order as the reference's decoder reports them (file_system first).
  const fileSystem = obj(field(permissions, 'file_system'), 'a file system policy');
  const network = variant(field(permissions, 'network'), ['restricted', 'enabled'] as const);
  const fsType = variant(field(fileSystem, 'type'), ['restricted', 'unrestricted'] as const);

  const rules: SandboxRule[] = [];
  if (fsType === 'unrestricted') {
    rules.push({ path: '/', access: 'write', missing: 'default' });
  } else {
    const entries = field(fileSystem, 'entries');
    if (!Array.isArray(entries)) throw invalidParams(`invalid type: ${describe(entries)}, expected a sequence`);
    for (const e of entries) {
      const entry = obj(e, 'a file system sandbox entry');
      const rawAccess = variant(field(entry, 'access'), ACCESS);
      const access: SandboxAccess = rawAccess === 'deny' ? 'none' : rawAccess;
      const mpb = entry.missing_path_behavior;
      const missing: MissingPathBehavior = mpb === undefined || mpb === null ? 'default' : variant(mpb, ['skip'] as const);
      for (const p of entryPaths(obj(field(entry, 'path'), 'a file system path'), access, sandbox, ctx, cwd)) {
        rules.push({ path: p, access, missing });
      }
    }
  }

  return profileFromRules(rules, network, cwd);
}

/**
 * A managed profile from its rules: derives fullRead/fullWrite and the path lists. Also used
 * to rebuild a profile whose rule paths were resolved against the filesystem (./resolve.ts).
 */
export function profileFromRules(rules: SandboxRule[], network: 'restricted' | 'enabled', cwd: string): ManagedSandboxProfile {
  const partial: ManagedSandboxProfile = {
    kind: 'managed', rules, fullRead: false, fullWrite: false, writableRoots: [], readOnlyCarveouts: [], unreadable: [], readableRoots: [], network, cwd,
  };
  const rootAccess = accessFor(partial, '/');
  const fullWrite = rootAccess === 'write';
  const fullRead = rootAccess !== 'none';
  const uniq = (xs: string[]) => [...new Set(xs)];
  const at = (p: string) => accessFor(partial, p);
  // A rule counts where it actually decides (a write rule shadowed by an identical `none` rule opens nothing).
  const writableRoots = uniq(rules.filter((r) => r.access === 'write' && at(r.path) === 'write').map((r) => r.path)).sort(
    (a, b) => a.length - b.length,
  );
  const readableRoots = uniq(rules.filter((r) => r.access === 'read' && at(r.path) === 'read').map((r) => r.path));
  // Below some writable root: an ancestor of the path is one (a Set lookup per ancestor, not a scan of the roots).
  const writable = new Set(writableRoots);
  const belowWritable = (p: string) => {
    for (let up = path.dirname(p); ; up = path.dirname(up)) {
      if (writable.has(up)) return true;
      if (up === path.dirname(up)) return false;
    }
  };
  const readOnlyCarveouts = readableRoots.filter(belowWritable);
  const unreadable = uniq(rules.filter((r) => r.access === 'none').map((r) => r.path));
  return { kind: 'managed', fullRead, fullWrite, rules, writableRoots, readOnlyCarveouts, unreadable, readableRoots, network, cwd };
}

/** The `sandbox` member of a request's params (undefined when params are not an object). */
export function sandboxParam(params: unknown): unknown {
  return isObj(params) ? params.sandbox : undefined;
}
