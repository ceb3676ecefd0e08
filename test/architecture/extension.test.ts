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
