// process/start failures as the reference reports them: the Rust io::Error text with -32603, and
// (0.171) `data.kind` naming what failed. 0.169 sends no `data`; its clients ignore the member, so
// this server sends it to every client (one server, one answer).
import { ErrorCodes, Messages, RpcError } from '../../protocol/errors';
import type { SpawnErrorKind } from '../../protocol/types';
import { osMessage } from '../os-errors';

const withKind = (code: number, message: string, kind: SpawnErrorKind) => new RpcError(code, message, { kind });

/** The spawn error for an OS failure: ENOENT → spawnNotFound, EACCES → spawnPermissionDenied, else spawnFailed (measured on 0.171: a cwd that is a file, ENOTDIR, is spawnFailed). */
export function spawnError(e: unknown): RpcError {
  if (e instanceof RpcError) return e;
  const code = (e as NodeJS.ErrnoException)?.code;
  const kind: SpawnErrorKind = code === 'ENOENT' ? 'spawnNotFound' : code === 'EACCES' ? 'spawnPermissionDenied' : 'spawnFailed';
  return withKind(ErrorCodes.InternalError, osMessage(e), kind);
}

/** A refusal on the sandbox's side (no usable sandbox host, a profile the backend cannot build), with its kind; an error that already carries data keeps it. */
export function sandboxError(e: unknown, kind: 'sandboxUnavailable' | 'sandboxPreparation'): RpcError {
  if (e instanceof RpcError) return e.data === undefined ? withKind(e.code, e.message, kind) : e;
  return withKind(ErrorCodes.InternalError, osMessage(e), kind);
}

/**
 * A NUL byte the reference's spawn refuses, before anything is looked up (measured on 0.171: a NUL
 * in argv wins over a missing cwd, a NUL in the environment over a missing binary). Node would
 * throw its own ERR_INVALID_ARG_VALUE text, and node-pty passed a NUL in argv through (truncated).
 */
export function nulByteError(argv: readonly string[], arg0: string | undefined | null, env: Record<string, string>): RpcError | undefined {
  if (argv.some((a) => a.includes('\0')) || arg0?.includes('\0')) return withKind(ErrorCodes.InternalError, Messages.nulInArgs, 'spawnFailed');
  for (const [k, v] of Object.entries(env)) {
    if (k.includes('\0') || v.includes('\0')) return withKind(ErrorCodes.InternalError, Messages.nulInEnv, 'spawnFailed');
  }
  return undefined;
}
