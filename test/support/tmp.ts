// Temporary directories for tests, removed when the test ends (given its context) or, at the
// latest, when the test file's process exits — so a failing assertion never leaves one behind.
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestContext } from 'node:test';

const pending = new Set<string>();
let hooked = false;

export interface TempDirOptions {
  /** Remove the directory when this test ends (otherwise: when the process exits). */
  t?: TestContext;
  /** Parent directory (default os.tmpdir()); e.g. the home directory for sandbox tests. */
  parent?: string;
}

/**
 * A fresh directory (its real path: /tmp may be a symlink, and the server reports real paths).
 * Removed with everything in it at the end of `opts.t`, or at process exit.
 */
export function tempDir(prefix = 'exec-test-', opts: TempDirOptions = {}): string {
  const dir = realpathSync(mkdtempSync(path.join(opts.parent ?? os.tmpdir(), prefix)));
  pending.add(dir);
  if (opts.t) opts.t.after(() => removeTempDir(dir));
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const d of pending) removeTempDir(d);
    });
  }
  return dir;
}

/** Removes a directory made by tempDir now (idempotent). */
export function removeTempDir(dir: string): void {
  pending.delete(dir);
  rmSync(dir, { recursive: true, force: true });
}
