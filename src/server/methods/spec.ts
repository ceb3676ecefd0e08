// The shape of a method-table entry (shared by the tables in this folder and the router). Tables
// are typed by the protocol's RequestMap: a table must have an entry for each of its methods, and
// an entry's handler must answer that method's result type (ResultOf<M>), or tsc fails.
import type { RequestMethod, ResultOf } from '../../protocol/types';
import type { ConnectionContext } from '../context';
import type { Access } from '../ordering';

export type Category =
  | 'exec'
  | 'filesystem'
  | 'http'
  | 'environment info'
  | 'environment status'
  | 'environment config'
  | 'capability discovery';

/** Methods the table serves (`initialize` is the connection's own: src/server/connection.ts). */
export type ServerMethod = Exclude<RequestMethod, 'initialize'>;
export type ProcessMethod = Extract<ServerMethod, `process/${string}`>;
export type FsMethod = Extract<ServerMethod, `fs/${string}`>;
export type DiscoveryMethod = Extract<ServerMethod, `capabilit${string}`>;

/** An entry answering `R`; the decoded params' type is the entry's own (erased to `never` here). */
export interface MethodSpec<R = unknown> {
  category: Category;
  /** Decodes untyped params (throws -32602 RpcError); runs before gating, like the reference. */
  decode(params: unknown): unknown;
  handle(ctx: ConnectionContext, params: never): R | Promise<R>;
  /** The resource this request touches, for per-connection ordering (see ../ordering.ts). */
  order?(params: never): { key: string; access: Access };
}

/** One entry per method of K, each answering its method's result type. */
export type MethodTable<K extends ServerMethod> = { readonly [M in K]: MethodSpec<ResultOf<M>> };

/**
 * An entry: `decode` turns the wire params into what `handle` takes (local paths, Buffers...);
 * `R` is inferred from the table slot, so the handler's answer is checked against the protocol.
 */
export function spec<T, R>(
  category: Category,
  decode: (params: unknown) => T,
  handle: (ctx: ConnectionContext, p: T) => R | Promise<R>,
  order?: (p: T) => { key: string; access: Access },
): MethodSpec<R> {
  return { category, decode, handle: handle as MethodSpec<R>['handle'], order: order as MethodSpec<R>['order'] };
}
