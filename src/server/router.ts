// The method table: for each method, its gating category (the reference names it in the
// "client must call initialize before using <category> methods" message), a decoder for
// untyped params, and the handler. Typed by the protocol's RequestMap (./methods/spec.ts):
// every method of the protocol but `initialize` has exactly one entry answering its result type.
import { discoveryMethods } from './methods/discovery';
import { fsMethods } from './methods/fs';
import { otherMethods } from './methods/other';
import { processMethods } from './methods/process';

export type { Category, MethodSpec, MethodTable, ServerMethod } from './methods/spec';
import type { MethodSpec, MethodTable, ServerMethod } from './methods/spec';

export const METHOD_TABLE: MethodTable<ServerMethod> = { ...processMethods, ...fsMethods, ...otherMethods, ...discoveryMethods };

/** The same table for lookups by a name off the wire (own properties only: see methodSpec). */
export const METHODS: Readonly<Record<string, MethodSpec>> = METHOD_TABLE;

/** The entry of `method`, or undefined: `__proto__`, `constructor`, `toString`... are not methods (found by test/fuzz). */
export function methodSpec(method: string): MethodSpec | undefined {
  return Object.prototype.hasOwnProperty.call(METHODS, method) ? METHODS[method] : undefined;
}
