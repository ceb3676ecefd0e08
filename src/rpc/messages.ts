// JSON-RPC envelope (the exec-server dialect: no "jsonrpc" member required) and its validation.
import type { RequestId, TraceContext } from '../protocol/types';

export interface RequestMessage {
  id: RequestId;
  method: string;
  params?: unknown;
  trace?: TraceContext;
}
export interface NotificationMessage {
  method: string;
  params?: unknown;
  trace?: TraceContext;
}
export interface ResponseError {
  code: number;
  message: string;
  data?: unknown;
}
export interface SuccessResponse {
  id: RequestId;
  result: unknown;
}
export interface ErrorResponse {
  id: RequestId | null;
  error: ResponseError;
}
export type ResponseMessage = SuccessResponse | ErrorResponse;
export type Message = RequestMessage | NotificationMessage | ResponseMessage;

export type Classified =
  | { kind: 'request'; msg: RequestMessage }
  | { kind: 'notification'; msg: NotificationMessage }
  | { kind: 'response'; msg: ResponseMessage }
  | { kind: 'invalid'; id: RequestId | null; reason: string };

const isId = (v: unknown): v is RequestId =>
  (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'string';

/** Classifies an already-parsed JSON value as a JSON-RPC message. */
export function classify(value: unknown): Classified {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { kind: 'invalid', id: null, reason: 'message must be a JSON object' };
  }
  const v = value as Record<string, unknown>;
  const hasId = 'id' in v && v.id !== undefined;
  if (hasId && v.id !== null && !isId(v.id)) {
    return { kind: 'invalid', id: null, reason: 'id must be an integer or a string' };
  }
  if (typeof v.method === 'string') {
    // `"id": null` on a method call is neither a request nor a notification (the reference rejects it).
    if (hasId && v.id === null) return { kind: 'invalid', id: null, reason: 'id must be an integer or a string' };
    if (hasId) return { kind: 'request', msg: v as unknown as RequestMessage };
    return { kind: 'notification', msg: v as unknown as NotificationMessage };
  }
  if ('method' in v) {
    return { kind: 'invalid', id: hasId && isId(v.id) ? v.id : null, reason: 'method must be a string' };
  }
  if (hasId && ('result' in v || 'error' in v)) {
    if ('error' in v) {
      const e = v.error as Record<string, unknown> | null;
      if (!e || typeof e !== 'object' || typeof e.code !== 'number' || typeof e.message !== 'string') {
        return { kind: 'invalid', id: null, reason: 'malformed error object' };
      }
    }
    return { kind: 'response', msg: v as unknown as ResponseMessage };
  }
  return { kind: 'invalid', id: hasId && isId(v.id) ? (v.id as RequestId) : null, reason: 'not a JSON-RPC message' };
}
