// Decoding of untyped wire params with serde-like messages (the reference decodes with
// serde, so clients see e.g. "missing field `processId`" or "invalid type: number,
// expected a string"). Unknown fields are ignored, as serde does by default.
import { Messages, invalidParams } from '../protocol/errors';

export type Obj = Record<string, unknown>;

function describe(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return `boolean \`${v}\``;
  if (typeof v === 'number') return 'number';
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  if (Array.isArray(v)) return 'sequence';
  // Raw bytes reach a decoder only from a binary request frame (fs/writeBlock's chunk); serde's word for them.
  if (v instanceof Uint8Array) return 'byte array';
  return 'map';
}
const typeError = (v: unknown, expected: string) => invalidParams(`invalid type: ${describe(v)}, expected ${expected}`);

/** The params object itself. `nullable` accepts null/absent params as `{}` (environment/*). */
export function object(params: unknown, structName: string, nullable = false): Obj {
  if ((params === null || params === undefined) && nullable) return {};
  if (params === null || params === undefined || typeof params !== 'object' || Array.isArray(params) || params instanceof Uint8Array) {
    throw typeError(params, `struct ${structName}`);
  }
  return params as Obj;
}

function present(o: Obj, k: string): boolean {
  return o[k] !== undefined;
}
function required(o: Obj, k: string): unknown {
  if (!present(o, k)) throw invalidParams(Messages.missingField(k));
  return o[k];
}

/** Client-chosen ids the server keeps in memory (processId, writeId, watchId) are bounded. */
export const MAX_ID_BYTES = 1024;
export function id(o: Obj, k: string): string {
  const v = str(o, k);
  if (Buffer.byteLength(v) > MAX_ID_BYTES) throw invalidParams(`${k} must not exceed ${MAX_ID_BYTES} bytes`);
  return v;
}

export function str(o: Obj, k: string): string {
  const v = required(o, k);
  if (typeof v !== 'string') throw typeError(v, 'a string');
  return v;
}
export function optStr(o: Obj, k: string): string | undefined {
  const v = o[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw typeError(v, 'a string');
  return v;
}
export function bool(o: Obj, k: string): boolean {
  const v = required(o, k);
  if (typeof v !== 'boolean') throw typeError(v, 'a boolean');
  return v;
}
export function optBool(o: Obj, k: string): boolean | undefined {
  const v = o[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw typeError(v, 'a boolean');
  return v;
}
function checkUint(v: unknown): number {
  if (typeof v !== 'number') throw typeError(v, 'usize');
  // The reference answers "invalid number" for negative and fractional values.
  if (v < 0 || !Number.isFinite(v) || !Number.isInteger(v)) throw invalidParams('invalid number');
  return v;
}
export function uint(o: Obj, k: string): number {
  return checkUint(required(o, k));
}
export function optUint(o: Obj, k: string): number | undefined {
  const v = o[k];
  if (v === undefined || v === null) return undefined;
  return checkUint(v);
}
export function strArray(o: Obj, k: string): string[] {
  const v = required(o, k);
  if (!Array.isArray(v)) throw typeError(v, 'a sequence');
  for (const x of v) if (typeof x !== 'string') throw typeError(x, 'a string');
  return v as string[];
}
export function optStrArray(o: Obj, k: string): string[] | undefined {
  if (o[k] === undefined || o[k] === null) return undefined;
  return strArray(o, k);
}
export function strRecord(o: Obj, k: string): Record<string, string> {
  const v = required(o, k);
  return checkStrRecord(v);
}
export function optStrRecord(o: Obj, k: string): Record<string, string> | undefined {
  if (o[k] === undefined || o[k] === null) return undefined;
  return checkStrRecord(o[k]);
}
function checkStrRecord(v: unknown): Record<string, string> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw typeError(v, 'a map');
  const out: Record<string, string> = Object.create(null);
  for (const [key, val] of Object.entries(v as Obj)) {
    if (typeof val !== 'string') throw typeError(val, 'a string');
    out[key] = val;
  }
  return out;
}
export function optObject(o: Obj, k: string, structName: string): Obj | undefined {
  const v = o[k];
  if (v === undefined || v === null) return undefined;
  return object(v, structName);
}
/** A string enum ("unknown variant `kill`, expected `interrupt`"). */
export function variant<T extends string>(o: Obj, k: string, allowed: readonly T[]): T {
  const v = str(o, k);
  return checkVariant(v, allowed);
}
export function optVariant<T extends string>(o: Obj, k: string, allowed: readonly T[]): T | undefined {
  const v = optStr(o, k);
  return v === undefined ? undefined : checkVariant(v, allowed);
}
function checkVariant<T extends string>(v: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(v)) {
    // serde's wording: one variant, two (`a` or `b`), or more.
    const q = allowed.map((a) => `\`${a}\``);
    const exp = q.length === 1 ? q[0] : q.length === 2 ? `${q[0]} or ${q[1]}` : `one of ${q.join(', ')}`;
    throw invalidParams(`unknown variant \`${v}\`, expected ${exp}`);
  }
  return v as T;
}

/**
 * Strict base64 (standard alphabet, padding optional) → bytes; throws with `what` in the message.
 * Valid input is checked without scanning it in JS (a regex over each 1.4 MB fs/writeBlock chunk
 * was most of the server's CPU for a streamed write): Node's decoder skips characters outside
 * the alphabet, and any skipped character makes the output shorter than the length implies; it
 * also takes the URL-safe `-` and `_`, which are looked for separately. Only invalid input is
 * scanned, for the reference's message.
 */
export function base64(value: string, what: string): Buffer {
  let end = value.length;
  while (end > 0 && value.charCodeAt(end - 1) === 61 /* = */) end--;
  const s = end === value.length ? value : value.slice(0, end);
  const invalid = (): Error => {
    const bad = /[^A-Za-z0-9+/]/.exec(s);
    if (bad) return new Error(`${what}: Invalid symbol ${bad[0].charCodeAt(0)}, offset ${bad.index}.`);
    return new Error(`${what}: Invalid input length.`);
  };
  if (s.length % 4 === 1 || s.indexOf('-') >= 0 || s.indexOf('_') >= 0) throw invalid();
  const bytes = Buffer.from(s, 'base64');
  if (bytes.length !== Math.floor((s.length * 3) / 4)) throw invalid();
  return bytes;
}
