// The test tree's layout rules (test/README.md): the tests of src/<path>/<module>.ts are
// test/<path>/<module>[.<aspect>].test.ts with a first line saying what they cover, except the
// suites about the whole product (SUITES); a helper used by more than one folder lives in
// test/support.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { importSpecifiers, listTs, resolveImport } from '../support/files';

const repo = process.env.EXEC_SERVER_REPO ?? path.resolve(__dirname, '../../..');
const testDir = path.join(repo, 'test');
/** Folders of test/ that are not a mirror of src/: each is about the product as a whole. */
const SUITES = ['architecture', 'bench', 'e2e', 'fuzz', 'interop', 'package', 'support', 'tools'];

const top = (rel: string) => rel.split(path.sep)[0];
const all = listTs(testDir).map((file) => ({ file, rel: path.relative(testDir, file) }));
const tests = all.filter((f) => f.rel.endsWith('.test.ts'));
const mirrored = tests.filter((f) => !SUITES.includes(top(f.rel)));

test('the test folders are the mirror of src/ plus the named suites', () => {
  const folders = readdirSync(testDir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  const strays = folders.filter((d) => !SUITES.includes(d) && !existsSync(path.join(repo, 'src', d)));
  assert.deepEqual(strays, [], 'folders of test/ that are neither a folder of src/ nor a suite (SUITES)');
});

test('every test outside the suites is test/<path>/<module>[.<aspect>].test.ts of an existing src/<path>/<module>.ts', () => {
  assert.ok(mirrored.length > 100, `mirrored tests found: ${mirrored.length}`);
  const unmatched = mirrored.filter(({ rel }) => {
    const module = path.basename(rel).replace(/\.test\.ts$/, '').split('.')[0];
    const dir = path.join(repo, 'src', path.dirname(rel));
    return !existsSync(path.join(dir, `${module}.ts`)) && !existsSync(path.join(dir, module, 'index.ts'));
  });
  assert.deepEqual(unmatched.map((t) => `test/${t.rel}`), [], 'test files without a source module of the same path and name');
});

test("every test file's first line is a comment saying what it covers", () => {
  const unexplained = tests.filter(({ file }) => !/^\/\/ \S/.test(readFileSync(file, 'utf8'))).map((t) => `test/${t.rel}`);
  assert.deepEqual(unexplained, [], 'test files whose first line is not a comment');
});

test('a helper shared by more than one folder lives in test/support', () => {
  const outside = all.flatMap(({ file, rel }) =>
    top(rel) === 'e2e' ? [] : importSpecifiers(readFileSync(file, 'utf8'))
      .map((spec) => resolveImport(file, spec))
      .filter((t): t is string => t !== undefined && t.startsWith(testDir + path.sep) && !t.endsWith('.test.ts'))
      .filter((t) => { const r = path.relative(testDir, t); return top(r) !== 'support' && path.dirname(r) !== path.dirname(rel); })
      .map((t) => `test/${rel} imports test/${path.relative(testDir, t)}`),
  );
  assert.deepEqual(outside, [], 'imports of another folder\'s helper (move it to test/support)');
});

test('comments cite a doc section, never an issue number (the issues are not in the repository)', () => {
  const roots = ['src', 'test', 'bench', 'scripts'].map((d) => path.join(repo, d)).filter(existsSync);
  const sources = roots.flatMap((d) => listFiles(d, /\.(ts|mjs|js|md)$/));
  const cited = sources.flatMap((file) =>
    readFileSync(file, 'utf8').split('\n').flatMap((line, i) => (/\bissue #?\d+\b/i.test(line) ? [`${path.relative(repo, file)}:${i + 1}`] : [])),
  );
  assert.deepEqual(cited, [], 'lines citing an issue number (name the docs/ section instead)');
});

function listFiles(dir: string, name: RegExp): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return d.name === 'node_modules' ? [] : listFiles(p, name);
    return name.test(d.name) ? [p] : [];
  });
}
