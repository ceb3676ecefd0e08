// The shape of a method-table entry (shared by the tables in this folder and the router).
import type { ConnectionContext } from '../connection';
import type { Access } from '../ordering';

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
  /** The resource this request touches, for per-connection ordering (see ../ordering.ts). */
  order?(params: never): { key: string; access: Access };
}

export function spec<T>(
  category: Category,
  decode: (params: unknown) => T,
  handle: (ctx: ConnectionContext, p: T) => unknown,
  order?: (p: T) => { key: string; access: Access },
): MethodSpec {
  return { category, decode, handle: handle as MethodSpec['handle'], order: order as MethodSpec['order'] };
}

