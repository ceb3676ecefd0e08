// Decoding of nested wire structs the way the reference's serde derive does (measured on codex
// 0.169): a map is read key by key in the order the client wrote them (the first bad value
// wins), then the first missing required field in declaration order is reported; a JSON array
// is read positionally ("invalid length 0, expected struct X with N elements" when a required
// field is missing, "invalid length N, expected fewer elements in array" when too long).
// Unknown keys are ignored. Messages match ./params.ts.
import { Messages, invalidParams } from '../protocol/errors';

export function describe(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return `boolean \`${v}\``;
  if (typeof v === 'number') return 'number';
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  if (Array.isArray(v)) return 'sequence';
  return 'map';
}
export const typeError = (v: unknown, expected: string) => invalidParams(`invalid type: ${describe(v)}, expected ${expected}`);

export interface FieldSpec<T = unknown> {
  name: string;
  /** Decodes a present value (null included: a field that is an Option decodes null itself). */
  decode: (v: unknown) => T;
  /** Absent → `missing field` (else the field is left undefined: serde's default). */
  required?: boolean;
}

export function isMap(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Decodes struct `name` from `v`; `seq: false` for structs the reference refuses as arrays. */
export function decodeStruct(v: unknown, name: string, fields: readonly FieldSpec[], opts: { seq?: boolean } = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (Array.isArray(v) && opts.seq !== false) {
    fields.forEach((f, i) => {
      if (i < v.length) out[f.name] = f.decode(v[i]);
      else if (f.required) throw invalidParams(`invalid length ${v.length}, expected struct ${name} with ${fields.length} elements`);
    });
    if (v.length > fields.length) throw invalidParams(`invalid length ${v.length}, expected fewer elements in array`);
    return out;
  }
  if (!isMap(v)) throw typeError(v, `struct ${name}`);
  const byName = new Map(fields.map((f) => [f.name, f]));
  for (const [k, value] of Object.entries(v)) {
    const f = byName.get(k);
    if (f && value !== undefined) out[k] = f.decode(value);
  }
  for (const f of fields) if (f.required && !(f.name in out)) throw invalidParams(Messages.missingField(f.name));
  return out;
}

export const bool = (v: unknown): boolean => {
  if (typeof v !== 'boolean') throw typeError(v, 'a boolean');
  return v;
};
export const str = (v: unknown): string => {
  if (typeof v !== 'string') throw typeError(v, 'a string');
  return v;
};
export const optional =
  <T>(d: (v: unknown) => T) =>
  (v: unknown): T | undefined =>
    v === null ? undefined : d(v);
export const seqOf =
  <T>(d: (v: unknown) => T) =>
  (v: unknown): T[] => {
    if (!Array.isArray(v)) throw typeError(v, 'a sequence');
    return v.map(d);
  };
/** An unsigned integer of at most `max` (`what`: serde's type name, u16 / u64). */
export const uintOf =
  (what: string, max: number) =>
  (v: unknown): number => {
    if (typeof v !== 'number') throw typeError(v, what);
    if (!Number.isInteger(v) || v < 0 || v > max) throw invalidParams('invalid number');
    return v;
  };

const UUID_GROUPS = [8, 4, 4, 4, 12];
const UUID_STARTS = [0, 9, 14, 19, 24];

/**
 * A UUID as the reference's `uuid` crate parses one (simple, hyphenated, `{…}` or `urn:uuid:`),
 * with its error texts: which character, how many groups, which group has the wrong length.
 */
export function uuid(v: unknown): string {
  const s = str(v);
  const hyphenated = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
  if (/^[0-9a-fA-F]{32}$/.test(s) || hyphenated.test(s)) return s;
  let body = s;
  let offset = 0;
  let simple = true;
  if (s.length >= 2 && s.startsWith('{') && s.endsWith('}')) {
    body = s.slice(1, -1);
    offset = 1;
    simple = false;
  } else if (s.startsWith('urn:uuid:')) {
    body = s.slice(9);
    offset = 9;
    simple = false;
  }
  if (!simple && hyphenated.test(body)) return s;
  const bounds: number[] = [];
  let hyphens = 0;
  let index = 0;
  for (const ch of body) {
    if (ch === '-') {
      if (hyphens < 4) bounds[hyphens] = index;
      hyphens++;
    } else if (!/^[0-9a-fA-F]$/.test(ch)) {
      throw invalidParams(`invalid character: expected an optional prefix of \`urn:uuid:\` followed by [0-9a-fA-F-], found \`${ch}\` at ${index + offset + 1}`);
    }
    index += Buffer.byteLength(ch);
  }
  if (hyphens === 0 && simple) throw invalidParams(`invalid length: expected length 32 for simple format, found ${Buffer.byteLength(s)}`);
  if (hyphens !== 4) throw invalidParams(`invalid group count: expected 5, found ${hyphens + 1}`);
  for (let i = 0; i < 4; i++) {
    if (bounds[i] !== UUID_STARTS[i + 1] - 1) throw invalidParams(`invalid group length in group ${i}: expected ${UUID_GROUPS[i]}, found ${bounds[i] - UUID_STARTS[i]}`);
  }
  throw invalidParams(`invalid group length in group 4: expected 12, found ${Buffer.byteLength(s) - UUID_STARTS[4]}`);
}
