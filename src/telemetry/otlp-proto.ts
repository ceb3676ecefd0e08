// OTLP/HTTP protobuf export of the server's span batches (./server-spans.ts writes each batch's
// ExportTraceServiceRequest bytes as its spans end): the bytes go out as they are, through the
// SDK's own export delegate (endpoint, OTEL_EXPORTER_OTLP_* headers, timeout, concurrency
// limit) given a serializer that passes them through. A plain http: endpoint without
// compression is sent by our own HTTP/1.1 transport (./otlp-http.ts: no Node http client or
// stream code in the server's thread) with the SDK's retry rules; https or gzip keep the SDK's
// node transport.
import { OTLPExporterBase, createOtlpNetworkExportDelegate } from '@opentelemetry/otlp-exporter-base';
// The package's "./node-http" export (its typings by file: this tsconfig's resolution ignores "exports").
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { convertLegacyHttpOptions, createOtlpHttpExportDelegate } = require('@opentelemetry/otlp-exporter-base/node-http') as typeof import('@opentelemetry/otlp-exporter-base/build/src/index-node-http');
import { rawHttpTransport, retryingTransport } from './otlp-http';
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
  const own = new URL(options.url).protocol === 'http:' && options.compression !== 'gzip';
  const delegate = own ? createOtlpNetworkExportDelegate(options, passThrough, retryingTransport(rawHttpTransport(options))) : createOtlpHttpExportDelegate(options, passThrough);
  const base = new OTLPExporterBase<Uint8Array>(delegate);
  return {
    export: (request, _spans, done) => base.export(request, done),
    shutdown: () => base.shutdown(),
  };
}
