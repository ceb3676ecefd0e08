// JSON-RPC error codes and the exact messages the reference server uses.
// Free of Node / VS Code types so every layer can share it.

export const ErrorCodes = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** [extension] server overloaded: too many requests in flight on this connection */
  Overloaded: -32001,
  NotFound: -32004,
  SessionAttached: -32010,
  /** Client-side only: the transport closed before a response arrived. */
  ConnectionClosed: -32099,
  /** Client-side only: a request timed out. */
  RequestTimeout: -32098,
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes] | number;

/** A JSON-RPC error with a code; thrown by handlers, rejected by clients. */
export class RpcError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
  toJSON(): { code: number; message: string; data?: unknown } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

export const Messages = {
  initializeOnce: 'initialize may only be sent once per connection',
  /** `category`: the method's gating category (src/server/methods/spec.ts), e.g. `exec`. */
  notInitialized: (category: string) => `client must call initialize before using ${category} methods`,
  notInitializedNotification: (category: string) => `client must send initialized before using ${category} methods`,
  methodNotFound: (m: string) => `exec-server stub does not implement \`${m}\` yet`,
  unknownSession: (id: string) => `unknown session id ${id}`,
  sessionAttached: (id: string) => `session ${id} is already attached to another connection`,
  emptyArgv: 'argv must not be empty',
  processExists: (id: string) => `process ${id} already exists`,
  unknownProcess: (id: string) => `unknown process id ${id}`,
  /** The reference's answer to a request on a process whose start is still running (-32600). */
  processStarting: (id: string) => `process id ${id} is starting`,
  missingField: (f: string) => `missing field \`${f}\``,
  connectionClosed: 'connection closed',
  handleExists: (id: string) => `file handle \`${id}\` already exists`,
  /** process/start: a NUL byte in argv / arg0, and in the environment (Rust's Command texts). */
  nulInArgs: 'nul byte found in provided data',
  nulInEnv: 'data provided contains a nul byte',
  /** [extension fs/watch] */
  watchExists: (id: string) => `watch \`${id}\` already exists`,
} as const;

/**
 * Is `e` the error answer `code` + `message`? For the answers the wire tells apart only by their
 * text (the reference sends -32600 for all of "already exists", "is starting", "unknown process"):
 * the code and the exact Messages text, never a pattern.
 */
export function isRpcError(e: unknown, code: ErrorCode, message: string): e is RpcError {
  return e instanceof RpcError && e.code === code && e.message === message;
}

export const invalidRequest = (m: string) => new RpcError(ErrorCodes.InvalidRequest, m);
export const invalidParams = (m: string) => new RpcError(ErrorCodes.InvalidParams, m);
export const internalError = (m: string) => new RpcError(ErrorCodes.InternalError, m);
export const notFound = (m: string) => new RpcError(ErrorCodes.NotFound, m);
