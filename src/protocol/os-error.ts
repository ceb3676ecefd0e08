// The OS error an error answer reports. The reference reports a failed system call as Rust's
// io::Error text, "<strerror> (os error N)" — the only place the wire carries the errno (its
// JSON-RPC code says only -32600/-32603) — and this server does the same (src/server/os-errors.ts).
// N is decoded here, once, so clients classify failures by errno, never by the strerror words.

/** errno numbers shared by Linux, macOS and the BSDs (the classic POSIX ones). */
export const OS_ERRNO = {
  EPERM: 1,
  ENOENT: 2,
  EACCES: 13,
  EEXIST: 17,
  ENOTDIR: 20,
  EISDIR: 21,
  EROFS: 30,
} as const;
export type OsErrorCode = keyof typeof OS_ERRNO;

const BY_NUMBER = new Map<number, OsErrorCode>(Object.entries(OS_ERRNO).map(([k, v]) => [v, k as OsErrorCode]));

/** The errno at the end of an io::Error-style message ("… (os error 13)"), if any. */
export function osErrno(message: string): number | undefined {
  const m = /\(os error (\d+)\)$/.exec(message);
  return m ? Number(m[1]) : undefined;
}

/**
 * The errno name of an error: a Node error's own `code` (a local failure), else the errno the
 * reference-style message ends with; undefined for anything else (not an OS error, or an errno
 * outside OS_ERRNO).
 */
export function osErrorCode(e: unknown): OsErrorCode | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string') return code in OS_ERRNO ? (code as OsErrorCode) : undefined;
  const message = (e as { message?: unknown }).message;
  const n = typeof message === 'string' ? osErrno(message) : undefined;
  return n === undefined ? undefined : BY_NUMBER.get(n);
}
