// How the server's native files are compiled (native/transparent-tcp.c, native/malloc-release.c),
// for `npm run build` (esbuild.mjs: this machine's) and the VSIX packer (scripts/vsix-natives.mjs:
// another arch's, with a cross gcc).
import { spawnSync } from 'node:child_process';
import { renameSync, rmSync } from 'node:fs';
import path from 'node:path';

export const HELPER_SOURCE = path.join(path.dirname(new URL(import.meta.url).pathname), 'transparent-tcp.c');

const FLAGS = ['-O2', '-Wall', '-Wextra', '-Werror'];

/**
 * Compiles `source` with `cc` into `out` (written beside it, then renamed over it), with the first
 * of `attempts` (argument lists) that succeeds. Returns the compiler's error text, or undefined.
 */
function compileInto(cc, out, source, attempts) {
  const tmp = `${out}.${process.pid}.tmp`;
  let r;
  for (const args of attempts) {
    r = spawnSync(cc, [...args, '-o', tmp, source], { encoding: 'utf8' });
    if (r.status === 0) break;
  }
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    return `${path.basename(cc)} ${source}: ${(r.stderr || r.error?.message || `exit ${r.status ?? r.signal}`).trim().slice(-2000)}`;
  }
  renameSync(tmp, out);
  return undefined;
}

/**
 * Compiles the helper with `cc` into `out`, statically linked (the same file then runs on glibc
 * and musl hosts). `allowDynamic`: where the C library has no static archive, link it
 * dynamically instead. Returns the compiler's error text, or undefined on success.
 */
export function compileHelper(cc, out, { allowDynamic = false } = {}) {
  return compileInto(cc, out, HELPER_SOURCE, [['-static', '-s', ...FLAGS], ...(allowDynamic ? [FLAGS] : [])]);
}

export const C_HEAP_SOURCE = path.join(path.dirname(new URL(import.meta.url).pathname), 'malloc-release.c');

/** Node's headers for N-API modules: <prefix>/include/node beside this Node's bin/ (Debian, nvm, the official tarballs). */
export function nodeIncludeDir() {
  return path.join(path.dirname(path.dirname(process.execPath)), 'include', 'node');
}

/**
 * Compiles native/malloc-release.c with `cc` into the N-API module `out` (a shared object against
 * the C library it is built with; N-API keeps it loadable by every Node since 8). Returns the
 * compiler's error text, or undefined on success.
 */
export function compileCHeapModule(cc, out, includeDir = nodeIncludeDir()) {
  return compileInto(cc, out, C_HEAP_SOURCE, [['-shared', '-fPIC', '-s', ...FLAGS, `-I${includeDir}`]]);
}
