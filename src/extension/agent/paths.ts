// Path facts the agent gate decides on: where a path really leads (symlinks resolved through
// the deepest existing ancestor, dangling links followed), whether that is inside a workspace
// folder, and whether it is a place an agent must never change silently (`.vscode/`, `.git/`,
// `*.code-workspace`, VS Code's own settings and extensions).
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { isInside } from '../../server/paths';

/** The one containment check (src/server/paths.ts), re-exported for this feature's modules. */
export { isInside };

const MAX_LINKS = 40; // as the kernel's ELOOP limit

/**
 * The real path `p` (absolute, normalized) leads to. Existing prefixes are resolved by the
 * kernel (fs.realpath); a missing tail is appended as is, except that a dangling symlink on
 * the way is followed (writing through it creates its target). undefined when the path cannot
 * be resolved (a loop, no permission): callers treat that as outside everything.
 */
export async function realPathOf(p: string, depth = 0): Promise<string | undefined> {
  if (depth > MAX_LINKS || !path.isAbsolute(p)) return undefined;
  const rest: string[] = [];
  let cur = path.normalize(p);
  for (;;) {
    try {
      const real = await fsp.realpath(cur);
      return rest.length === 0 ? real : path.join(real, ...rest.reverse());
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') return undefined;
    }
    // `cur` does not resolve: if it is itself a (dangling) symlink, follow it by hand.
    const link = await fsp.readlink(cur).catch(() => undefined);
    if (link !== undefined) {
      const target = path.resolve(path.dirname(cur), link);
      return realPathOf(rest.length === 0 ? target : path.join(target, ...[...rest].reverse()), depth + 1);
    }
    const up = path.dirname(cur);
    if (up === cur) return rest.length === 0 ? cur : path.join(cur, ...rest.reverse());
    rest.push(path.basename(cur));
    cur = up;
  }
}

/** The real path of the parent directory + the last component (what rename/remove act on). */
export async function realParentOf(p: string): Promise<string | undefined> {
  const n = path.normalize(p);
  if (n === '/') return '/';
  const parent = await realPathOf(path.dirname(n));
  return parent === undefined ? undefined : path.join(parent, path.basename(n));
}


/** Names that make a path always-ask wherever they appear. */
export function isProtectedName(name: string): boolean {
  return name === '.vscode' || name === '.git' || name.endsWith('.code-workspace');
}

/** `.vscode/`, `.git/`, `*.code-workspace` anywhere on the path, or inside a protected root. */
export function isProtectedPath(p: string, protectedRoots: readonly string[] = []): boolean {
  if (p.split(path.sep).some(isProtectedName)) return true;
  return protectedRoots.some((r) => isInside(p, r));
}

/** Top-level entries of a directory whose names are protected (a recursive copy/rename carries them). */
export async function protectedChildren(dir: string): Promise<string[]> {
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  return names.filter(isProtectedName).map((n) => path.join(dir, n));
}
