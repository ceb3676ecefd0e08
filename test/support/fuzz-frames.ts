// Frame generators for fuzzing the exec-server router and wire (fast-check arbitraries),
// plus the safety sanitizer that keeps generated inputs from touching anything outside a
// scratch directory: the server under test really runs processes and really writes files.
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import fc from 'fast-check';

export const KNOWN_METHODS = [
  'initialize', 'process/start', 'process/read', 'process/write', 'process/signal', 'process/terminate',
  'process/resize', 'process/closeStdin', 'fs/readFile', 'fs/writeFile', 'fs/createDirectory', 'fs/getMetadata',
  'fs/canonicalize', 'fs/readDirectory', 'fs/remove', 'fs/copy', 'fs/walk', 'fs/open', 'fs/readBlock', 'fs/close',
  'fs/rename', 'fs/watch', 'fs/unwatch', 'fs/watchMissing', 'environment/info', 'environment/status',
  'environmentConfig/read', 'http/request',
] as const;

/** Programs a fuzzed process/start may run: harmless whatever their arguments are. */
export const SAFE_PROGRAMS = ['/bin/true', '/bin/echo', '/bin/sleep', '/bin/cat', 'exec-server-fuzz-no-such-binary'];

/** Ids drawn from a small pool so handles/processes/watches collide and get reused. */
const smallId = fc.oneof(fc.constantFrom('p1', 'p2', 'h1', 'w1', '1', ''), fc.integer({ min: -2, max: 5 }));

const nasty = fc.oneof(
  fc.constantFrom(
    Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, -1, -0, 2 ** 31, 2 ** 32 + 1, 1e308, -1e308, 0.5, 1e-9,
    '', ' ', '\u0000', '\uffff', '\ud800', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', 'é'.repeat(300), '%00', '%2e%2e', '..', 'NaN', '-1', '1e999', 'true', '{}', '[]',
    null, true, false, [], {}, [null], { __proto__: null }, { constructor: 1 }, { toString: 1 },
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.double(),
  fc.bigInt().map((b) => Number(b)),
);

/** Arbitrary JSON-like garbage, including deep nesting. */
const garbage: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: nasty },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 3, withNullPrototype: true, withObjectString: true }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 60 }).map((d) => deepNest(d)) },
);

function deepNest(depth: number): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

const b64 = fc.uint8Array({ maxLength: 64 }).map((u) => Buffer.from(u).toString('base64'));
const relPath = fc.stringMatching(/^[a-z0-9_-]{1,8}(\/[a-z0-9_-]{1,8}){0,2}$/);

/** A plausible, valid-looking params object for each method (before mutation). Paths are relative to the scratch dir. */
function template(method: string): fc.Arbitrary<Record<string, unknown>> {
  const p = relPath.map((r) => `@scratch/${r}`);
  switch (method) {
    case 'initialize':
      return fc.record({ clientName: fc.string(), resumeSessionId: fc.option(fc.uuid()) });
    case 'process/start':
      return fc.record({
        processId: smallId,
        argv: fc.tuple(fc.constantFrom(...SAFE_PROGRAMS), fc.array(fc.constantFrom('0', '0.01', 'x', '-n', '--', '1'), { maxLength: 3 })).map(([a, r]) => [a, ...r]),
        cwd: fc.constant('@scratch/'),
        env: fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 }),
        tty: fc.boolean(),
        pipeStdin: fc.boolean(),
        arg0: fc.option(fc.string({ maxLength: 8 })),
        rows: fc.integer({ min: -5, max: 500 }),
        cols: fc.integer({ min: -5, max: 500 }),
      });
    case 'process/read':
      return fc.record({ processId: smallId, afterSeq: fc.option(fc.integer({ min: -3, max: 100 })), maxBytes: fc.option(fc.integer()), waitMs: fc.option(fc.integer({ min: 0, max: 20 })) });
    case 'process/write':
      return fc.record({ processId: smallId, chunk: b64, writeId: fc.string({ maxLength: 6 }) });
    case 'process/signal':
      return fc.record({ processId: smallId, signal: fc.constantFrom('interrupt', 'kill', 'SIGKILL', '') });
    case 'process/resize':
      return fc.record({ processId: smallId, rows: fc.integer(), cols: fc.integer() });
    case 'process/terminate':
    case 'process/closeStdin':
      return fc.record({ processId: smallId });
    case 'fs/writeFile':
      return fc.record({ path: p, dataBase64: b64 });
    case 'fs/createDirectory':
      return fc.record({ path: p, recursive: fc.option(fc.boolean()) });
    case 'fs/remove':
      return fc.record({ path: p, recursive: fc.option(fc.boolean()), force: fc.option(fc.boolean()) });
    case 'fs/copy':
    case 'fs/rename':
      return fc.record({ sourcePath: p, destinationPath: p, recursive: fc.boolean(), overwrite: fc.boolean() });
    case 'fs/walk':
      return fc.record({
        path: p,
        options: fc.record({ maxDepth: fc.integer({ min: -1, max: 100 }), maxDirectories: fc.integer({ min: -1, max: 20_000 }), maxEntries: fc.integer({ min: -1, max: 60_000 }), followDirectorySymlinks: fc.boolean() }),
      });
    case 'fs/open':
      return fc.record({ handleId: smallId, path: p });
    case 'fs/readBlock':
      return fc.record({ handleId: smallId, offset: fc.integer({ min: -1, max: 1 << 20 }), len: fc.integer({ min: -1, max: (1 << 20) + 1 }) });
    case 'fs/close':
      return fc.record({ handleId: smallId });
    case 'fs/watch':
      return fc.record({ watchId: smallId, path: p, recursive: fc.boolean() });
    case 'fs/unwatch':
      return fc.record({ watchId: smallId });
    case 'fs/watchMissing':
      return fc.record({ watchId: smallId, missing: fc.array(p, { maxLength: 2 }), present: fc.constant(null) });
    case 'http/request':
      return fc.record({ method: fc.constantFrom('GET', 'POST', 'BREW', ''), url: fc.constant('@http'), headers: fc.array(fc.record({ name: fc.string({ maxLength: 6 }), value: fc.string({ maxLength: 6 }) }), { maxLength: 2 }), timeoutMs: fc.integer({ min: 1, max: 200 }), redirectPolicy: fc.constantFrom('follow', 'stop'), requestId: smallId });
    case 'environmentConfig/read':
      return fc.record({ cwd: p, configPaths: fc.array(p, { maxLength: 2 }), requirementsPaths: fc.constant([]) });
    default:
      return fc.record({ path: p });
  }
}

/** Mutations of a valid template: drop, retype, add fields; or replace params wholesale. */
function mutated(method: string): fc.Arbitrary<unknown> {
  return template(method).chain((t) => {
    const keys = Object.keys(t);
    return fc.oneof(
      { weight: 6, arbitrary: fc.constant(t) },
      { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...keys), garbage).map(([k, g]) => ({ ...t, [k]: g })) },
      { weight: 2, arbitrary: fc.subarray(keys).map((drop) => Object.fromEntries(Object.entries(t).filter(([k]) => !drop.includes(k)))) },
      { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 10 }), garbage).map(([k, g]) => ({ ...t, [k]: g, sandbox: null, trace: { traceparent: 'x' } })) },
      { weight: 1, arbitrary: garbage },
    );
  });
}

export interface Frame {
  method: string;
  params: unknown;
}

export const methodArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...KNOWN_METHODS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom('', 'process/', 'fs', 'FS/READFILE', 'initialized', '__proto__', 'constructor', 'process/start ', 'x'.repeat(5000)) },
);

/** A request frame: mostly well-formed method + mutated params. */
export const frameArb: fc.Arbitrary<Frame> = methodArb.chain((method) =>
  fc.oneof({ weight: 5, arbitrary: mutated(method) }, { weight: 1, arbitrary: garbage }).map((params) => ({ method, params })),
);

/**
 * Makes a generated value safe to execute for real: every string that names a location is
 * pinned under `scratch` (absolute paths, file URIs and `..` traversal included), URLs point
 * at a closed local port, program names come from SAFE_PROGRAMS, long polls are clamped.
 */
export function sanitize(value: unknown, scratch: string, closedPortUrl: string, key = ''): unknown {
  if (typeof value === 'string') return sanitizeString(value, scratch, closedPortUrl, key);
  if (Array.isArray(value)) {
    return value.map((v, i) => {
      if (key === 'argv' && i === 0 && typeof v === 'string') return safeProgram(v);
      return sanitize(v, scratch, closedPortUrl, key === 'argv' ? 'argv-rest' : key);
    });
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = Object.create(Object.getPrototypeOf(value) === null ? null : Object.prototype);
    for (const [k, v] of Object.entries(value)) {
      let nv: unknown;
      if (k === 'waitMs' && typeof v === 'number') nv = Math.min(v, 20);
      else if (k === 'timeoutMs' && typeof v === 'number') nv = Math.min(v, 200);
      else if (k === 'arg0' && typeof v === 'string') nv = safeProgram(v);
      else nv = sanitize(v, scratch, closedPortUrl, k);
      // defineProperty: a generated `__proto__` key stays an own property (as JSON.parse makes it).
      Object.defineProperty(out, k, { value: nv, enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

function safeProgram(s: string): string {
  if (SAFE_PROGRAMS.includes(s)) return s;
  let h = 0;
  for (const c of s) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return SAFE_PROGRAMS[h % SAFE_PROGRAMS.length];
}

function sanitizeString(s: string, scratch: string, closedPortUrl: string, key: string): string {
  if (s === '@http') return closedPortUrl;
  if (s.startsWith('@scratch/')) {
    const rel = s.slice('@scratch/'.length);
    const abs = path.join(scratch, rel);
    // Alternate URI and plain-path spellings (both accepted by this project's server).
    return rel.length % 2 ? pathToFileURL(abs).href : abs;
  }
  if (key === 'argv-rest' || key === 'env' || key === 'processId' || key === 'writeId' || key === 'clientName') {
    // Not locations; but still keep `cat`/`sleep` arguments from naming real files.
    if (key === 'argv-rest' && (s.includes('/') || s.startsWith('~'))) return 'x';
    return s;
  }
  // Any other string could be read as a path or URL by some handler: pin it.
  if (/^[a-z][a-z0-9+.-]*:/i.test(s)) {
    if (/^file:/i.test(s)) return inside(scratch, tryFileUrl(s)) ?? pathToFileURL(path.join(scratch, 'pinned')).href;
    return closedPortUrl;
  }
  if (s.startsWith('/') || s.startsWith('~') || s.includes('..') || /%2e|%2f|%00/i.test(s)) {
    return inside(scratch, s) ?? path.join(scratch, 'pinned');
  }
  return s;
}

function tryFileUrl(s: string): string | undefined {
  try {
    return fileURLToPath(s);
  } catch {
    return undefined;
  }
}

function inside(scratch: string, p: string | undefined): string | undefined {
  if (p === undefined || !path.isAbsolute(p)) return undefined;
  const r = path.resolve(p);
  return r === scratch || r.startsWith(scratch + path.sep) ? p : undefined;
}
