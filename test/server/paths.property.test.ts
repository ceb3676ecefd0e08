// uriToPath's fast path (plain file URIs sliced, not parsed) must agree with the URL parser
// on every input it takes, and leave everything else to the parser. Which path ran is read
// from uriToPathCounts: a fast path that silently stopped being taken fails here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { uriToPath, uriToPathCounts } from '../../src/server/paths';

/** The URL parser's path, except that a NUL (from %00) is refused as the reference refuses it (src/server/paths.ts). */
function viaParser(uri: string): string | 'error' {
  try {
    const p = fileURLToPath(new URL(uri));
    return p.includes('\0') ? 'error' : p;
  } catch {
    return 'error';
  }
}
function ours(uri: string): string | 'error' {
  try {
    return uriToPath(uri);
  } catch {
    return 'error';
  }
}
/** Runs f and returns which way uriToPath went for it. */
function way(f: () => unknown): 'fast' | 'parsed' | 'neither' {
  const before = { ...uriToPathCounts };
  f();
  const fast = uriToPathCounts.fast - before.fast;
  const parsed = uriToPathCounts.parsed - before.parsed;
  assert.ok(fast + parsed <= 1, `one call counted once (fast ${fast}, parsed ${parsed})`);
  return fast ? 'fast' : parsed ? 'parsed' : 'neither';
}

test('paths: file URIs convert exactly as the URL parser does (random paths over a tricky alphabet)', () => {
  const alphabet = fc.constantFrom(...'abcXYZ09_-.~+=@:!$&\'()*;,/%20 ?#|\\é"<>`{}'.split(''), '%2F', '%25', '%00', '..', '.');
  const pathArb = fc.array(alphabet, { minLength: 0, maxLength: 14 }).map((parts) => parts.join(''));
  const ways = { fast: 0, parsed: 0, neither: 0 };
  fc.assert(
    fc.property(pathArb, (p) => {
      const uri = `file:///${p}`;
      let got: string | 'error' = 'error';
      const w = way(() => (got = ours(uri)));
      ways[w]++;
      assert.equal(got, viaParser(uri), uri);
      // The fast path answers only what it can slice: then the path is the URI minus `file://`.
      if (w === 'fast') assert.equal(got, uri.slice(7), uri);
    }),
    { numRuns: 3000 },
  );
  // Both ways were exercised (the alphabet makes plain and tricky paths both common).
  assert.ok(ways.fast > 100 && ways.parsed > 100, JSON.stringify(ways));
  assert.equal(ways.neither, 0);
});

test('paths: fixed cases, fast and slow', () => {
  const check = (uri: string, expected: string, expectedWay: 'fast' | 'parsed') => {
    let got = '';
    assert.equal(way(() => (got = uriToPath(uri))), expectedWay, `${uri} takes the ${expectedWay} path`);
    assert.equal(got, expected, uri);
  };
  check('file:///tmp/a.txt', '/tmp/a.txt', 'fast');
  check("file:///tmp/it's (1);x=y,z@h:1!$&*+~", "/tmp/it's (1);x=y,z@h:1!$&*+~", 'parsed'); // a space: the parser encodes it
  check("file:///tmp/it's(1);x=y,z@h:1!$&*+~", "/tmp/it's(1);x=y,z@h:1!$&*+~", 'fast');
  check('file:///tmp/a/../b/./c', '/tmp/b/c', 'parsed');
  check('file:///tmp/a%20b', '/tmp/a b', 'parsed');
  check('file:///', '/', 'parsed');
  check('file:///tmp//x/', '/tmp//x/', 'parsed');
  assert.equal(way(() => assert.throws(() => uriToPath('file:///tmp/a%2Fb'))), 'parsed');
  assert.equal(way(() => uriToPath('/plain/abs')), 'neither', 'a plain absolute path is neither');
});
