// The resource and instrumentation scope of the server's telemetry: shared by the server's thread
// (./otel.ts) and the span export worker (./export-worker.ts), which rebuilds it for http/json.
import { defaultResource, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { VERSION } from '../version';

/** The instrumentation scope of the server's spans and metrics. */
export const SCOPE = { name: 'exec-server', version: VERSION };

/** service.name / service.version over the SDK's defaults (by value: the semantic-conventions package is 1 MiB of heap). */
export function serverResource(serviceName: string): Resource {
  return defaultResource().merge(resourceFromAttributes({ 'service.name': serviceName, 'service.version': VERSION }));
}
