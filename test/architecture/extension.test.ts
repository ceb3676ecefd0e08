// The extension's layout rules (docs/architecture.md, "Where things are"), checked on the import
// statements of src/extension/**/*.ts and on the file names of test/: the extension is one folder
// per feature (plus the activation in src/extension/ui/; only ui/ folders import 'vscode':
// imports.test.ts), the features import each other one way only and
// only through the other feature's index, and test/extension has a folder per feature (how tests
// mirror the source: tests.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';
import { findCycles, importSpecifiers, listTs, resolveImport } from '../support/files';

const repo = process.env.EXEC_SERVER_REPO ?? path.resolve(__dirname, '../../..');
const ext = path.join(repo, 'src', 'extension');
/** The feature folders (a new feature is added here and in docs/architecture.md's table). */
const FEATURES = ['agent', 'approval', 'common', 'containers', 'environments', 'files', 'search', 'ssh', 'terminals'];
/** The activation (src/extension/ui/: extension.ts, api.ts, commands.ts): wires the features, imported by none. */
const ROOT = 'ui';

const dirs = (dir: string) => (existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name) : []);
const files = (existsSync(ext) ? listTs(ext) : []).map((file) => ({ file, rel: path.relative(repo, file), specs: importSpecifiers(readFileSync(file, 'utf8')) }));

/** The feature folder of a file under src/extension (ROOT for the activation). */
function featureOf(file: string): string {
  const parts = path.relative(ext, file).split(path.sep);
  return parts.length === 1 ? ROOT : parts[0];
}
const inUi = (file: string) => path.relative(ext, file).split(path.sep).slice(0, -1).includes('ui');

/** Imports from one file of src/extension to a file of another feature: [importer, target, spec]. */
const crossings = files.flatMap(({ file, rel, specs }) =>
  specs
    .filter((s) => s.startsWith('.'))
    .map((s) => ({ rel, file, spec: s, target: resolveImport(file, s) }))
    .filter((x): x is typeof x & { target: string } => x.target !== undefined && x.target.startsWith(ext + path.sep) && featureOf(x.target) !== featureOf(file)),
);

test('src/extension is one folder per feature plus the activation (ui/)', () => {
  assert.deepEqual(dirs(ext).sort(), [...FEATURES, ROOT].sort(), 'the folders of src/extension (a new feature is named in FEATURES and docs/architecture.md)');
});

test('no import cycle between the feature folders of src/extension (type imports included)', () => {
  assert.ok(files.length > 0, `source files under ${ext}`);
  const edges = new Map<string, Map<string, string>>();
  for (const { file, rel, spec, target } of crossings) {
    const from = featureOf(file);
    const to = featureOf(target);
    if (!edges.has(from)) edges.set(from, new Map());
    if (!edges.get(from)!.has(to)) edges.get(from)!.set(to, `${rel} imports '${spec}'`);
  }
  const cycles = findCycles([...FEATURES, ROOT], (n) => [...(edges.get(n)?.keys() ?? [])]).map((chain) =>
    chain.slice(0, -1).map((a, i) => `${a} → ${chain[i + 1]} (${edges.get(a)!.get(chain[i + 1])})`).join('\n  '),
  );
  assert.deepEqual(cycles, [], `import cycle(s) between features:\n  ${cycles.join('\n\n  ')}`);
});

test("a feature uses another only through that feature's index (index.ts; ui/index.ts from a ui/ folder)", () => {
  assert.ok(crossings.length > 0, 'imports between features (the activation imports every feature)');
  const offenders = crossings
    .filter(({ file, target }) => {
      const base = path.join(ext, featureOf(target));
      return !(target === path.join(base, 'index.ts') || (inUi(file) && target === path.join(base, 'ui', 'index.ts')));
    })
    .map(({ rel, spec }) => `${rel} imports '${spec}'`);
  assert.deepEqual(offenders, []);
});

test('test/extension has a folder per feature (the mirroring itself: tests.test.ts)', () => {
  for (const f of FEATURES) assert.ok(existsSync(path.join(repo, 'test', 'extension', f)), `test/extension/${f}/ holds the tests of src/extension/${f}/`);
});

/** The longest function the UI layer may hold: past it, a command's flow is split into named steps. */
const MAX_UI_FUNCTION_LINES = 100;

/** Functions of `source` (declarations, methods, arrows) longer than `max` lines: "name (N lines) at line L". */
function longFunctions(source: string, max: number): string[] {
  const sf = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isFunctionLike(n) && 'body' in n && n.body) {
      const first = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line;
      const lines = sf.getLineAndCharacterOfPosition(n.end).line - first;
      const named = 'name' in n && n.name ? (n.name as ts.Node) : ts.isVariableDeclaration(n.parent) ? n.parent.name : undefined;
      const name = named ? named.getText(sf) : ts.SyntaxKind[n.kind];
      if (lines > max) out.push(`${name} (${lines} lines) at line ${first + 1}`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

test('the scanner measures every kind of function, nested ones included', () => {
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  const x${i} = ${i};`).join('\n');
  const source = [`function long() {\n${body(5)}\n}`, `const arrow = () => {\n${body(5)}\n};`, `class C {\n  m() {\n${body(5)}\n  }\n}`, `function short() {\n  return 1;\n}`].join('\n');
  assert.deepEqual(longFunctions(source, 4), ['long (6 lines) at line 1', 'arrow (6 lines) at line 8', 'm (6 lines) at line 16']);
});

test(`no function of a ui/ folder is longer than ${MAX_UI_FUNCTION_LINES} lines`, () => {
  const long = files.filter(({ file }) => inUi(file) || featureOf(file) === ROOT).flatMap(({ file, rel }) => longFunctions(readFileSync(file, 'utf8'), MAX_UI_FUNCTION_LINES).map((f) => `${rel}: ${f}`));
  assert.deepEqual(long, [], `split these into named steps:\n  ${long.join('\n  ')}`);
});
