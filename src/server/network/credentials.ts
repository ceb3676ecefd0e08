// Credential masking for a proxied process (credentialMasking / credentialMaskingCustomProviders;
// docs/security.md "Credential masking"): the child's environment gets a dummy in place of each
// known secret, and the proxy puts the real value back only into the header form the secret's
// source names (`Authorization: Bearer <dummy>` by default; Token, Basic or a header of its own for
// a provider's `auth`) of a request to a destination that secret is bound to. Everything here is
// what the reference does, measured on codex 0.169 and 0.171 (docs/protocol.md "Managed
// network"): the built-in sources and their dummies (prefix kept, `masked`, a random tail, at
// least 40 / 51 characters), the custom providers of `credentialProviders` (snake_case keys, a
// dummy drawn from the provider's pattern), the destinations (HTTPS, or HTTP to a loopback
// host, with a path prefix), and that only a non-login `sh -c` start is masked.
import { randomInt } from 'node:crypto';
import { invalidParams, invalidRequest } from '../../protocol/errors';
import { describe, isMap, seqOf, str } from '../serde-struct';

export const BROKER_ACTIVE_ENV = 'CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE';
export const BROKERED_ENV = 'CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS';
/** The reference's log line when argv is not a non-login shell (its text, verbatim). */
export const MASKING_UNAVAILABLE = 'Credential masking is unavailable for this shell startup; preserving shell profiles and snapshots and running with unmasked credentials.';

// ---------------------------------------------------------------------------------------------
// Destinations

export interface Destination {
  scheme: 'http' | 'https';
  host: string;
  wildcard: boolean;
  port: number;
  pathPrefix: string;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1']);
const isLoopbackHost = (h: string) => LOOPBACK_NAMES.has(h) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h.endsWith('.localhost');
export const normalizeHost = (h: string) => h.trim().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();

/** A `url_prefixes` entry: HTTPS anywhere, HTTP only to a loopback host; no userinfo/query/fragment. */
export function parseDestination(value: string): Destination | undefined {
  const v = value.trim();
  const i = v.indexOf('://');
  const explicit = i >= 0 ? v.slice(0, i).toLowerCase() : undefined;
  let authority = i >= 0 ? v.slice(i + 3) : v;
  const wildcard = authority.startsWith('*.');
  if (wildcard) authority = `wildcard.${authority.slice(2)}`;
  let url: URL;
  try {
    url = new URL(`https://${authority}`);
  } catch {
    return undefined;
  }
  if (url.username || url.password || url.search || url.hash || authority.includes('?') || authority.includes('#')) return undefined;
  let host = normalizeHost(url.hostname);
  if (wildcard) host = host.slice('wildcard.'.length);
  if (host === '' || host.includes('*') || host.includes('/')) return undefined;
  const loopback = !wildcard && isLoopbackHost(host);
  let scheme: 'http' | 'https';
  if (explicit === undefined) scheme = loopback ? 'http' : 'https';
  else if (explicit === 'https') scheme = 'https';
  else if (explicit === 'http' && loopback) scheme = 'http';
  else return undefined;
  const u = scheme === 'http' ? new URL(`http://${authority}`) : url;
  return { scheme, host, wildcard, port: u.port === '' ? (scheme === 'http' ? 80 : 443) : Number(u.port), pathPrefix: u.pathname };
}

function hostMatches(d: Destination, host: string): boolean {
  return d.wildcard ? host.endsWith(`.${d.host}`) : host === d.host;
}

/**
 * A path that cannot mean something else to the origin than to this check: no dot segments,
 * no encoded dot, slash or backslash, no backslash (the reference's is_safe_for_authorization).
 */
export function safeAuthorizationPath(path: string): boolean {
  if (!path.startsWith('/') || path.includes('\\') || /%(2e|2f|5c|00)/i.test(path)) return false;
  return !path.split('/').some((s) => s === '.' || s === '..');
}

export function destinationMatches(d: Destination, scheme: 'http' | 'https', host: string, port: number, path: string): boolean {
  if (d.scheme !== scheme || d.port !== port || !hostMatches(d, host)) return false;
  if (!safeAuthorizationPath(path)) return false;
  if (d.pathPrefix === '/' || path === d.pathPrefix) return true;
  if (!path.startsWith(d.pathPrefix)) return false;
  return d.pathPrefix.endsWith('/') || path.slice(d.pathPrefix.length).startsWith('/');
}

// ---------------------------------------------------------------------------------------------
// Patterns: the regex subset a dummy can be drawn from

interface Atom {
  /** Characters the atom matches (undefined: any character but newline). */
  chars?: Set<string>;
  literal: boolean;
  min: number;
  max: number;
}

/** A group (or the whole pattern): alternatives, each a sequence, repeated min..max times. */
interface Group {
  alts: Term[][];
  min: number;
  max: number;
}

type Term = Atom | Group;

/** A compiled provider pattern (compilePattern). */
export interface Pattern {
  readonly top: Group;
}

const isGroup = (t: Term): t is Group => 'alts' in t;

const DIGITS = [...'0123456789'];
const LOWER = [...'abcdefghijklmnopqrstuvwxyz'];
const UPPER = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZ'];
const WORD = [...DIGITS, ...LOWER, ...UPPER, '_'];
const ALNUM = new Set([...DIGITS, ...LOWER, ...UPPER]);
const SPECIAL = new Set([...'.[]{}()*+?|\\^$']);
/** Groups inside groups, at most (a provider pattern is a token shape, not a grammar). */
const MAX_GROUP_DEPTH = 8;

export class UnsupportedPattern extends Error {}

/**
 * Compiles the supported subset: literal characters and escaped punctuation, `.`, `\d`, `\w`,
 * `[...]` sets with ranges (and `\d` / `\w` inside; not negated), groups `(…)`, `(?:…)` and
 * named `(?P<n>…)` / `(?<n>…)` with alternation `|` inside them and at the top, the quantifiers
 * `?`, `*`, `+`, `{n}`, `{n,}`, `{n,m}` on characters and groups, and `^` / `$` at the ends.
 * Anything else (look-around, flags, backreferences, negated sets, other escapes, lazy
 * quantifiers, anchors inside) throws UnsupportedPattern: a dummy that the pattern might not
 * accept is never made up.
 */
export function compilePattern(src: string): Pattern {
  let i = 0;
  if (src.startsWith('^')) i = 1;
  let end = src.length;
  if (src.endsWith('$') && !src.endsWith('\\$')) end -= 1;
  const bad = (why: string) => new UnsupportedPattern(`${why} at offset ${i} of \`${src}\``);
  const escape = (c: string | undefined, inSet: boolean): string[] => {
    if (c === undefined) throw bad('a trailing backslash');
    if (c === 'd') return DIGITS;
    if (c === 'w') return WORD;
    if (SPECIAL.has(c) || c === '-' || c === '/' || (inSet && c === ']')) return [c];
    throw bad(`the escape \\${c}`);
  };
  const charSet = (): Atom => {
    i += 1;
    if (src[i] === '^') throw bad('a negated set');
    const set = new Set<string>();
    let first = true;
    while (i < end && (src[i] !== ']' || first)) {
      first = false;
      let from: string[];
      if (src[i] === '\\') {
        from = escape(src[i + 1], true);
        i += 2;
      } else if (src[i] === '[') {
        throw bad('a nested set or class');
      } else {
        from = [src[i]];
        i += 1;
      }
      if (from.length === 1 && src[i] === '-' && i + 1 < end && src[i + 1] !== ']') {
        let to: string;
        if (src[i + 1] === '\\') {
          const e = escape(src[i + 2], true);
          if (e.length !== 1) throw bad('a range to a class');
          to = e[0];
          i += 3;
        } else {
          to = src[i + 1];
          i += 2;
        }
        const a = from[0].charCodeAt(0);
        const b = to.charCodeAt(0);
        if (b < a) throw bad('a reversed range');
        for (let k = a; k <= b; k++) set.add(String.fromCharCode(k));
      } else {
        for (const x of from) set.add(x);
      }
    }
    if (src[i] !== ']') throw bad('an unclosed set');
    i += 1;
    return { chars: set, literal: false, min: 1, max: 1 };
  };
  const quantify = (t: Term): void => {
    const q = src[i];
    if (q === '?' || q === '*' || q === '+') {
      t.min = q === '+' ? 1 : 0;
      t.max = q === '?' ? 1 : Infinity;
      i += 1;
    } else if (q === '{') {
      const m = /^\{(\d{1,4})(,(\d{0,4}))?\}/.exec(src.slice(i, end));
      if (!m) throw bad('a malformed repetition');
      t.min = Number(m[1]);
      t.max = m[2] === undefined ? t.min : m[3] === '' ? Infinity : Number(m[3]);
      if (t.max < t.min) throw bad('a reversed repetition');
      i += m[0].length;
    }
    if (i < end && (src[i] === '?' || src[i] === '+' || src[i] === '*' || src[i] === '{')) throw bad('a lazy or repeated quantifier');
  };
  const alternatives = (depth: number): Term[][] => {
    const alts: Term[][] = [[]];
    while (i < end && src[i] !== ')') {
      const c = src[i];
      let term: Term;
      if (c === '|') {
        i += 1;
        alts.push([]);
        continue;
      } else if (c === '(') {
        if (depth >= MAX_GROUP_DEPTH) throw bad('groups nested too deep');
        i += 1;
        if (src.startsWith('?:', i)) i += 2;
        else if (/^\?P?<[A-Za-z_][A-Za-z0-9_]*>/.test(src.slice(i, end))) i = src.indexOf('>', i) + 1;
        else if (src[i] === '?') throw bad('a group with flags or look-around');
        const inner = alternatives(depth + 1);
        if (src[i] !== ')' || i >= end) throw bad('an unclosed group');
        i += 1;
        term = { alts: inner, min: 1, max: 1 };
      } else if (c === '\\') {
        const set = escape(src[i + 1], false);
        term = { chars: new Set(set), literal: set.length === 1, min: 1, max: 1 };
        i += 2;
      } else if (c === '.') {
        term = { literal: false, min: 1, max: 1 };
        i += 1;
      } else if (c === '[') {
        term = charSet();
      } else if (SPECIAL.has(c)) {
        throw bad(`the operator ${c}`);
      } else {
        term = { chars: new Set([c]), literal: true, min: 1, max: 1 };
        i += 1;
      }
      quantify(term);
      alts[alts.length - 1].push(term);
    }
    return alts;
  };
  const top = alternatives(0);
  if (i < end) throw bad('an unopened group');
  return { top: { alts: top, min: 1, max: 1 } };
}

/** Backtracking steps one match may take; past them the value does not match (and stays unmasked). */
const MAX_MATCH_STEPS = 200_000;

/** The atom each character of `value` is matched by (a full match), or undefined. */
function assign(pattern: Pattern, value: string): Atom[] | undefined {
  let steps = 0;
  const out: Atom[] = [];
  const accepts = (a: Atom, ch: string) => (a.chars ? a.chars.has(ch) : ch !== '\n');
  // Backtracking over the terms of `seq` from `ti` at `pos`, then `next` with where they ended:
  // greedy first, as the regex would; a repeated group must move on (or still owe repetitions),
  // so an empty alternative cannot loop. Bounded in steps: a pathological pattern simply does
  // not match, and the value stays unmasked.
  const sequence = (seq: Term[], ti: number, pos: number, next: (pos: number) => boolean): boolean => {
    if (++steps > MAX_MATCH_STEPS) return false;
    if (ti === seq.length) return next(pos);
    const t = seq[ti];
    if (!isGroup(t)) {
      let n = 0;
      while (n < t.max && pos + n < value.length && accepts(t, value[pos + n])) n++;
      for (; n >= t.min; n--) {
        for (let k = 0; k < n; k++) out[pos + k] = t;
        if (sequence(seq, ti + 1, pos + n, next)) return true;
      }
      return false;
    }
    const repeat = (count: number, at: number): boolean => {
      if (++steps > MAX_MATCH_STEPS) return false;
      if (count < t.max) {
        for (const alt of t.alts) {
          if (sequence(alt, 0, at, (q) => (q > at || count < t.min) && repeat(count + 1, q))) return true;
        }
      }
      return count >= t.min && sequence(seq, ti + 1, at, next);
    };
    return repeat(0, pos);
  };
  return sequence([pattern.top], 0, 0, (pos) => pos === value.length) ? out.slice(0, value.length) : undefined;
}

/** Whether `value` is fully matched by the compiled pattern. */
export function patternMatches(pattern: Pattern, value: string): boolean {
  return assign(pattern, value) !== undefined;
}

/**
 * A dummy of `value` that the same pattern accepts: each character matched by a set or class is
 * redrawn from that set's letters and digits (of the same case where the set has them), every
 * literal kept, so the dummy is exactly as long as the secret. Undefined: the pattern does not
 * match, or leaves nothing to redraw.
 */
export function dummyFromPattern(pattern: Pattern, value: string): string | undefined {
  const who = assign(pattern, value);
  if (!who) return undefined;
  let changed = false;
  let out = '';
  for (let k = 0; k < value.length; k++) {
    const a = who[k];
    const ch = value[k];
    if (a.literal || !ALNUM.has(ch)) {
      out += ch;
      continue;
    }
    const pool = a.chars ? [...a.chars].filter((x) => ALNUM.has(x)) : [...ALNUM];
    const same = pool.filter((x) => (DIGITS.includes(ch) ? DIGITS.includes(x) : LOWER.includes(ch) ? LOWER.includes(x) : UPPER.includes(x)));
    const from = same.length > 0 ? same : pool;
    if (from.length <= 1) {
      out += ch;
      continue;
    }
    out += from[randomInt(from.length)];
    changed = true;
  }
  return changed && out !== value ? out : undefined;
}

// ---------------------------------------------------------------------------------------------
// Providers

/**
 * Where a request may carry a credential's dummy for the proxy to put the real value back
 * (a provider's `auth`, measured on codex 0.171): `Authorization: Bearer <dummy>`,
 * `Authorization: Token <dummy>`, `Authorization: Basic base64(<user>:<dummy>)`, or the value
 * `prefix + <dummy>` of the provider's own `header`.
 */
export type AuthForm = { kind: 'bearer' | 'token' | 'basic' } | { kind: 'header'; header: string; prefix: string };

const AUTH_KINDS = ['bearer', 'token', 'basic', 'header'] as const;
const BEARER: AuthForm[] = [{ kind: 'bearer' }];

export interface CustomProvider {
  name: string;
  env: string[];
  patterns: string[];
  urlPrefixes: string[];
  urlPrefixFromEnv?: string;
  /** The header forms its credentials are put back into (Bearer when `auth` is empty). */
  forms: AuthForm[];
  /** Set when the provider asks for what is not implemented (refused when masking is on). */
  unsupported?: string;
}

const PROVIDER_FIELDS = ['env', 'patterns', 'url_prefixes', 'url_prefix_from_env', 'auth', 'header', 'prefix'];

const strings = seqOf(str);

/**
 * One `auth` entry: a form's name, or the same as a one-key map whose value is empty (`{"bearer":
 * null}`, `{"bearer": {}}`: serde's other spelling of a unit variant, which the reference takes),
 * with the reference's -32602 texts for anything else (measured on 0.171).
 */
function authKind(a: unknown, describeValue: (v: unknown) => string): string {
  const known = (k: string) => {
    if (!(AUTH_KINDS as readonly string[]).includes(k)) throw invalidParams(`unknown variant \`${k}\`, expected one of ${AUTH_KINDS.map((x) => `\`${x}\``).join(', ')}`);
    return k;
  };
  if (typeof a === 'string') return known(a);
  if (!isMap(a)) throw invalidParams(`invalid type: ${describeValue(a)}, expected string or map`);
  const keys = Object.keys(a);
  if (keys.length !== 1) throw invalidParams('invalid value: map, expected map with a single key');
  const kind = known(keys[0]);
  const unit = a[kind];
  if (unit !== null && !(isMap(unit) && Object.keys(unit).length === 0)) throw invalidParams(`invalid type: ${describeValue(unit)}, expected unit`);
  return kind;
}

/**
 * `credentialProviders` (name → CredentialProviderConfig), with the reference's -32602 texts.
 * `auth` lists the forms (`bearer`, `token`, `basic`, `header`; empty: bearer); `header` names
 * the header of the `header` form and `prefix` its value's prefix, both only with it. A provider
 * the reference would ignore with a warning (a `header` form without exactly one header name, a
 * header or prefix without that form: its credentials left unmasked) is marked, and refused
 * (-32600) by checkProviders when masking is on.
 */
export function decodeCredentialProviders(v: unknown, describeValue: (v: unknown) => string = describe): CustomProvider[] {
  const typeError = (x: unknown, expected: string) => invalidParams(`invalid type: ${describeValue(x)}, expected ${expected}`);
  if (!isMap(v)) throw typeError(v, 'a map');
  const out: CustomProvider[] = [];
  for (const [name, p] of Object.entries(v)) {
    if (!isMap(p)) throw typeError(p, 'struct CredentialProviderConfig');
    for (const k of Object.keys(p)) {
      if (!PROVIDER_FIELDS.includes(k)) throw invalidParams(`unknown field \`${k}\`, expected one of ${PROVIDER_FIELDS.map((f) => `\`${f}\``).join(', ')}`);
    }
    const opt = (k: string) => (p[k] === undefined || p[k] === null ? [] : strings(p[k]));
    const provider: CustomProvider = { name, env: opt('env'), patterns: opt('patterns'), urlPrefixes: opt('url_prefixes'), forms: BEARER };
    if (p.url_prefix_from_env !== undefined && p.url_prefix_from_env !== null) provider.urlPrefixFromEnv = str(p.url_prefix_from_env);
    const auth = p.auth === undefined || p.auth === null ? [] : seqOf((x) => x)(p.auth);
    const header = p.header === undefined || p.header === null ? undefined : str(p.header);
    const prefix = p.prefix === undefined || p.prefix === null ? undefined : str(p.prefix);
    const kinds: string[] = [];
    for (const entry of auth) {
      const a = authKind(entry, describeValue);
      if (!kinds.includes(a)) kinds.push(a);
    }
    // A header name exactly when the header form is listed; a prefix only with it.
    const headerForm = kinds.includes('header');
    if (headerForm ? header === undefined || header.trim() === '' : header !== undefined) {
      provider.unsupported ??= `credential provider \`${name}\` requires a header name exactly when using header authentication`;
    } else if (!headerForm && prefix !== undefined) {
      provider.unsupported ??= `credential provider \`${name}\` requires header authentication to use a header prefix`;
    }
    if (kinds.length > 0 && !provider.unsupported) {
      provider.forms = kinds.map((k): AuthForm => (k === 'header' ? { kind: 'header', header: header!, prefix: prefix ?? '' } : { kind: k as 'bearer' | 'token' | 'basic' }));
    }
    out.push(provider);
  }
  return out;
}

/** What masking cannot do for these providers refuses the start (-32600), before anything runs. */
export function checkProviders(providers: CustomProvider[]): void {
  for (const p of providers) {
    if (p.unsupported) throw invalidRequest(`networkProxy: credential provider \`${p.name}\`: ${p.unsupported}; refusing to run with the credential unmasked`);
    for (const pat of p.patterns) {
      try {
        compilePattern(pat);
      } catch (e) {
        if (!(e instanceof UnsupportedPattern)) throw e;
        throw invalidRequest(`networkProxy: credential provider \`${p.name}\`: pattern uses regex syntax this exec-server cannot draw a dummy from (${e.message}); refusing to run with the credential unmasked`);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The broker of one process

export interface Credential {
  envVar: string;
  real: string;
  dummy: string;
  destinations: Destination[];
  /** The header forms the real value is put back into. */
  forms: AuthForm[];
}

const GITHUB_PREFIXES = ['github_pat_', 'ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_'];
const GITHUB_CLOUD: Destination[] = [
  { scheme: 'https', host: 'github.com', wildcard: false, port: 443, pathPrefix: '/' },
  { scheme: 'https', host: 'api.github.com', wildcard: false, port: 443, pathPrefix: '/' },
  { scheme: 'https', host: 'ghe.com', wildcard: true, port: 443, pathPrefix: '/' },
];
const OPENAI: Destination[] = [{ scheme: 'https', host: 'api.openai.com', wildcard: false, port: 443, pathPrefix: '/' }];
const isGithubCloud = (h: string) => h === 'github.com' || h === 'api.github.com' || h.endsWith('.ghe.com');
const TAIL = [...ALNUM];

/** prefix + `masked` + a random letters-and-digits tail, at least `min` and the secret's length. */
function shapedDummy(real: string, prefix: string, min: number): string {
  let d = `${prefix}masked`;
  const len = Math.max(real.length, min, d.length + 16);
  while (d.length < len) d += TAIL[randomInt(TAIL.length)];
  return d;
}
const githubPrefix = (v: string) => GITHUB_PREFIXES.find((p) => v.startsWith(p)) ?? 'ghp_';
function openaiPrefix(v: string): string {
  if (!v.startsWith('sk-')) return 'sk-';
  const j = v.indexOf('-', 3);
  return j < 0 ? 'sk-' : v.slice(0, j + 1);
}
/** What can go into a header value (the reference refuses others as a credential). */
const headerSafe = (v: string) => /^[\x21-\x7e]+$/.test(v);

export interface MaskResult {
  env: Record<string, string>;
  credentials: Credential[];
  warnings: string[];
}

/**
 * Replaces the known secrets of `env` with dummies (a copy; `env` is not changed) and adds
 * CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE and CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS.
 */
export function maskEnv(env: Record<string, string>, providers: CustomProvider[]): MaskResult {
  const out = { ...env };
  const credentials: Credential[] = [];
  const warnings: string[] = [];
  const take = (envVar: string, destinations: Destination[], dummyOf: (real: string) => string | undefined, forms: AuthForm[] = BEARER) => {
    const raw = out[envVar];
    if (raw === undefined) return;
    const real = raw.trim();
    if (real === '' || !headerSafe(real) || credentials.some((c) => c.dummy === real)) return;
    const known = credentials.find((c) => c.envVar === envVar);
    if (known) return;
    const dummy = dummyOf(real);
    if (dummy === undefined) return;
    credentials.push({ envVar, real, dummy, destinations, forms });
    out[envVar] = dummy;
  };
  for (const k of ['GH_TOKEN', 'GITHUB_TOKEN']) take(k, GITHUB_CLOUD, (r) => shapedDummy(r, githubPrefix(r), 40));
  const ghHost = env.GH_HOST !== undefined ? normalizeHost(env.GH_HOST) : '';
  if (ghHost !== '' && !isGithubCloud(ghHost)) {
    const d: Destination[] = [{ scheme: 'https', host: ghHost, wildcard: false, port: 443, pathPrefix: '/' }];
    for (const k of ['GH_ENTERPRISE_TOKEN', 'GITHUB_ENTERPRISE_TOKEN']) take(k, d, (r) => shapedDummy(r, githubPrefix(r), 40));
  }
  take('OPENAI_API_KEY', OPENAI, (r) => shapedDummy(r, openaiPrefix(r), 51));
  for (const p of providers) {
    if (p.patterns.length === 0) {
      warnings.push(`ignoring invalid credential provider provider=${p.name} error=credential provider \`${p.name}\` has no credential patterns`);
      continue;
    }
    const prefixes = [...p.urlPrefixes];
    if (p.urlPrefixFromEnv !== undefined && env[p.urlPrefixFromEnv]) prefixes.push(env[p.urlPrefixFromEnv]);
    const destinations = prefixes.map(parseDestination);
    if (destinations.length === 0 || destinations.some((d) => d === undefined)) {
      warnings.push(`ignoring invalid credential provider provider=${p.name} error=invalid destination for credential provider \`${p.name}\``);
      continue;
    }
    const compiled = p.patterns.map(compilePattern);
    for (const k of p.env) {
      take(k, destinations as Destination[], (real) => {
        for (const pattern of compiled) {
          const d = dummyFromPattern(pattern, real);
          if (d !== undefined) return d;
        }
        return undefined;
      }, p.forms);
    }
  }
  out[BROKER_ACTIVE_ENV] = '1';
  const marker: [string, string][] = [];
  for (const c of credentials) marker.push([`@alias:${c.envVar}`, c.dummy], [c.envVar, c.dummy]);
  marker.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  out[BROKERED_ENV] = JSON.stringify(marker);
  return { env: out, credentials, warnings };
}

/** Whether argv is a non-login shell command (`bash -c …`), the only start the reference masks. */
export function maskableArgv(argv: readonly string[]): boolean {
  const base = argv[0]?.split('/').pop() ?? '';
  return ['bash', 'sh', 'zsh', 'dash'].includes(base) && argv[1] === '-c' && argv.length >= 3;
}

/** The swap rules of one process's proxy. */
export class CredentialBroker {
  constructor(readonly credentials: readonly Credential[]) {}

  /** Whether a CONNECT to host:port must be intercepted (some credential is bound there over HTTPS). */
  interceptsTls(host: string, port: number): boolean {
    const h = normalizeHost(host);
    return this.credentials.some((c) => c.destinations.some((d) => d.scheme === 'https' && d.port === port && hostMatches(d, h)));
  }

  /**
   * The request's headers with a credential's dummy replaced by its real value in the header
   * forms of that credential, when the request goes to a scheme, host, port and path the
   * credential is bound to: `Authorization` (exactly one such header) as `Bearer <dummy>`,
   * `Token <dummy>` or `Basic base64(<user>:<dummy>)`, and a form's own header (exactly one) as
   * `prefix + <dummy>`. Anything else is returned as it came (a dummy stays a dummy).
   */
  swap(headers: [string, string][], scheme: 'http' | 'https', host: string, port: number, path: string): [string, string][] {
    const h = normalizeHost(host);
    const bound = this.credentials.filter((c) => c.destinations.some((d) => destinationMatches(d, scheme, h, port, path)));
    if (bound.length === 0) return headers;
    let out = headers;
    /** The one real value of the bound credentials with this dummy and a form that `accepts`. */
    const realFor = (dummy: string, accepts: (f: AuthForm) => boolean) => {
      const reals = new Set(bound.filter((c) => c.dummy === dummy && c.forms.some(accepts)).map((c) => c.real));
      return reals.size === 1 ? [...reals][0] : undefined;
    };
    const only = (name: string) => {
      const at = out.map((x, i) => [x, i] as const).filter(([x]) => x[0].toLowerCase() === name);
      return at.length === 1 ? at[0] : undefined;
    };
    const auth = only('authorization');
    if (auth) {
      const [[name, value], index] = auth;
      const m = /^(Bearer|Token|Basic) (\S+)$/.exec(value);
      let replaced: string | undefined;
      if (m && m[1] !== 'Basic') {
        const kind = m[1] === 'Bearer' ? 'bearer' : 'token';
        const real = realFor(m[2], (f) => f.kind === kind);
        if (real !== undefined) replaced = `${m[1]} ${real}`;
      } else if (m) {
        const decoded = Buffer.from(m[2], 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        const real = colon >= 0 ? realFor(decoded.slice(colon + 1), (f) => f.kind === 'basic') : undefined;
        if (real !== undefined) replaced = `Basic ${Buffer.from(`${decoded.slice(0, colon + 1)}${real}`, 'utf8').toString('base64')}`;
      }
      if (replaced !== undefined) {
        out = out.slice();
        out[index] = [name, replaced];
      }
    }
    for (const c of bound) {
      for (const f of c.forms) {
        if (f.kind !== 'header') continue;
        const one = only(f.header.toLowerCase());
        if (!one || one[0][1] !== `${f.prefix}${c.dummy}`) continue;
        const real = realFor(c.dummy, (g) => g.kind === 'header' && g.header.toLowerCase() === f.header.toLowerCase() && g.prefix === f.prefix);
        if (real === undefined) continue;
        out = out.slice();
        out[one[1]] = [one[0][0], `${f.prefix}${real}`];
      }
    }
    return out;
  }
}
