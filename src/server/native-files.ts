// Where the server finds the native files `npm run build` compiles (native/): dist/native/ beside
// the bundle, or the repository's dist/native/ for the compiled tests (out/…).
import { existsSync } from 'node:fs';
import * as path from 'node:path';

/** The path of dist/native/`name` as seen from this module, or undefined when it was not built. */
export function nativeFilePath(name: string): string | undefined {
  let dir = __dirname;
  for (let i = 0; i < 6; i++) {
    for (const candidate of [path.join(dir, 'native', name), path.join(dir, 'dist', 'native', name)]) {
      if (existsSync(candidate)) return candidate;
    }
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}
