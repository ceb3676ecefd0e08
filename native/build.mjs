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
