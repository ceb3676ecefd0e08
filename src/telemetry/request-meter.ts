// The per-request metrics (requests by method and outcome, their duration histogram, process
// output bytes) kept in fixed arrays of our own and handed to the OpenTelemetry SDK only when
// a reader collects (a Prometheus scrape), as a MetricProducer. Recording one request is a few
// array increments: no attribute object, no attribute hashing, no allocation; the SDK's own
// instruments hashed a new `{ method, outcome }` object twice per request.
import { ValueType, type HrTime } from '@opentelemetry/api';
import { AggregationTemporality, DataPointType, type CollectionResult, type MetricData, type MetricProducer } from '@opentelemetry/sdk-metrics';
import type { Resource } from '@opentelemetry/resources';
import { VERSION } from '../version';
import { KNOWN_METHODS } from './methods';

/** Request duration buckets, seconds (most requests take well under a millisecond). */
export const DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const OUTCOMES = ['ok', 'error'] as const;
// One series' numbers are contiguous: count, sum, min, max, then its buckets. Recording a request
// touches the first cache line of one series (a sub-millisecond request's bucket is in it too),
// where five arrays of their own were five lines apart on every request.
const COUNT = 0;
const SUM = 1;
const MIN = 2;
const MAX = 3;
const FIRST_BUCKET = 4;
const STRIDE = FIRST_BUCKET + DURATION_BUCKETS.length + 1;

function hrNow(): HrTime {
  const ms = Date.now();
  return [Math.floor(ms / 1000), (ms % 1000) * 1e6];
}

export class RequestMeter implements MetricProducer {
  /** Method label → its index; a label's two series (ok, error) are 2i and 2i + 1. */
  private readonly index = new Map<string, number>();
  private readonly labels: string[] = [];
  /** STRIDE numbers per series (see above). */
  private readonly data: Float64Array;
  private outputBytes = 0;
  private outputSeen = false;
  private readonly start = hrNow();

  constructor(private readonly resource: Resource) {
    for (const m of [...KNOWN_METHODS, 'other']) {
      this.index.set(m, this.labels.length);
      this.labels.push(m);
    }
    const series = this.labels.length * 2;
    this.data = new Float64Array(series * STRIDE);
    for (let s = 0; s < series; s++) {
      this.data[s * STRIDE + MIN] = Infinity;
      this.data[s * STRIDE + MAX] = -Infinity;
    }
  }

  /** The series index of a method label (from methodLabel) and an outcome. */
  series(label: string, failed: boolean): number {
    return (this.index.get(label) ?? this.index.get('other')!) * 2 + (failed ? 1 : 0);
  }

  record(series: number, seconds: number): void {
    const d = this.data;
    const at = series * STRIDE;
    d[at + COUNT]++;
    d[at + SUM] += seconds;
    if (seconds < d[at + MIN]) d[at + MIN] = seconds;
    if (seconds > d[at + MAX]) d[at + MAX] = seconds;
    let b = 0;
    while (b < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[b]) b++;
    d[at + FIRST_BUCKET + b]++;
  }

  addOutput(bytes: number): void {
    this.outputBytes += bytes;
    this.outputSeen = true;
  }

  async collect(): Promise<CollectionResult> {
    const startTime = this.start;
    const endTime = hrNow();
    const requests: MetricData = {
      descriptor: { name: 'exec_server_requests', description: 'Requests handled, by method and outcome (ok or error)', unit: '', valueType: ValueType.DOUBLE },
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.SUM,
      isMonotonic: true,
      dataPoints: [],
    };
    const duration: MetricData = {
      descriptor: { name: 'exec_server_request_duration_seconds', description: 'Time from receiving a request to handing its response to the transport', unit: 's', valueType: ValueType.DOUBLE },
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.HISTOGRAM,
      dataPoints: [],
    };
    const d = this.data;
    for (let s = 0; s < this.labels.length * 2; s++) {
      const at = s * STRIDE;
      const count = d[at + COUNT];
      if (count === 0) continue; // a series appears once it has a request, as with the SDK's instruments
      const attributes = { method: this.labels[s >> 1], outcome: OUTCOMES[s & 1] };
      requests.dataPoints.push({ startTime, endTime, attributes, value: count });
      duration.dataPoints.push({
        startTime,
        endTime,
        attributes,
        value: {
          buckets: { boundaries: DURATION_BUCKETS, counts: Array.from(d.subarray(at + FIRST_BUCKET, at + STRIDE)) },
          sum: d[at + SUM],
          count,
          min: d[at + MIN],
          max: d[at + MAX],
        },
      });
    }
    const metrics: MetricData[] = [requests, duration];
    if (this.outputSeen) metrics.push({
      descriptor: { name: 'exec_server_process_output_bytes', description: 'Bytes of process output sent to clients', unit: 'By', valueType: ValueType.DOUBLE },
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.SUM,
      isMonotonic: true,
      dataPoints: [{ startTime, endTime, attributes: {}, value: this.outputBytes }],
    });
    return { resourceMetrics: { resource: this.resource, scopeMetrics: [{ scope: { name: 'exec-server', version: VERSION }, metrics }] }, errors: [] };
  }
}
