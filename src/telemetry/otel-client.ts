// Client spans through the OpenTelemetry SDK (kind CLIENT, one per request, whose context each
// request carries), and the injection of a caller's own context. Required by ./otel.ts only when
// a client asks for tracing: a server exporting its own spans never loads the SDK's trace
// modules (./server-spans.ts writes them itself).
import { SpanKind, SpanStatusCode, context, defaultTextMapSetter, propagation, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { Resource } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';
import type { TraceContext } from '../protocol/types';
import { VERSION } from '../version';
import type { CallError, ClientCall, ClientTelemetry } from './api';
import type { TelemetryConfig } from './config';
import { methodLabel } from './methods';

/** Longest method name recorded on a span (a client may send any string). */
const MAX_METHOD_CHARS = 128;

const propagator = new W3CTraceContextPropagator();

/** The SDK sampler of a configuration (the server's spans decide with ./trace-context.ts spanSampler, the same rules). */
export function sampler(c: TelemetryConfig['sampler']): Sampler {
  switch (c.name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(c.ratio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(c.ratio) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * Hands ended spans to the BatchSpanProcessor after the current event-loop turn, not inside
 * `span.end()`: the batch processor serializes and sends a full batch (512 spans) synchronously
 * in the `end` that filled it, which put the whole export on one request's path.
 */
class DeferredSpanProcessor implements SpanProcessor {
  private pending: ReadableSpan[] = [];
  private scheduled = false;
  constructor(private readonly next: BatchSpanProcessor) {}
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    // The batch processor keeps at most 2048 spans and drops the rest; so does this queue.
    if (this.pending.length >= 2048) return;
    this.pending.push(span);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.drain());
    }
  }
  private drain(): void {
    this.scheduled = false;
    const spans = this.pending;
    this.pending = [];
    for (const span of spans) this.next.onEnd(span);
  }
  forceFlush(): Promise<void> {
    this.drain();
    return this.next.forceFlush();
  }
  shutdown(): Promise<void> {
    this.drain();
    return this.next.shutdown();
  }
}

function traceExporter(traces: NonNullable<TelemetryConfig['traces']>): SpanExporter {
  return traces.protocol === 'http/json' ? new OtlpJsonExporter({ url: traces.endpoint }) : new OtlpProtoExporter({ url: traces.endpoint });
}

/** The wire `trace` member for a context (undefined when it holds no valid span context). */
export function injectTrace(ctx: Context): TraceContext | undefined {
  const carrier: Record<string, string> = {};
  propagator.inject(ctx, carrier, defaultTextMapSetter);
  if (!carrier.traceparent) return undefined;
  return carrier.tracestate ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate } : { traceparent: carrier.traceparent };
}

function failSpan(span: Span, e: CallError): void {
  span.setAttribute('rpc.jsonrpc.error_code', e.code);
  span.setAttribute('rpc.jsonrpc.error_message', e.message.slice(0, 256));
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message.slice(0, 256) });
}

/** Client spans (kind CLIENT, named after the method) whose context each request carries. */
export class OtelClientTelemetry implements ClientTelemetry {
  private readonly tracer: Tracer;
  constructor(
    private readonly provider: BasicTracerProvider,
    private readonly attributes: Attributes = {},
  ) {
    this.tracer = provider.getTracer('exec-server-client', VERSION);
  }
  call(method: string): ClientCall {
    const parent = context.active();
    const span = this.tracer.startSpan(
      methodLabel(method),
      { kind: SpanKind.CLIENT, attributes: { 'rpc.system': 'jsonrpc', 'rpc.method': method.slice(0, MAX_METHOD_CHARS), ...this.attributes } },
      parent,
    );
    return {
      trace: injectTrace(trace.setSpan(parent, span)),
      end(error?: CallError) {
        if (error) failSpan(span, error);
        span.end();
      },
    };
  }
  /** The same tracer with extra attributes on every span (e.g. the environment's name). */
  withAttributes(attributes: Attributes): OtelClientTelemetry {
    return new OtelClientTelemetry(this.provider, { ...this.attributes, ...attributes });
  }
  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

/** Client tracing exporting over OTLP (config.traces must be set) with spans of `resource`. */
export function startClientTelemetry(c: TelemetryConfig, resource: Resource): OtelClientTelemetry {
  if (!c.traces) throw new Error('client telemetry needs an OTLP trace endpoint');
  return new OtelClientTelemetry(new BasicTracerProvider({ resource, sampler: sampler(c.sampler), spanProcessors: [new DeferredSpanProcessor(new BatchSpanProcessor(traceExporter(c.traces)))] }));
}

/**
 * No spans of our own: each request carries the caller's active OpenTelemetry context, through
 * the globally registered propagator (for apps that set up their own OpenTelemetry SDK).
 */
export const activeContextTelemetry: ClientTelemetry = {
  call() {
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    const t: TraceContext | undefined = carrier.traceparent
      ? carrier.tracestate
        ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate }
        : { traceparent: carrier.traceparent }
      : undefined;
    return { trace: t, end() {} };
  },
};
