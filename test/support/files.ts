// Source files as the architecture tests read them.
import { existsSync, readdirSync, statSync } from 'node:fs';
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

/** Module specifiers of static imports, `export ... from`, dynamic import() and require(). */
export function importSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const specs: string[] = [];
  const patterns = [
    /\bimport\s+(?:type\s+)?[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bexport\s+(?:type\s+)?[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) specs.push(m[1]);
  return specs;
}

/** The .ts file a relative specifier of `from` names (`x` → x.ts or x/index.ts), or undefined. */
export function resolveImport(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), spec);
  for (const c of [`${base}.ts`, path.join(base, 'index.ts'), base.replace(/\.js$/, '.ts')]) if (existsSync(c) && statSync(c).isFile()) return c;
  return undefined;
}

/** Every cycle of a directed graph, each as its chain of nodes (first node repeated at the end); depth-first, one per back edge. */
export function findCycles<T>(nodes: Iterable<T>, next: (n: T) => Iterable<T>): T[][] {
  const state = new Map<T, 'open' | 'done'>();
  const stack: T[] = [];
  const cycles: T[][] = [];
  const visit = (n: T): void => {
    state.set(n, 'open');
    stack.push(n);
    for (const m of next(n)) {
      if (state.get(m) === 'open') cycles.push([...stack.slice(stack.indexOf(m)), m]);
      else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of nodes) if (!state.has(n)) visit(n);
  return cycles;
}
