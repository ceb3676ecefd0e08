// fs/* method table: decoding of params (paths → local absolute paths) and dispatch to
// the implementations in ../fs.
import os from 'node:os';
import { invalidParams, invalidRequest } from '../../protocol/errors';
import type { FsReadFileResult } from '../../protocol/types';
import * as confined from '../fs/confined';
import * as fsm from '../fs/fs-methods';
import { walk } from '../fs/walk';
import * as P from '../params';
import { uriToPath } from '../paths';
import { checkNoFollowRemove, checkNoSymlinks } from '../fs/no-follow';
import { checkFsAccess, checkFsAccesses, confinement, type Confinement } from '../sandbox/fs-guard';
import { parseSandbox, type SandboxProfile } from '../sandbox/profile';
import { returnChunk } from '../process/read-blocks';
import { realFs, resolveProfile } from '../sandbox/resolve';
import { spec, type FsMethod, type MethodTable } from './spec';

const pathParam = (o: P.Obj, k: string) => uriToPath(P.str(o, k));
/** `followSymlinks: false` (see ../fs/no-follow.ts); absent/null/true → links are followed as usual. */
const noFollow = (o: P.Obj) => P.optBool(o, 'followSymlinks') === false;

/**
 * The request's `sandbox`, as a profile (kind 'none' when absent). Codex sends the cwd and
 * workspace roots a managed profile is relative to in `policyContext` (and in the sandbox).
 */
function sandboxParam(o: P.Obj): SandboxProfile {
  if (o.sandbox === undefined || o.sandbox === null) return { kind: 'none', type: 'absent' };
  const pc = o.policyContext !== null && typeof o.policyContext === 'object' ? (o.policyContext as Record<string, unknown>) : {};
  const cwd = typeof pc.cwd === 'string' ? uriToPath(pc.cwd) : process.cwd();
  const roots = Array.isArray(pc.workspaceRoots) ? pc.workspaceRoots.filter((r): r is string => typeof r === 'string') : undefined;
  const profile = parseSandbox(o.sandbox, { cwd, workspaceRoots: roots, tmpDir: os.tmpdir() });
  // Without /proc the checks could not be made again on what was really opened, so a process
  // racing the request could swap a checked directory for a symlink: refused, not run with less.
  if (profile.kind === 'managed' && !confined.CAN_PIN) {
    throw invalidRequest(`managed sandbox requested but it cannot be enforced: fs/* under a managed sandbox are pinned through /proc, on Linux only; this server runs on ${process.platform}`);
  }
  return profile;
}

/**
 * Under a managed sandbox (on Linux), the checks an operation makes again on what it really
 * opened (../fs/confined.ts): the check on the path as asked leaves a window in which a racing
 * process can swap a directory for a symlink. Undefined: no managed sandbox, or no /proc.
 */
function pinned(sandbox: SandboxProfile): Confinement | undefined {
  return sandbox.kind === 'managed' && confined.CAN_PIN ? confinement(sandbox) : undefined;
}

export const fsMethods: MethodTable<FsMethod> = {
  'fs/readFile': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsReadFileParams');
      return { path: pathParam(o, 'path'), sandbox: sandboxParam(o), noFollow: noFollow(o) };
    },
    (c, p) => {
      if (p.noFollow) checkNoSymlinks(p.path, 'ELOOP');
      checkFsAccess(p.sandbox, { path: p.path, intent: 'read' });
      const conf = pinned(p.sandbox);
      // dataBase64 may be a Base64Text (the base64 in a buffer, src/rpc/verbatim.ts): on every
      // carrier it is the string the type says (spliced, toJSON, or converted in process).
      const limit = c.maxReadFileBytes;
      return (conf ? confined.readFile(p.path, p.noFollow, conf, limit) : fsm.readFile(p.path, limit)) as Promise<FsReadFileResult>;
    },
  ),
  'fs/writeFile': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsWriteFileParams');
      return { path: pathParam(o, 'path'), data: P.str(o, 'dataBase64'), sandbox: sandboxParam(o), noFollow: noFollow(o) };
    },
    (_c, p) => {
      if (p.noFollow) checkNoSymlinks(p.path, 'ELOOP');
      checkFsAccess(p.sandbox, { path: p.path, intent: 'write' });
      let data: Buffer;
      try {
        data = P.base64(p.data, 'fs/writeFile requires valid base64 dataBase64');
      } catch (e) {
        throw invalidRequest((e as Error).message); // the reference reports this one as -32600
      }
      if (p.sandbox.kind !== 'managed') return fsm.writeFile(p.path, data, p.noFollow);
      // `real` is where the opened file really is (no link in it): judged as written.
      const conf = confinement(p.sandbox);
      return fsm.writeFileVerified(p.path, data, p.noFollow, (real) => conf.check(real, 'write'));
    },
  ),
  'fs/createDirectory': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsCreateDirectoryParams');
      return { path: pathParam(o, 'path'), recursive: P.optBool(o, 'recursive') ?? true, sandbox: sandboxParam(o), noFollow: noFollow(o) };
    },
    (_c, p) => {
      if (p.noFollow) checkNoSymlinks(p.path, 'ENOTDIR');
      checkFsAccess(p.sandbox, { path: p.path, intent: 'write' });
      const conf = pinned(p.sandbox);
      return conf ? confined.createDirectory(p.path, p.recursive, conf) : fsm.createDirectory(p.path, p.recursive);
    },
  ),
  'fs/getMetadata': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsGetMetadataParams');
      return { path: pathParam(o, 'path'), sandbox: sandboxParam(o), noFollow: noFollow(o) };
    },
    (_c, p) => {
      if (p.noFollow) checkNoSymlinks(p.path, 'allowed');
      if (p.sandbox.kind === 'managed') checkFsAccess(p.sandbox, { path: p.path, intent: 'read', followFinal: false });
      const conf = pinned(p.sandbox);
      return conf ? confined.getMetadata(p.path, conf) : fsm.getMetadata(p.path);
    },
  ),
  'fs/canonicalize': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsCanonicalizeParams');
      return { path: pathParam(o, 'path'), sandbox: sandboxParam(o) };
    },
    (_c, p) => {
      if (p.sandbox.kind === 'managed') checkFsAccess(p.sandbox, { path: p.path, intent: 'read' });
      const conf = pinned(p.sandbox);
      return conf ? confined.canonicalize(p.path, conf) : fsm.canonicalize(p.path);
    },
  ),
  'fs/readDirectory': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsReadDirectoryParams');
      return { path: pathParam(o, 'path'), sandbox: sandboxParam(o) };
    },
    (_c, p) => {
      if (p.sandbox.kind === 'managed') checkFsAccess(p.sandbox, { path: p.path, intent: 'read' });
      const conf = pinned(p.sandbox);
      return conf ? confined.readDirectory(p.path, conf) : fsm.readDirectory(p.path);
    },
  ),
  'fs/remove': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsRemoveParams');
      return {
        path: pathParam(o, 'path'),
        recursive: P.optBool(o, 'recursive') ?? true,
        force: P.optBool(o, 'force') ?? true,
        sandbox: sandboxParam(o),
        noFollow: noFollow(o),
      };
    },
    (_c, p) => {
      if (p.noFollow) checkNoFollowRemove(p.path, p.recursive);
      // tree: only a directory can hold a rule below it (and rules name existing paths), so
      // judging every recursive remove as a tree equals asking lstat first, minus its race.
      if (p.sandbox.kind === 'managed') checkFsAccess(p.sandbox, { path: p.path, intent: 'write', followFinal: false, tree: p.recursive });
      const conf = pinned(p.sandbox);
      return conf ? confined.remove(p.path, p.recursive, p.force, conf) : fsm.remove(p.path, p.recursive, p.force);
    },
  ),
  'fs/copy': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsCopyParams');
      return { src: pathParam(o, 'sourcePath'), dst: pathParam(o, 'destinationPath'), recursive: P.bool(o, 'recursive'), sandbox: sandboxParam(o) };
    },
    (_c, p) => {
      checkFsAccesses(p.sandbox, [
        { path: p.src, intent: 'read', tree: p.recursive },
        { path: p.dst, intent: 'write', tree: p.recursive },
      ]);
      const conf = pinned(p.sandbox);
      return conf ? confined.copy(p.src, p.dst, p.recursive, conf) : fsm.copy(p.src, p.dst, p.recursive);
    },
  ),
  'fs/rename': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsRenameParams');
      return {
        src: pathParam(o, 'sourcePath'),
        dst: pathParam(o, 'destinationPath'),
        overwrite: P.optBool(o, 'overwrite') ?? false,
        sandbox: sandboxParam(o),
      };
    },
    (_c, p) => {
      if (p.sandbox.kind === 'managed') {
        checkFsAccesses(p.sandbox, [
          { path: p.src, intent: 'write', followFinal: false, tree: true }, // tree: see fs/remove
          { path: p.dst, intent: 'write', followFinal: false, tree: true },
        ]);
      }
      const conf = pinned(p.sandbox);
      if (!conf) return fsm.rename(p.src, p.dst, p.overwrite);
      return confined.rename(p.src, p.dst, conf, (from, to, display) => fsm.rename(from, to, p.overwrite, display));
    },
  ),
  'fs/walk': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsWalkParams');
      const path = pathParam(o, 'path');
      const opts = P.object(o.options === undefined ? P.str(o, 'options') : o.options, 'WireFsWalkOptions');
      return {
        path,
        sandbox: sandboxParam(o),
        options: {
          maxDepth: P.uint(opts, 'maxDepth'),
          maxDirectories: P.uint(opts, 'maxDirectories'),
          maxEntries: P.uint(opts, 'maxEntries'),
          followDirectorySymlinks: P.bool(opts, 'followDirectorySymlinks'),
          pruneHiddenDirectories: P.optBool(opts, 'pruneHiddenDirectories') ?? false,
        },
      };
    },
    (c, p) => {
      checkFsAccess(p.sandbox, { path: p.path, intent: 'read' });
      if (p.sandbox.kind !== 'managed') return walk(p.path, p.options, { asText: c.verbatimResults });
      const conf = pinned(p.sandbox);
      if (conf) {
        // Each directory judged where its opened descriptor really is, then listed from it.
        const mayList = (real: string) => {
          try {
            conf.check(real, 'read');
            return true;
          } catch {
            return false;
          }
        };
        return walk(p.path, p.options, { canEnter: mayList, pinned: true, asText: c.verbatimResults });
      }
      const profile = p.sandbox;
      const resolved = resolveProfile(profile);
      const canEnter = (dir: string) => {
        try {
          checkFsAccess(profile, { path: dir, intent: 'read' }, realFs, resolved);
          return true;
        } catch {
          return false;
        }
      };
      return walk(p.path, p.options, { canEnter, asText: c.verbatimResults });
    },
  ),
  'fs/open': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsOpenParams');
      const mode = P.optVariant(o, 'mode', ['read', 'replace'] as const) ?? 'read';
      return { handleId: P.str(o, 'handleId'), path: pathParam(o, 'path'), sandbox: sandboxParam(o), mode };
    },
    (c, p) => {
      const intent = p.mode === 'replace' ? 'write' : 'read';
      checkFsAccess(p.sandbox, { path: p.path, intent });
      const conf = pinned(p.sandbox);
      return c.handles.open(p.handleId, p.path, conf && ((real) => conf.check(real, intent)), p.mode);
    },
    (p) => ({ key: `handle:${p.handleId}`, access: 'write' }),
  ),
  'fs/readBlock': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsReadBlockParams');
      return { handleId: P.str(o, 'handleId'), offset: P.uint(o, 'offset'), len: P.uint(o, 'len') };
    },
    (c, p) => c.handles.readBlock(p.handleId, p.offset, p.len, c.binaryOutput),
    (p) => ({ key: `handle:${p.handleId}`, access: 'read' }),
  ),
  'fs/writeBlock': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsWriteBlockParams');
      const handleId = P.str(o, 'handleId');
      const offset = P.uint(o, 'offset');
      let data: Buffer;
      // [extension binaryOutput] the bytes themselves, from a binary request frame or in process.
      const chunk = o.chunk;
      if (chunk instanceof Uint8Array) return { handleId, offset, data: Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) };
      try {
        data = P.base64(P.str(o, 'chunk'), 'chunk');
      } catch (e) {
        // The reference's text: just "Invalid symbol 33, offset 0." (as process/write).
        throw invalidParams((e as Error).message.replace(/^chunk: /, ''));
      }
      return { handleId, offset, data };
    },
    // A chunk of a binary frame may be lent by the socket's reader (../../transports/ws-server-reader.ts):
    // given back once the write is done with it, however it ended.
    (c, p) => c.handles.writeBlock(p.handleId, p.offset, p.data).finally(() => returnChunk(p.data)),
    // Blocks do not wait for each other (the stream keeps their order and coalesces them,
    // ../fs/replace-stream.ts); fs/open before and fs/close after still order them.
    (p) => ({ key: `handle:${p.handleId}`, access: 'read' }),
  ),
  'fs/close': spec(
    'filesystem',
    (raw) => P.str(P.object(raw, 'WireFsCloseParams'), 'handleId'),
    (c, id) => c.handles.close(id),
    (id) => ({ key: `handle:${id}`, access: 'write' }),
  ),
  'fs/watch': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsWatchParams');
      return { watchId: P.id(o, 'watchId'), path: pathParam(o, 'path'), recursive: P.optBool(o, 'recursive') ?? false };
    },
    (c, p) => c.watches.watch(p.watchId, p.path, p.recursive),
    (p) => ({ key: `watch:${p.watchId}`, access: 'write' }),
  ),
  'fs/unwatch': spec(
    'filesystem',
    (raw) => P.str(P.object(raw, 'WireFsUnwatchParams'), 'watchId'),
    (c, id) => c.watches.unwatch(id),
    (id) => ({ key: `watch:${id}`, access: 'write' }),
  ),
  // Sent by the real Codex client (protocol §6a); `fs/missingChanged {watchId}` follows once.
  'fs/watchMissing': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsWatchMissingParams');
      const watchId = P.uint(o, 'watchId');
      const missing = P.strArray(o, 'missing').map(uriToPath);
      P.optStr(o, 'present');
      return { watchId, missing };
    },
    (c, p) => c.missingWatches.watch(p.watchId, p.missing),
  ),
};

