// The method table: for each method, its gating category (the reference names it in the
// "client must call initialize before using <category> methods" message), a decoder for
// untyped params, and the handler.
import { invalidParams, invalidRequest } from '../protocol/errors';
import { MAX_READ_BLOCK } from './fs/handles';
import * as fsm from './fs/fs-methods';
import { walk } from './fs/walk';
import { environmentConfig, environmentInfo } from './environment';
import { httpRequest } from './http';
import type { ConnectionContext } from './connection';
import * as P from './params';
import { uriToPath } from './paths';
import { processMethods } from './process-methods';

export type Category =
  | 'exec'
  | 'filesystem'
  | 'http'
  | 'environment info'
  | 'environment status'
  | 'environment config';

export interface MethodSpec {
  category: Category;
  /** Decodes untyped params (throws -32602 RpcError); runs before gating, like the reference. */
  decode(params: unknown): unknown;
  handle(ctx: ConnectionContext, params: never): unknown;
}

function spec<T>(
  category: Category,
  decode: (params: unknown) => T,
  handle: (ctx: ConnectionContext, p: T) => unknown,
): MethodSpec {
  return { category, decode, handle: handle as MethodSpec['handle'] };
}

const pathParam = (o: P.Obj, k: string) => uriToPath(P.str(o, k));

const fsMethods: Record<string, MethodSpec> = {
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
  ),
  'fs/readBlock': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsReadBlockParams');
      return { handleId: P.str(o, 'handleId'), offset: P.uint(o, 'offset'), len: P.uint(o, 'len') };
    },
    (c, p) => c.handles.readBlock(p.handleId, p.offset, p.len),
  ),
  'fs/close': spec(
    'filesystem',
    (raw) => P.str(P.object(raw, 'WireFsCloseParams'), 'handleId'),
    (c, id) => c.handles.close(id),
  ),
  'fs/watch': spec(
    'filesystem',
    (raw) => {
      const o = P.object(raw, 'WireFsWatchParams');
      return { watchId: P.str(o, 'watchId'), path: pathParam(o, 'path'), recursive: P.optBool(o, 'recursive') ?? false };
    },
    (c, p) => c.watches.watch(p.watchId, p.path, p.recursive),
  ),
  'fs/unwatch': spec(
    'filesystem',
    (raw) => P.str(P.object(raw, 'WireFsUnwatchParams'), 'watchId'),
    (c, id) => c.watches.unwatch(id),
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

const otherMethods: Record<string, MethodSpec> = {
  'environment/info': spec(
    'environment info',
    (raw) => P.object(raw, 'EnvironmentInfoParams', true),
    () => environmentInfo(),
  ),
  'environment/status': spec(
    'environment status',
    (raw) => P.object(raw, 'EnvironmentStatusParams', true),
    () => ({ status: 'ready' }),
  ),
  'environmentConfig/read': spec(
    'environment config',
    (raw) => {
      const o = P.object(raw, 'WireEnvironmentConfigReadParams');
      P.str(o, 'cwd');
      const lists = ['configPaths', 'requirementsPaths'].map((k) => {
        const v = o[k];
        if (v === undefined) throw invalidParams(`missing field \`${k}\``);
        if (!Array.isArray(v)) throw invalidParams(`invalid type: ${v === null ? 'null' : typeof v}, expected a sequence`);
        return v;
      });
      if (lists[0].length + lists[1].length === 0) throw invalidParams('at least one config or requirements path is required');
      return o;
    },
    () => environmentConfig(),
  ),
  'http/request': spec(
    'http',
    (raw) => {
      const o = P.object(raw, 'WireHttpRequestParams');
      const method = P.str(o, 'method');
      const url = P.str(o, 'url');
      const hv = o.headers;
      if (hv === undefined) throw invalidParams('missing field `headers`');
      if (!Array.isArray(hv)) throw invalidParams('invalid type: map, expected a sequence');
      const headers = hv.map((h) => {
        const ho = P.object(h, 'HttpHeader');
        return { name: P.str(ho, 'name'), value: P.str(ho, 'value') };
      });
      const bodyB64 = P.optStr(o, 'bodyBase64');
      let body: Buffer | undefined;
      if (bodyB64 !== undefined) {
        try {
          body = P.base64(bodyB64, 'http/request requires valid base64 bodyBase64');
        } catch (e) {
          throw invalidParams((e as Error).message);
        }
      }
      return {
        method,
        url,
        headers,
        body,
        timeoutMs: P.optUint(o, 'timeoutMs'),
        redirectPolicy: P.optVariant(o, 'redirectPolicy', ['follow', 'stop'] as const) ?? 'follow',
        requestId: P.str(o, 'requestId'),
        streamResponse: P.optBool(o, 'streamResponse') ?? false,
      };
    },
    (c, p) => c.http(p, httpRequest),
  ),
};

export const METHODS: Record<string, MethodSpec> = { ...processMethods, ...fsMethods, ...otherMethods };
export { MAX_READ_BLOCK };
