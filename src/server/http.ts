// http/request: an HTTP request made from the executor host with Node's fetch. With
// streamResponse the body arrives as http/request/bodyDelta notifications after the result.
import { internalError, invalidParams } from '../protocol/errors';
import { markVerbatim } from '../rpc/verbatim';
import type { HttpBodyDeltaNotification, HttpHeader, HttpRequestResult } from '../protocol/types';

export interface HttpRequestInput {
  method: string;
  url: string;
  headers: HttpHeader[];
  body?: Buffer;
  timeoutMs?: number;
  redirectPolicy: 'follow' | 'stop';
  requestId: string;
  streamResponse: boolean;
}

export async function httpRequest(
  req: HttpRequestInput,
  emit: (n: HttpBodyDeltaNotification) => void,
  cancel: AbortSignal,
  /** Called when a streamed body is fully delivered (or failed). */
  streamFinished: () => void = () => undefined,
): Promise<HttpRequestResult> {
  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    throw invalidParams('http/request url is invalid: relative URL without a base');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidParams(`http/request url scheme \`${url.protocol.slice(0, -1)}\` is not supported`);
  }
  const signals = [cancel];
  if (req.timeoutMs !== undefined && req.timeoutMs > 0) signals.push(AbortSignal.timeout(req.timeoutMs));
  const signal = AbortSignal.any(signals);
  let res: Response;
  try {
    res = await fetch(url, {
      method: req.method,
      headers: req.headers.map((h) => [h.name, h.value] as [string, string]),
      body: req.body && req.body.length > 0 ? req.body : undefined,
      redirect: req.redirectPolicy === 'stop' ? 'manual' : 'follow',
      signal,
    });
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    throw internalError(`http/request failed: ${cause ?? (e as Error).message} (${req.url})`);
  }
  const headers: HttpHeader[] = [];
  res.headers.forEach((value, name) => headers.push({ name, value }));
  if (!req.streamResponse) {
    try {
      const body = Buffer.from(await res.arrayBuffer());
      return markVerbatim({ status: res.status, headers, bodyBase64: body.toString('base64') }, 'bodyBase64');
    } catch (e) {
      throw internalError(`http/request failed while reading the body: ${(e as Error).message}`);
    }
  }
  // Stream the body after the result has been sent (the caller awaits the result first).
  setImmediate(() => void pump(res, req.requestId, emit).finally(streamFinished));
  return { status: res.status, headers, bodyBase64: '' };
}

async function pump(res: Response, requestId: string, emit: (n: HttpBodyDeltaNotification) => void): Promise<void> {
  let seq = 1;
  try {
    if (res.body) {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        emit(markVerbatim({ requestId, seq: seq++, deltaBase64: Buffer.from(chunk).toString('base64'), done: false, error: null }, 'deltaBase64'));
      }
    }
    emit({ requestId, seq: seq++, deltaBase64: '', done: true, error: null });
  } catch (e) {
    emit({ requestId, seq: seq++, deltaBase64: '', done: true, error: (e as Error).message });
  }
}
