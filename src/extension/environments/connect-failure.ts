// What kind of failure a connect attempt was, from the codes its error carries — never from its
// message, which may quote whatever the peer answered (an HTTP 500 page saying "Unexpected
// token" is not a wrong token). The kind picks the message the UI shows (environment-manager.ts).
import { ErrorCodes, RpcError } from '../../protocol/errors';
import { ConnectError } from '../../rpc/connect-error';

export type ConnectFailure = 'unknown environment' | 'unauthorized' | 'unreachable' | 'failed';

/** OS errors of connecting or spawning: the server, or the command that starts it, is not there. */
const UNREACHABLE_ERRNOS: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'ENOENT', // spawn: no such command
  'EACCES', // spawn: not executable
]);

/**
 * A refused websocket upgrade (ConnectError.status) is `unauthorized` for 401/403, else `failed`;
 * an OS error code (ConnectError.code, or a Node error's `code`) of a network/spawn failure is
 * `unreachable`; an RpcError (the server answered initialize with an error, or the channel
 * closed) is `failed`, except our initialize timeout (RequestTimeout), which is `unreachable`.
 */
export function classifyConnectError(e: unknown): ConnectFailure {
  if (e instanceof RpcError) return e.code === ErrorCodes.RequestTimeout ? 'unreachable' : 'failed';
  if (e instanceof ConnectError && e.status !== undefined) return e.status === 401 || e.status === 403 ? 'unauthorized' : 'failed';
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && UNREACHABLE_ERRNOS.has(code)) return 'unreachable';
  return 'failed';
}
