// How native/transparent-tcp.c is compiled, for `npm run build` (esbuild.mjs: this machine's
// helper) and the VSIX packer (scripts/vsix-natives.mjs: another arch's, with a cross gcc).
import { spawnSync } from 'node:child_process';
import { renameSync, rmSync } from 'node:fs';
import path from 'node:path';

export const HELPER_SOURCE = path.join(path.dirname(new URL(import.meta.url).pathname), 'transparent-tcp.c');

const FLAGS = ['-O2', '-Wall', '-Wextra', '-Werror'];

/**
 * Compiles the helper with `cc` into `out` (written beside it, then renamed over it), statically
 * linked (the same file then runs on glibc and musl hosts). `allowDynamic`: where the C library
 * has no static archive, link it dynamically instead. Returns the compiler's error text, or
 * undefined on success.
 */
export function compileHelper(cc, out, { allowDynamic = false } = {}) {
  const tmp = `${out}.${process.pid}.tmp`;
  let r = spawnSync(cc, ['-static', '-s', ...FLAGS, '-o', tmp, HELPER_SOURCE], { encoding: 'utf8' });
  if (r.status !== 0 && allowDynamic) r = spawnSync(cc, [...FLAGS, '-o', tmp, HELPER_SOURCE], { encoding: 'utf8' });
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    return `${path.basename(cc)} ${HELPER_SOURCE}: ${(r.stderr || r.error?.message || `exit ${r.status ?? r.signal}`).trim().slice(-2000)}`;
  }
  renameSync(tmp, out);
  return undefined;
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
  const tmp = `${out}.${process.pid}.tmp`;
  const r = spawnSync(cc, ['-shared', '-fPIC', '-s', ...FLAGS, `-I${includeDir}`, '-o', tmp, C_HEAP_SOURCE], { encoding: 'utf8' });
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    return `${path.basename(cc)} ${C_HEAP_SOURCE}: ${(r.stderr || r.error?.message || `exit ${r.status ?? r.signal}`).trim().slice(-2000)}`;
  }
  renameSync(tmp, out);
  return undefined;
}
