// Maps Node fs/spawn errors to the reference's JSON-RPC errors. The reference is a Rust
// binary and reports `std::io::Error` text ("No such file or directory (os error 2)");
// Node only gives the errno code, so the strerror text is looked up here.
import os from 'node:os';
import { ErrorCodes, RpcError } from '../protocol/errors';

const STRERROR: Record<string, string> = {
  EPERM: 'Operation not permitted',
  ENOENT: 'No such file or directory',
  EIO: 'Input/output error',
  EBADF: 'Bad file descriptor',
  EAGAIN: 'Resource temporarily unavailable',
  ENOMEM: 'Cannot allocate memory',
  EACCES: 'Permission denied',
  EBUSY: 'Device or resource busy',
  EEXIST: 'File exists',
  EXDEV: 'Invalid cross-device link',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  EINVAL: 'Invalid argument',
  EMFILE: 'Too many open files',
  ENFILE: 'Too many open files in system',
  ETXTBSY: 'Text file busy',
  EFBIG: 'File too large',
  ENOSPC: 'No space left on device',
  EROFS: 'Read-only file system',
  EMLINK: 'Too many links',
  ENAMETOOLONG: 'File name too long',
  ENOTEMPTY: 'Directory not empty',
  ELOOP: 'Symbolic link loop', // musl's wording: the reference is a musl build
  ENOEXEC: 'Exec format error',
  E2BIG: 'Argument list too long',
};

/** "No such file or directory (os error 2)" for an ENOENT error, like Rust's io::Error. */
export function osMessage(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (code) {
    const num = (os.constants.errno as Record<string, number>)[code] ?? (typeof e.errno === 'number' ? Math.abs(e.errno) : undefined);
    const text = STRERROR[code];
    if (text && num !== undefined) return `${text} (os error ${num})`;
    if (num !== undefined) return `${code} (os error ${num})`;
  }
  return e instanceof Error ? e.message : String(err);
}

/** Filesystem error mapping: not found → -32004; permission/invalid → -32600; else -32603. */
export function fsError(err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  const code = (err as NodeJS.ErrnoException)?.code;
  const msg = osMessage(err);
  if (code === 'ENOENT') return new RpcError(ErrorCodes.NotFound, msg);
  // Node's own argument checks (e.g. a NUL byte in a path) are invalid input too.
  if (code === 'EACCES' || code === 'EPERM' || code === 'EINVAL' || code === 'ENAMETOOLONG' || code?.startsWith('ERR_INVALID_ARG')) {
    return new RpcError(ErrorCodes.InvalidRequest, msg);
  }
  return new RpcError(ErrorCodes.InternalError, msg);
}
