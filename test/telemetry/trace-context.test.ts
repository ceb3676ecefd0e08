// The server's own reading of a wire `trace` member and its sampling decisions against the
// OpenTelemetry SDK's (W3CTraceContextPropagator, TraceState, the six samplers): the same
// parent (or none) for valid, malformed and edge-case traceparents and tracestates, and the same
// decision for every sampler configuration over random and edge-case trace ids.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { ROOT_CONTEXT, SpanKind, defaultTextMapGetter, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { SamplingDecision } from '@opentelemetry/sdk-trace-base';
import { SAMPLERS } from '../../src/telemetry/config';
import { sampler as sdkSampler } from '../../src/telemetry/otel-client';
import { parseWireTrace, serializeTraceState, spanSampler } from '../../src/telemetry/trace-context';

const propagator = new W3CTraceContextPropagator();
const tid = '4bf92f3577b34da6a3ce929d0e0e4736';
const sid = '00f067aa0ba902b7';

/** What the SDK made of the member before this server read it itself (otel.ts extractTrace until 2026-12-06). */
function sdkParent(t: unknown) {
  if (t === null || typeof t !== 'object' || Array.isArray(t)) return undefined;
  const { traceparent, tracestate } = t as Record<string, unknown>;
  if (typeof traceparent !== 'string' || traceparent.length > 1024) return undefined;
  const carrier: Record<string, string> = { traceparent };
  if (typeof tracestate === 'string' && tracestate.length <= 1024) carrier.tracestate = tracestate;
  const sc = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter));
  if (!sc) return undefined;
  const state = sc.traceState?.serialize();
  return { traceId: sc.traceId, spanId: sc.spanId, sampled: (sc.traceFlags & 1) === 1, traceState: state ? state : undefined };
}

const traceparents = [
  `00-${tid}-${sid}-01`,
  `00-${tid}-${sid}-00`,
  `00-${tid}-${sid}-03`,
  `00-${tid}-${sid}-02`,
  ` 00-${tid}-${sid}-01 `,
  `01-${tid}-${sid}-01-extra`,
  `00-${tid}-${sid}-01-extra`,
  `ff-${tid}-${sid}-01`,
  `00-${'0'.repeat(32)}-${sid}-01`,
  `00-${tid}-${'0'.repeat(16)}-01`,
  `00-${tid.toUpperCase()}-${sid}-01`,
  `00-${tid}-${sid}`,
  `00-${tid}-${sid}-1`,
  `0-${tid}-${sid}-01`,
  `00-${tid}0-${sid}-01`,
  'garbage',
  '',
  `00-${tid}-${sid}-01`.repeat(100),
];
const tracestates: unknown[] = [
  undefined,
  '',
  'vendor=1',
  'vendor=1,other=x',
  ' a=1 , b=2 ',
  'a=1,a=2,b=3',
  'Bad=1,good=2',
  'k=v=w,ok=1',
  'k=,ok=1',
  'noequals,ok=1',
  'tenant@vendor=x,1bad=y,a1@b=z',
  Array.from({ length: 40 }, (_, i) => `k${i}=v${i}`).join(','),
  Array.from({ length: 20 }, (_, i) => `key${i}=${'v'.repeat(30)}`).join(','),
  'x'.repeat(2000),
  42,
];

test('a wire trace member gives the parent the SDK propagator gives, or none', () => {
  let parents = 0;
  for (const traceparent of traceparents) {
    for (const tracestate of tracestates) {
      const t = tracestate === undefined ? { traceparent } : { traceparent, tracestate };
      const want = sdkParent(t);
      assert.deepEqual(parseWireTrace(t), want, JSON.stringify(t).slice(0, 200));
      if (want) parents++;
    }
  }
  assert.ok(parents >= 5 * tracestates.length, 'valid traceparents were among them');
  for (const t of [undefined, null, 'a string', [`00-${tid}-${sid}-01`], { traceparent: 42 }, {}]) assert.equal(parseWireTrace(t), undefined);
});

test('tracestate is normalized as the SDK TraceState serializes it', () => {
  assert.equal(serializeTraceState('a=1,a=2,b=3'), 'a=2,b=3');
  assert.equal(serializeTraceState('Bad=1,good=2'), 'good=2');
  assert.equal(serializeTraceState(Array.from({ length: 40 }, (_, i) => `k${i}=v${i}`).join(',')).split(',').length, 32);
});

test('every sampler decides as the SDK sampler of the same configuration', () => {
  const idsToTry = [...Array.from({ length: 3000 }, () => randomBytes(16).toString('hex')), 'ffffffff'.repeat(4), '00000000000000000000000000000001', '80000000'.repeat(4)];
  for (const name of SAMPLERS) {
    for (const ratio of [0, 0.01, 0.25, 0.5, 1]) {
      const ours = spanSampler({ name, ratio });
      const sdk = sdkSampler({ name, ratio });
      let sampledOurs = 0;
      for (const traceId of idsToTry) {
        for (const sampled of [true, false]) {
          const ctx = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: sid, traceFlags: sampled ? 1 : 0, isRemote: true });
          const want = sdk.shouldSample(ctx, traceId, 'x', SpanKind.SERVER, {}, []).decision === SamplingDecision.RECORD_AND_SAMPLED;
          const got = ours.parented({ traceId, spanId: sid, sampled, traceState: undefined });
          assert.equal(got, want, `${name} ${ratio} ${traceId} parent sampled=${sampled}`);
          if (got) sampledOurs++;
        }
      }
      // A root: the SDK decides on a random trace id; we draw at the rate it samples.
      let rootSampled = 0;
      for (const traceId of idsToTry.slice(0, 3000)) if (sdk.shouldSample(ROOT_CONTEXT, traceId, 'x', SpanKind.SERVER, {}, []).decision === SamplingDecision.RECORD_AND_SAMPLED) rootSampled++;
      const rate = rootSampled / 3000;
      assert.ok(Math.abs(rate - ours.rootRate) <= 0.04, `${name} ${ratio}: root rate ${ours.rootRate}, the SDK sampled ${rate}`);
      if (name !== 'always_off' && name !== 'parentbased_always_off' && !(name === 'traceidratio' && ratio === 0)) assert.ok(sampledOurs > 0);
    }
  }
});
