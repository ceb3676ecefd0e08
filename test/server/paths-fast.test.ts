// uriToPath's fast path (plain file URIs sliced, not parsed) must agree with the URL parser
// on every input it takes, and leave everything else to the parser.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { uriToPath } from '../../src/server/paths';

function viaParser(uri: string): string | 'error' {
  try {
    return fileURLToPath(new URL(uri));
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

test('paths: file URIs convert exactly as the URL parser does (random paths over a tricky alphabet)', () => {
  const alphabet = fc.constantFrom(...'abcXYZ09_-.~+=@:!$&\'()*;,/%20 ?#|\\é"<>`{}'.split(''), '%2F', '%25', '..', '.');
  const pathArb = fc.array(alphabet, { minLength: 0, maxLength: 14 }).map((parts) => parts.join(''));
  fc.assert(
    fc.property(pathArb, (p) => {
      const uri = `file:///${p}`;
      assert.equal(ours(uri), viaParser(uri), uri);
    }),
    { numRuns: 3000 },
  );
});

test('paths: fixed cases, fast and slow', () => {
  assert.equal(uriToPath('file:///tmp/a.txt'), '/tmp/a.txt');
  assert.equal(uriToPath("file:///tmp/it's (1);x=y,z@h:1!$&*+~"), "/tmp/it's (1);x=y,z@h:1!$&*+~");
  assert.equal(uriToPath('file:///tmp/a/../b/./c'), '/tmp/b/c');
  assert.equal(uriToPath('file:///tmp/a%20b'), '/tmp/a b');
  assert.equal(uriToPath('file:///'), '/');
  assert.equal(uriToPath('file:///tmp//x/'), '/tmp//x/');
  assert.throws(() => uriToPath('file:///tmp/a%2Fb'));
});
