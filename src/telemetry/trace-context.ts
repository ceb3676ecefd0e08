// A request's wire `trace` member (W3C Trace Context) and the sampling decision for a server
// span, without the OpenTelemetry SDK: the same rules as its W3CTraceContextPropagator,
// TraceState, ParentBasedSampler and TraceIdRatioBasedSampler (each compared with the SDK's in
// test/telemetry/trace-context.test.ts), so the server's span path never builds a Context, a
// SpanContext or a TraceState object, and never loads the SDK's trace modules.
import type { TelemetryConfig } from './config';

/** Longest traceparent/tracestate considered (W3C: 55 and 512 chars). */
export const MAX_TRACE_CHARS = 1024;

/** A valid remote parent: its ids (lowercase hex), whether it was sampled, its tracestate as the SDK re-serializes it. */
export interface WireParent {
  traceId: string;
  spanId: string;
  sampled: boolean;
  /** undefined when absent or empty once invalid members are dropped. */
  traceState: string | undefined;
}

// The SDK's TRACE_PARENT_REGEX (@opentelemetry/core W3CTraceContextPropagator).
const TRACE_PARENT = /^\s?((?!ff)[\da-f]{2})-((?![0]{32})[\da-f]{32})-((?![0]{16})[\da-f]{16})-([\da-f]{2})(-.*)?\s?$/;

/** The parent of a wire `trace` member; anything malformed is ignored (undefined: a new root). */
export function parseWireTrace(t: unknown): WireParent | undefined {
  if (t === null || typeof t !== 'object' || Array.isArray(t)) return undefined;
  const { traceparent, tracestate } = t as Record<string, unknown>;
  if (typeof traceparent !== 'string' || traceparent.length > MAX_TRACE_CHARS || traceparent === '') return undefined;
  const m = TRACE_PARENT.exec(traceparent);
  // A future version may append fields; version 00 may not.
  if (!m || (m[1] === '00' && m[5])) return undefined;
  const state = typeof tracestate === 'string' && tracestate !== '' && tracestate.length <= MAX_TRACE_CHARS ? serializeTraceState(tracestate) : '';
  return { traceId: m[2], spanId: m[3], sampled: (parseInt(m[4], 16) & 1) === 1, traceState: state === '' ? undefined : state };
}

// The SDK's tracestate validators (@opentelemetry/core internal/validators).
const KEY_CHARS = '[_0-9a-z-*/]';
const VALID_KEY = new RegExp(`^(?:[a-z]${KEY_CHARS}{0,255}|[a-z0-9]${KEY_CHARS}{0,240}@[a-z]${KEY_CHARS}{0,13})$`);
const VALID_VALUE = /^[ -~]{0,255}[!-~]$/;
const COMMA_OR_EQUAL = /,|=/;
const MAX_STATE_ITEMS = 32;
const MAX_STATE_LEN = 512;

/**
 * `new TraceState(raw).serialize()`: valid members in order, a repeated key at its first
 * position with its last value, at most 32 members and 512 characters.
 */
export function serializeTraceState(raw: string): string {
  const members = new Map<string, string>();
  let length = 0;
  for (const member of raw.split(',')) {
    const m = member.trim();
    const eq = m.indexOf('=');
    if (eq === -1) continue;
    const key = m.slice(0, eq);
    const value = m.slice(eq + 1);
    if (!VALID_KEY.test(key) || !VALID_VALUE.test(value) || COMMA_OR_EQUAL.test(value)) continue;
    const next = length + m.length + (members.size > 0 ? 1 : 0);
    if (next > MAX_STATE_LEN) continue;
    members.set(key, value);
    length = next;
    if (members.size >= MAX_STATE_ITEMS) break;
  }
  // The SDK keeps this map reversed and serializes it reversed again: insertion order.
  return Array.from(members, ([k, v]) => `${k}=${v}`).join(',');
}

/** TraceIdRatioBasedSampler's decision for a (valid) trace id: the XOR of its four 32-bit words below ratio × 2^32-1. */
export function ratioSamples(traceId: string, ratio: number): boolean {
  const r = typeof ratio !== 'number' || isNaN(ratio) ? 0 : ratio >= 1 ? 1 : ratio <= 0 ? 0 : ratio;
  const upper = Math.floor(r * 0xffffffff);
  let acc = 0;
  for (let i = 0; i < 32; i += 8) acc = (acc ^ parseInt(traceId.slice(i, i + 8), 16)) >>> 0;
  return acc < upper;
}

/** How a sampler decides: a root by a random draw at `rootRate`, a span with a remote parent by `parented`. */
export interface SpanSampler {
  /** Probability that a request without a parent starts a sampled trace. */
  readonly rootRate: number;
  parented(p: WireParent): boolean;
}

/**
 * The configured sampler. A root's trace id is itself random, so a ratio decision on it samples
 * the same fraction as a random draw made before any id exists (no ids for an unsampled root).
 * With a remote parent: the parent-based samplers follow the parent's sampled flag (their
 * defaults for remote parents: always on if sampled, always off if not); the others ignore it.
 */
export function spanSampler(c: TelemetryConfig['sampler']): SpanSampler {
  switch (c.name) {
    case 'always_on':
      return { rootRate: 1, parented: () => true };
    case 'always_off':
      return { rootRate: 0, parented: () => false };
    case 'traceidratio':
      return { rootRate: c.ratio, parented: (p) => ratioSamples(p.traceId, c.ratio) };
    case 'parentbased_always_off':
      return { rootRate: 0, parented: (p) => p.sampled };
    case 'parentbased_traceidratio':
      return { rootRate: c.ratio, parented: (p) => p.sampled };
    default:
      return { rootRate: 1, parented: (p) => p.sampled };
  }
}
