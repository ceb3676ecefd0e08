// Source files as the architecture tests read them.
import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';

/** Every TypeScript source file (not `.d.ts`) below `dir`, recursively. */
export function listTs(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...listTs(p));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}
