// The bundles esbuild.mjs writes (dist/cli.js, dist/extension.js, dist/telemetry.js): ASCII only,
// so that V8 keeps each one's source as a one-byte string (a single non-ASCII character in a
// comment doubled the 1.4 MB of dist/cli.js held in every server's heap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from '../support/cli';

for (const bundle of ['cli.js', 'extension.js', 'telemetry.js']) {
  test(`dist/${bundle} holds only ASCII characters`, () => {
    const file = path.join(repoRoot, 'dist', bundle);
    assert.ok(existsSync(file), `${file} is built by npm run build before the tests`);
    const text = readFileSync(file, 'utf8');
    const at = text.search(/[^\x00-\x7f]/);
    assert.equal(at, -1, at < 0 ? '' : `non-ASCII ${JSON.stringify(text[at])} at offset ${at}: ${JSON.stringify(text.slice(Math.max(0, at - 60), at + 20))}`);
  });
}
