// `sandboxDenied`: did a sandboxed command fail because the sandbox stopped it? A heuristic,
// as on the reference: the command exited non-zero and its retained output carries one of
// the messages a denied filesystem or network operation produces. A command that printed
// such a message but exited 0 (it coped) is not "denied".

/**
 * Messages of the errors a sandbox causes: EROFS (write outside the writable roots), EACCES
 * / EPERM (a `none` path, a dropped capability, a refused syscall), and the network errors
 * of an unshared network namespace (no interfaces but a down loopback: ENETUNREACH, failing
 * DNS). Matched case-insensitively anywhere in the output.
 */
export const DENIAL_PATTERNS: readonly RegExp[] = [
  /read-only file system/i,
  /permission denied/i,
  /operation not permitted/i,
  /network is unreachable/i,
  /could not resolve host/i,
  /temporary failure in name resolution/i,
  /name or service not known/i,
  /failed to resolve/i,
  /connection refused/i,
  /no route to host/i,
  /address family not supported/i,
  /\b(EROFS|EACCES|EPERM|ENETUNREACH|EAI_AGAIN)\b/,
];

/** Output considered: the last this many bytes (the message is usually near the end). */
export const DENIAL_SCAN_BYTES = 256 * 1024;

export function looksLikeSandboxDenial(output: string): boolean {
  return DENIAL_PATTERNS.some((re) => re.test(output));
}

/** The decision for a finished process: sandboxed, failed, and its output reads like a denial. */
export function sandboxDenied(sandboxed: boolean, exitCode: number | null, output: () => string): boolean {
  if (!sandboxed || exitCode === null || exitCode === 0) return false;
  return looksLikeSandboxDenial(output());
}
