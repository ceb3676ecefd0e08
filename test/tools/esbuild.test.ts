// The bundles esbuild.mjs writes (dist/cli.js, dist/extension.js, dist/telemetry.js): ASCII only,
// so that V8 keeps each one's source as a one-byte string (a single non-ASCII character in a
// comment doubled the 1.4 MB of dist/cli.js held in every server's heap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { repoRoot, startCli } from '../support/cli';

const LAZY_LIBS = ['yaml', 'node-forge', 'jose'];

for (const bundle of ['cli.js', 'extension.js', 'telemetry.js', ...LAZY_LIBS.map((l) => `lib/${l}.js`)]) {
  test(`dist/${bundle} holds only ASCII characters`, () => {
    const file = path.join(repoRoot, 'dist', bundle);
    assert.ok(existsSync(file), `${file} is built by npm run build before the tests`);
    const text = readFileSync(file, 'utf8');
    const at = text.search(/[^\x00-\x7f]/);
    assert.equal(at, -1, at < 0 ? '' : `non-ASCII ${JSON.stringify(text[at])} at offset ${at}: ${JSON.stringify(text.slice(Math.max(0, at - 60), at + 20))}`);
  });
}

// esbuild turns a default or namespace import of a Node builtin into __toESM(require(...)),
// which copies every property of the module as a getter. Made once per builtin (esbuild.mjs,
// builtinViewsOnce): ~100 of them at start made V8 optimize __copyProps with TurboFan, whose first
// use faulted ~3.6 MiB of the node binary's code into the idle server's RSS.
for (const bundle of ['cli.js', 'extension.js', 'telemetry.js']) {
  test(`dist/${bundle} makes each builtin's ES-module view once, and stays strict`, () => {
    const text = readFileSync(path.join(repoRoot, 'dist', bundle), 'utf8');
    const left = /__toESM\(require\("node:[^"]*"\)\)/.exec(text);
    assert.ok(!left, `a per-import view is left: ${left?.[0]}`);
    // The helper is defined after the "use strict" directive, which must stay the first statement.
    assert.ok(/^(#!.*\n)?"use strict";/.test(text), `no "use strict" first: ${JSON.stringify(text.slice(0, 80))}`);
  });
}

test('the CLI starts without optimizing esbuild\'s module helpers (the idle server touches no TurboFan code)', async (t) => {
  const server = await startCli([], { t, nodeArgs: ['--trace-opt'] });
  // V8 prints "marking ... for optimization" on the main thread when it decides (the compile
  // itself runs on another thread), so every decision made during start precedes the URL line.
  const optimized = server.stdout().split('\n').filter((l) => /(marking|compiling method) .*(__copyProps|__toESM)/.test(l));
  assert.deepEqual(optimized, [], 'esbuild helpers optimized during start');
});

// The libraries only some requests need are bundles of their own (dist/lib/), required on first
// use: in the main bundles their ~960 KB of source was held and pre-parsed by every server.
for (const bundle of ['cli.js', 'extension.js']) {
  test(`dist/${bundle} holds none of yaml, node-forge, jose; it requires them from dist/lib/`, () => {
    const text = readFileSync(path.join(repoRoot, 'dist', bundle), 'utf8');
    for (const lib of LAZY_LIBS) {
      assert.ok(!text.includes(`// node_modules/${lib}/`), `${lib} is bundled into dist/${bundle}`);
      const required = text.includes(`require("./lib/${lib}.js")`);
      if (required) assert.ok(existsSync(path.join(repoRoot, 'dist', 'lib', `${lib}.js`)), `dist/lib/${lib}.js is built`);
    }
    assert.ok(text.includes('require("./lib/yaml.js")'), 'skills\' front matter needs yaml');
  });
}

test('each dist/lib bundle loads on its own and exports its library', () => {
  const yaml = require(path.join(repoRoot, 'dist/lib/yaml.js')) as { parse(s: string): unknown };
  assert.deepEqual(yaml.parse('name: x\nlist: [1, 2]\n'), { name: 'x', list: [1, 2] });
  const forge = require(path.join(repoRoot, 'dist/lib/node-forge.js')) as { md: { sha256: { create(): { update(s: string): void; digest(): { toHex(): string } } } } };
  const md = forge.md.sha256.create();
  md.update('abc');
  assert.equal(md.digest().toHex(), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  const jose = require(path.join(repoRoot, 'dist/lib/jose.js')) as { decodeProtectedHeader(t: string): unknown };
  assert.deepEqual(jose.decodeProtectedHeader('eyJhbGciOiJIUzI1NiJ9.e30.x'), { alg: 'HS256' });
});
