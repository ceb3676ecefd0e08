// The method table: for each method, its gating category (the reference names it in the
// "client must call initialize before using <category> methods" message), a decoder for
// untyped params, and the handler.
import { fsMethods } from './methods/fs';
import { otherMethods } from './methods/other';
import { processMethods } from './methods/process';

export type { Category, MethodSpec } from './methods/spec';
import type { MethodSpec } from './methods/spec';

export const METHODS: Record<string, MethodSpec> = { ...processMethods, ...fsMethods, ...otherMethods };
