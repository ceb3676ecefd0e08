// Builders for the `sandbox` object Codex sends with process/start and fs/* (protocol §6b),
// in its verbatim wire shape. The extension uses them to sandbox agent commands that arrive
// without one; tests use them to send what Codex sends. Free of Node and VS Code types:
// paths are given as file:// URIs.

export type SandboxAccess = 'read' | 'write' | 'none';
export type SpecialPathKind = 'root' | 'project_roots' | 'slash_tmp' | 'tmpdir';

/** The subpaths Codex keeps read-only inside writable project roots. */
export const CODEX_PROTECTED_SUBPATHS: readonly string[] = ['.git', '.agents', '.codex', '.aws'];

export function specialPath(kind: SpecialPathKind, subpath?: string) {
  return { type: 'special', value: subpath ? { kind, subpath } : { kind } };
}

export function specialEntry(kind: SpecialPathKind, access: SandboxAccess, subpath?: string) {
  return { path: specialPath(kind, subpath), access };
}

/** An explicit path entry (`{type: "path"}`). */
export function pathEntry(uri: string, access: SandboxAccess) {
  return { path: { type: 'path', path: uri }, access };
}

/** A protected subpath of the project roots: read-only, skipped when missing. */
export function protectedEntry(subpath: string) {
  return { path: specialPath('project_roots', subpath), access: 'read', missing_path_behavior: 'skip' };
}

/**
 * Codex's workspace-write entries: everything readable, the project roots (and, unless
 * `slashTmp` is false, /tmp and $TMPDIR) writable, the protected subpaths read-only.
 */
export function workspaceWriteEntries(opts: { slashTmp?: boolean; protectedSubpaths?: readonly string[] } = {}): unknown[] {
  return [
    specialEntry('root', 'read'),
    specialEntry('project_roots', 'write'),
    ...(opts.slashTmp === false ? [] : [specialEntry('slash_tmp', 'write'), specialEntry('tmpdir', 'write')]),
    ...(opts.protectedSubpaths ?? CODEX_PROTECTED_SUBPATHS).map(protectedEntry),
  ];
}

export interface CodexManagedSandbox {
  permissions: {
    type: 'managed';
    file_system: { type: 'restricted'; entries: unknown[] };
    network: 'restricted' | 'enabled';
  };
  cwd: string;
  workspaceRoots: string[];
  windowsSandboxLevel: 'disabled';
  windowsSandboxProxySettingsMode: 'reconcile';
  useLegacyLandlock: false;
}

/** A managed sandbox object as Codex sends it. */
export function managedSandbox(opts: {
  entries: unknown[];
  cwd: string;
  workspaceRoots?: string[];
  network?: 'restricted' | 'enabled';
}): CodexManagedSandbox {
  return {
    permissions: {
      type: 'managed',
      file_system: { type: 'restricted', entries: opts.entries },
      network: opts.network ?? 'restricted',
    },
    cwd: opts.cwd,
    workspaceRoots: opts.workspaceRoots ?? [opts.cwd],
    windowsSandboxLevel: 'disabled',
    windowsSandboxProxySettingsMode: 'reconcile',
    useLegacyLandlock: false,
  };
}
