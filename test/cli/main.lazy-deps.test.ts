// A started server does not evaluate the libraries only some requests need: the YAML parser
// (skills' front matter), node-forge (a credential-masking proxy's certificates) and jose
// (signed-bearer-token auth). Evaluated at start they held ~0.6 MiB of heap (and their parse)
// for the whole life of every server. Checked on the unbundled tree (out/): a top-level import
// of any of them loads it into require.cache, exactly as the bundle's eager init did.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

const LAZY = ['yaml', 'node-forge', 'jose'];

test('cli: a listening server has not loaded yaml, node-forge or jose; the first use loads each', () => {
  const main = path.resolve(__dirname, '../../src/cli/main.js');
  const frontMatter = path.resolve(__dirname, '../../src/server/discovery/front-matter.js');
  const script = `
    const loaded = () => ${JSON.stringify(LAZY)}.filter((m) => Object.keys(require.cache).some((k) => k.includes('/node_modules/' + m + '/')));
    const { main } = require(${JSON.stringify(main)});
    const origWrite = process.stderr.write.bind(process.stderr);
    let listening = false;
    process.stderr.write = (chunk, ...rest) => { if (String(chunk).includes('listening on')) listening = true; return origWrite(chunk, ...rest); };
    void main(['--listen', 'ws://127.0.0.1:0']);
    const until = Date.now() + 20000;
    const look = () => {
      if (!listening && Date.now() < until) return setTimeout(look, 20);
      const atStart = loaded();
      // The first use of one of them loads it (the laziness is not a missing feature).
      const fm = require(${JSON.stringify(frontMatter)});
      const parse = Object.values(fm).find((f) => typeof f === 'function' && /skill/i.test(f.name));
      if (parse) { try { parse('---\\nname: x\\ndescription: y\\n---\\n', 'x'); } catch {} }
      process.stdout.write('\\nRESULT ' + JSON.stringify({ listening, atStart, afterUse: loaded(), parse: parse ? parse.name : null }) + '\\n');
      process.exit(0);
    };
    look();
  `;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  assert.ok(line, `no result line in ${JSON.stringify(r.stdout)}; stderr: ${r.stderr}`);
  const got = JSON.parse(line.slice('RESULT '.length)) as { listening: boolean; atStart: string[]; afterUse: string[]; parse: string | null };
  assert.ok(got.listening, `the server did not report listening: ${r.stderr}`);
  assert.deepEqual(got.atStart, [], `evaluated at start: ${got.atStart.join(', ')}`);
  assert.ok(got.parse, 'front-matter.js exports a skill parser');
  assert.ok(got.afterUse.includes('yaml'), `parsing a skill's front matter loads yaml (loaded: ${got.afterUse.join(', ')})`);
});
