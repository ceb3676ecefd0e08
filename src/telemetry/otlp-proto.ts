// OTLP/HTTP protobuf export of the server's span batches (./server-spans.ts writes each batch's
// ExportTraceServiceRequest bytes as its spans end): the bytes go out as they are, through the
// SDK's own HTTP export delegate (endpoint, OTEL_EXPORTER_OTLP_* headers, timeout, compression,
// retries, at most a few exports in flight), given a serializer that passes them through.
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
// The package's "./node-http" export (its typings by file: this tsconfig's resolution ignores "exports").
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { convertLegacyHttpOptions, createOtlpHttpExportDelegate } = require('@opentelemetry/otlp-exporter-base/node-http') as typeof import('@opentelemetry/otlp-exporter-base/build/src/index-node-http');
import type { BatchExporter } from './server-spans';

/** The request bytes as the delegate's "internal representation"; serializing them is the identity. */
const passThrough = {
  serializeRequest: (request: Uint8Array): Uint8Array => request,
  /** ExportTraceServiceResponse: only a partial success would say anything; nothing to report here. */
  deserializeResponse: (): object => ({}),
};

/** An OTLP/HTTP protobuf exporter of span batches to `url` (…/v1/traces), configured as the SDK's own exporter would be. */
export function protoBatchExporter(url: string): BatchExporter {
  const options = convertLegacyHttpOptions({ url }, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' });
  const base = new OTLPExporterBase<Uint8Array>(createOtlpHttpExportDelegate(options, passThrough));
  return {
    export: (request, _spans, done) => base.export(request, done),
    shutdown: () => base.shutdown(),
  };
}
