// The protocol's request methods as runtime values, derived from RequestMap (./types.ts): the
// records below must name every method of RequestMap and nothing else, or tsc fails — so the
// lists the server's sandbox gate and the telemetry labels use cannot drift from the protocol.
import type { ParamsOf, RequestMethod } from './types';

const ALL: Record<RequestMethod, true> = {
  initialize: true,
  'process/start': true,
  'process/read': true,
  'process/write': true,
  'process/signal': true,
  'process/terminate': true,
  'process/resize': true,
  'process/closeStdin': true,
  'process/ack': true,
  'fs/readFile': true,
  'fs/writeFile': true,
  'fs/createDirectory': true,
  'fs/getMetadata': true,
  'fs/canonicalize': true,
  'fs/readDirectory': true,
  'fs/remove': true,
  'fs/copy': true,
  'fs/walk': true,
  'fs/open': true,
  'fs/readBlock': true,
  'fs/writeBlock': true,
  'fs/close': true,
  'fs/rename': true,
  'fs/watch': true,
  'fs/unwatch': true,
  'fs/watchMissing': true,
  'environment/info': true,
  'environment/status': true,
  'environmentConfig/read': true,
  'http/request': true,
  'capabilityRoots/discoverV1': true,
  'capabilities/discoverV2': true,
};

/** Every request method of the protocol (RequestMap's keys). */
export const REQUEST_METHODS: readonly RequestMethod[] = Object.keys(ALL) as RequestMethod[];

/** Params that declare a `sandbox` member (a params type with an index signature does not count). */
type DeclaresSandbox<P> = P extends object ? (string extends keyof P ? never : 'sandbox' extends keyof P ? true : never) : never;

/** The methods whose params carry a `sandbox` (ProcessStartParams, FsPathParams, FsCopyParams, ...). */
export type SandboxMethod = { [M in RequestMethod]: DeclaresSandbox<ParamsOf<M>> extends never ? never : M }[RequestMethod];

const SANDBOX: Record<SandboxMethod, true> = {
  'process/start': true,
  'fs/readFile': true,
  'fs/writeFile': true,
  'fs/createDirectory': true,
  'fs/getMetadata': true,
  'fs/canonicalize': true,
  'fs/readDirectory': true,
  'fs/remove': true,
  'fs/copy': true,
  'fs/walk': true,
  'fs/open': true,
  'fs/rename': true,
  'capabilities/discoverV2': true,
};

/** Methods whose params carry a `sandbox` the server must enforce (src/server/sandbox/gate.ts refuses it elsewhere). */
export const SANDBOX_METHODS: readonly SandboxMethod[] = Object.keys(SANDBOX) as SandboxMethod[];
