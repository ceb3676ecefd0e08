// http/request: an HTTP request made from the executor host with Node's fetch. With
// streamResponse the body arrives as http/request/bodyDelta notifications after the result,
// read from the response only as fast as the client takes them (the next chunk is pulled once
// the connection is not congested: fetch then stops reading the socket, and TCP slows the
// sender). Without it the body is collected into the one answer, so it is bounded by what a
// message can carry. A request whose addresses were pinned in process (the agent gate judged
// where its host name leads, see PINNED_HTTP_ADDRESSES) connects to exactly those
// (./http-pinned.ts); every other request resolves its host as fetch does.
import { MAX_MESSAGE_BYTES } from '../protocol/limits';
import { RpcError, internalError, invalidParams, invalidRequest } from '../protocol/errors';
import { markVerbatim } from '../rpc/verbatim';
import type { HttpBodyDeltaNotification, HttpHeader, HttpRequestResult } from '../protocol/types';
import { headerList, pinnedRequest, type Fetched, type HttpRequestInput, type PinnedAddresses } from './http-pinned';

export type { Fetched, HttpRequestInput, PinnedAddresses };

/**
 * The key under which an in-process caller (the agent gate) puts PinnedAddresses on the
 * http/request params object. A symbol: params parsed from the wire can never carry it.
 */
export const PINNED_HTTP_ADDRESSES = Symbol('exec-server http/request pinned addresses');

/** The pin an in-process caller put on raw http/request params, if any. */
export function pinnedOf(raw: unknown): PinnedAddresses | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  return (raw as { [PINNED_HTTP_ADDRESSES]?: PinnedAddresses })[PINNED_HTTP_ADDRESSES];
}

/**
 * Largest body a non-streamed http/request collects: its answer (base64, ×4/3, plus the
 * headers) must fit in one message (MAX_MESSAGE_BYTES, 1 MiB left for the rest). Larger is
 * refused with -32600 naming streamResponse; nothing beyond this is ever held in memory.
 */
export const MAX_BUFFERED_HTTP_BODY_BYTES = Math.floor(((MAX_MESSAGE_BYTES - 1024 * 1024) / 4) * 3);

const tooLarge = () =>
  invalidRequest(`http/request response body is larger than ${MAX_BUFFERED_HTTP_BODY_BYTES} bytes; send streamResponse: true to receive it as http/request/bodyDelta notifications`);

export async function httpRequest(
  req: HttpRequestInput,
  emit: (n: HttpBodyDeltaNotification) => void,
  cancel: AbortSignal,
  /** Called when a streamed body is fully delivered (or failed). */
  streamFinished: () => void = () => undefined,
  /** Resolves when the client can take the next bodyDelta (the connection is not congested). */
  writable: () => Promise<void> = () => Promise.resolve(),
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
  let res: Fetched;
  try {
    res = req.pinned ? await pinnedRequest(url, req, req.pinned, signal) : await fetched(url, req, signal);
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    throw internalError(`http/request failed: ${cause ?? (e as Error).message} (${req.url})`);
  }
  if (!req.streamResponse) {
    const body = await collect(res);
    return markVerbatim({ status: res.status, headers: res.headers, bodyBase64: body.toString('base64') }, 'bodyBase64');
  }
  // Stream the body after the result has been sent (the caller awaits the result first).
  setImmediate(() => void pump(res, req.requestId, emit, writable).finally(streamFinished));
  return { status: res.status, headers: res.headers, bodyBase64: '' };
}

async function fetched(url: URL, req: HttpRequestInput, signal: AbortSignal): Promise<Fetched> {
  const res = await fetch(url, {
    method: req.method,
    headers: req.headers.map((h) => [h.name, h.value] as [string, string]),
    body: req.body && req.body.length > 0 ? req.body : undefined,
    redirect: req.redirectPolicy === 'stop' ? 'manual' : 'follow',
    signal,
  });
  return {
    status: res.status,
    headers: headerList(res.headers),
    body: res.body as unknown as AsyncIterable<Uint8Array> | null,
    discard: async () => void (await res.body?.cancel().catch(() => undefined)),
  };
}

/** The whole body, refused (and the response cancelled) as soon as it is known to exceed the bound. */
async function collect(res: Fetched): Promise<Buffer> {
  const declared = Number(res.headers.find((h) => h.name === 'content-length')?.value ?? NaN);
  if (declared > MAX_BUFFERED_HTTP_BODY_BYTES) {
    await res.discard();
    throw tooLarge();
  }
  if (!res.body) return Buffer.alloc(0);
  // Ending the iterator early (return()) cancels the body: fetch's stream, or the socket.
  const reader = res.body[Symbol.asyncIterator]();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.next();
      if (done) break;
      total += value.length;
      if (total > MAX_BUFFERED_HTTP_BODY_BYTES) {
        await reader.return?.().catch(() => undefined);
        throw tooLarge();
      }
      chunks.push(value);
    }
  } catch (e) {
    if (e instanceof RpcError) throw e;
    throw internalError(`http/request failed while reading the body: ${(e as Error).message}`);
  }
  return Buffer.concat(chunks, total);
}

async function pump(res: Fetched, requestId: string, emit: (n: HttpBodyDeltaNotification) => void, writable: () => Promise<void>): Promise<void> {
  let seq = 1;
  try {
    if (res.body) {
      for await (const chunk of res.body) {
        emit(markVerbatim({ requestId, seq: seq++, deltaBase64: Buffer.from(chunk).toString('base64'), done: false, error: null }, 'deltaBase64'));
        // Backpressure: the next chunk is not pulled until the client caught up.
        await writable();
      }
    }
    emit({ requestId, seq: seq++, deltaBase64: '', done: true, error: null });
  } catch (e) {
    emit({ requestId, seq: seq++, deltaBase64: '', done: true, error: (e as Error).message });
  }
}
