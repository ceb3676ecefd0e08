// The C heap's side of giving memory back (native/malloc-release.c, an N-API module built by
// `npm run build` into dist/native/): glibc's mallopt(3) and malloc_trim(3), which Node does not
// expose. glibc keeps what is freed for reuse: it raises its trim threshold after a large block
// is freed, and V8's compiler threads each get an arena of their own. Measured on the CLI after
// 20 000 requests: 3.5 MiB more resident with those arenas, and 1.7 MiB of the idle server's
// C heap that only a trim returns (docs/performance.md, memory). Only for a process that is a
// server of its own (the CLI's idle collector): the VS Code extension host's heap is not ours.
// Elsewhere (macOS, musl, a build without a C compiler or Node's headers) there is no module and
// nothing changes.
import { nativeFilePath } from './native-files';

export interface CHeap {
  /** At most two arenas from now on (the compiler threads share them). True when glibc took it. */
  configure(): boolean;
  /** Every arena's free pages back to the kernel; true when there were any. */
  trim(): boolean;
  /**
   * V8's collections for a host low on memory (Node's C++ `node::LowMemoryNotification()`, which
   * the module calls): full collections that also shrink the young generation to its least,
   * whatever V8 makes of the recent allocation rate. ~10-40 ms. False where this Node has none.
   */
  lowMemory?(): boolean;
}

const MODULE = `malloc-release-${process.platform}-${process.arch}.node`;

let loaded: CHeap | null | undefined;

/** The C heap's controls, or undefined where the module is missing or does not load (e.g. a musl host). */
export function cHeap(): CHeap | undefined {
  if (loaded === undefined) {
    loaded = null;
    const file = process.platform === 'linux' ? nativeFilePath(MODULE) : undefined;
    if (file) {
      try {
        const m = { exports: {} as Partial<CHeap> };
        process.dlopen(m, file);
        if (typeof m.exports.configure === 'function' && typeof m.exports.trim === 'function') loaded = m.exports as CHeap;
      } catch {
        // Built for another C library: the heap is left as glibc (or the other libc) keeps it.
      }
    }
  }
  return loaded ?? undefined;
}
