// The end of an upload (a replace stream closed or dropped), told to whoever gives memory back
// after one: the CLI's idle collector (./idle-gc.ts, which registers itself while it runs). A
// module of its own so that the file system code does not import the collector.

/** Bytes of one upload from which its end is worth telling (why: UPLOAD_QUIET_MS in ./idle-gc.ts). */
export const LARGE_UPLOAD_BYTES = 64 * 1024 * 1024;

let listener: (() => void) | undefined;

/** A replace stream ended (closed or discarded) after `bytes` written. */
export function uploadEnded(bytes: number): void {
  if (bytes >= LARGE_UPLOAD_BYTES) listener?.();
}

/** Makes `fn` the one listener of large uploads' ends; the function returned removes it, unless another took its place since. */
export function onLargeUploadEnded(fn: () => void): () => void {
  listener = fn;
  return () => {
    if (listener === fn) listener = undefined;
  };
}
