// fs/* method table: decoding of params (paths → local absolute paths) and dispatch to
// the implementations in ../fs.
import { invalidRequest } from '../../protocol/errors';
import * as fsm from '../fs/fs-methods';
import { walk } from '../fs/walk';
import * as P from '../params';
import { uriToPath } from '../paths';
import { spec, type MethodSpec } from './spec';

const pathParam = (o: P.Obj, k: string) => uriToPath(P.str(o, k));

export const fsMethods: Record<string, MethodSpec> = {
  'fs/readFile': spec(
    'filesystem',
    (raw) => pathParam(P.object(raw, 'WireFsReadFileParams'), 'path'),
    (_c, p) => fsm.readFile(p),
  ),
  'fs/writeFile': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsWriteFileParams');
      return { path: pathParam(o, 'path'), data: P.str(o, 'dataBase64') };
    },
    (_c, p) => {
      let data: Buffer;
      try {
        data = P.base64(p.data, 'fs/writeFile requires valid base64 dataBase64');
      } catch (e) {
        throw invalidRequest((e as Error).message); // the reference reports this one as -32600
      }
      return fsm.writeFile(p.path, data);
    },
  ),
  'fs/createDirectory': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsCreateDirectoryParams');
      return { path: pathParam(o, 'path'), recursive: P.optBool(o, 'recursive') ?? true };
    },
    (_c, p) => fsm.createDirectory(p.path, p.recursive),
  ),
  'fs/getMetadata': spec(
    'filesystem',
    (raw) => pathParam(P.object(raw, 'WireFsGetMetadataParams'), 'path'),
    (_c, p) => fsm.getMetadata(p),
  ),
  'fs/canonicalize': spec(
    'filesystem',
    (raw) => pathParam(P.object(raw, 'WireFsCanonicalizeParams'), 'path'),
    (_c, p) => fsm.canonicalize(p),
  ),
  'fs/readDirectory': spec(
    'filesystem',
    (raw) => pathParam(P.object(raw, 'WireFsReadDirectoryParams'), 'path'),
    (_c, p) => fsm.readDirectory(p),
  ),
  'fs/remove': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsRemoveParams');
      return { path: pathParam(o, 'path'), recursive: P.optBool(o, 'recursive') ?? true, force: P.optBool(o, 'force') ?? true };
    },
    (_c, p) => fsm.remove(p.path, p.recursive, p.force),
  ),
  'fs/copy': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsCopyParams');
      return { src: pathParam(o, 'sourcePath'), dst: pathParam(o, 'destinationPath'), recursive: P.bool(o, 'recursive') };
    },
    (_c, p) => fsm.copy(p.src, p.dst, p.recursive),
  ),
  'fs/rename': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsRenameParams');
      return { src: pathParam(o, 'sourcePath'), dst: pathParam(o, 'destinationPath'), overwrite: P.optBool(o, 'overwrite') ?? false };
    },
    (_c, p) => fsm.rename(p.src, p.dst, p.overwrite),
  ),
  'fs/walk': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsWalkParams');
      const path = pathParam(o, 'path');
      const opts = P.object(o.options === undefined ? P.str(o, 'options') : o.options, 'WireFsWalkOptions');
      return {
        path,
        options: {
          maxDepth: P.uint(opts, 'maxDepth'),
          maxDirectories: P.uint(opts, 'maxDirectories'),
          maxEntries: P.uint(opts, 'maxEntries'),
          followDirectorySymlinks: P.bool(opts, 'followDirectorySymlinks'),
          pruneHiddenDirectories: P.optBool(opts, 'pruneHiddenDirectories') ?? false,
        },
      };
    },
    (_c, p) => walk(p.path, p.options),
  ),
  'fs/open': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsOpenParams');
      return { handleId: P.str(o, 'handleId'), path: pathParam(o, 'path') };
    },
    (c, p) => c.handles.open(p.handleId, p.path),
    (p) => ({ key: `handle:${p.handleId}`, access: 'write' }),
  ),
  'fs/readBlock': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsReadBlockParams');
      return { handleId: P.str(o, 'handleId'), offset: P.uint(o, 'offset'), len: P.uint(o, 'len') };
    },
    (c, p) => c.handles.readBlock(p.handleId, p.offset, p.len),
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

