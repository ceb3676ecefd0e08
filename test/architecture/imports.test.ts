// The layering rules of docs/architecture.md, checked on the import statements of src/**/*.ts:
// no cycle between the layer folders, only the ui/ folders of src/extension import 'vscode', and
// the wire layers (src/protocol, src/rpc) import no node: module (they must stay usable outside Node).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { findCycles, importSpecifiers, listTs, resolveImport } from '../support/files';

const repo = process.env.EXEC_SERVER_REPO ?? path.resolve(__dirname, '../../..');
const src = path.join(repo, 'src');
const LAYERS = ['protocol', 'rpc', 'server', 'transports', 'client', 'extension', 'cli', 'telemetry'];

/** The layer folder (first segment under src/) a file belongs to, or undefined (src/version.ts). */
function layerOf(file: string): string | undefined {
  const first = path.relative(src, file).split(path.sep)[0];
  return LAYERS.includes(first) ? first : undefined;
}

const files = listTs(src).map((file) => ({ file, rel: path.relative(repo, file), specs: importSpecifiers(readFileSync(file, 'utf8')) }));

test('the import parser sees static, type, re-export, side-effect and dynamic imports', () => {
  const specs = importSpecifiers(
    "import a from 'a';\nimport type { B } from \"b\";\nimport {\n  c,\n  d,\n} from './c';\nexport { e } from '../e';\nimport 'f';\nconst g = await import('g');\nconst h = require('h');\n// import x from 'commented';\n",
  );
  assert.deepEqual(specs.sort(), ['../e', './c', 'a', 'b', 'f', 'g', 'h']);
  assert.ok(files.length > 50, `found ${files.length} source files under ${src}`);
});

test('no import cycle between the layer folders of src/', () => {
  // Folder graph: an edge A → B for each file in A importing a file in B (with one example).
  const edges = new Map<string, Map<string, string>>();
  for (const { file, rel, specs } of files) {
    const from = layerOf(file);
    if (!from) continue;
    for (const spec of specs) {
      if (!spec.startsWith('.')) continue;
      const to = layerOf(path.resolve(path.dirname(file), spec));
      if (!to || to === from) continue;
      if (!edges.has(from)) edges.set(from, new Map());
      if (!edges.get(from)!.has(to)) edges.get(from)!.set(to, `${rel} imports '${spec}'`);
    }
  }
  const cycles = findCycles(LAYERS, (n) => [...(edges.get(n)?.keys() ?? [])]).map((chain) =>
    chain.slice(0, -1).map((a, i) => `${a} → ${chain[i + 1]} (${edges.get(a)!.get(chain[i + 1])})`).join('\n  '),
  );
  assert.deepEqual(cycles, [], `import cycle(s) between src/ folders:\n  ${cycles.join('\n\n  ')}`);
});

test('no import cycle between the files of src/ (type imports included)', () => {
  // A cycle closed only by `import type` still ties the modules together: neither can be read,
  // moved or tested without the other. Types a lower module needs live in that module (or a
  // types-only module below both), never in the module that uses it.
  const next = new Map(files.map(({ file, specs }) => [file, specs.map((s) => resolveImport(file, s)).filter((t): t is string => t !== undefined)]));
  const cycles = findCycles(next.keys(), (f) => next.get(f) ?? []).map((chain) => chain.map((f) => path.relative(repo, f)).join(' → '));
  assert.deepEqual(cycles, [], `import cycle(s) between files:\n  ${cycles.join('\n  ')}`);
});

test("only the ui/ folders of src/extension import 'vscode'", () => {
  // The rest of the extension (each feature folder itself) is plain Node, tested without VS Code.
  const inUi = (file: string) => layerOf(file) === 'extension' && path.relative(src, file).split(path.sep).slice(0, -1).includes('ui');
  const offenders = files.filter(({ file, specs }) => !inUi(file) && specs.some((s) => s === 'vscode' || s.startsWith('vscode/'))).map((f) => f.rel);
  assert.deepEqual(offenders, []);
});

test('src/protocol and src/rpc import no node: module', () => {
  const offenders = files
    .filter(({ file }) => layerOf(file) === 'protocol' || layerOf(file) === 'rpc')
    .flatMap(({ rel, specs }) => specs.filter((s) => s.startsWith('node:')).map((s) => `${rel} imports '${s}'`));
  assert.deepEqual(offenders, []);
});
