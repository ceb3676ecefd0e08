// Find in Files / Go to File against the reference `codex exec-server` (stdio): the search
// process (process/start with envPolicy "core" + a cwd) and the per-directory fs/walk listing
// must work on the server Codex users already run, not only on ours.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ExecServerClient } from '../../../src/client/client';
import { connectCommand } from '../../../src/client/connect';
import { listFiles } from '../../../src/extension/search/files';
import { searchInFolder, summarize } from '../../../src/extension/search/run';
import { referenceBinary, referenceEnv } from '../../support/reference';
import { tempDir } from '../../support/tmp';

let client: ExecServerClient;
let dir: string;
before(async () => {
  client = await connectCommand(referenceBinary(), ['exec-server', '--listen', 'stdio'], { env: referenceEnv(), clientName: 'search-ref-test' });
  dir = tempDir('search-ref-');
  for (const [rel, text] of [
    ['src/a b:c.ts', 'let refneedle = 1;\n'],
    ['new\nline.txt', 'x refneedle\n'],
    ['node_modules/dep/i.js', 'refneedle\n'],
    ['dash.txt', '-v refneedle\n'],
  ]) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  }
});
after(async () => {
  await client?.close();
});

describe('remote search against the reference server', () => {
  it('grep runs on the host through process/start and its rows come back exact', async () => {
    const o = await searchInFolder(client, dir, { pattern: 'refneedle' }, { tool: 'grep' });
    assert.equal(o.failure, undefined, summarize(o));
    assert.deepEqual(o.matches.map((m) => [m.path, m.line, m.ranges]).sort(), [
      ['dash.txt', 1, [[3, 12]]],
      ['new\nline.txt', 1, [[2, 11]]],
      ['src/a b:c.ts', 1, [[4, 13]]],
    ]);
    const dash = await searchInFolder(client, dir, { pattern: '-v' }, { tool: 'grep' });
    assert.deepEqual(dash.matches.map((m) => m.path), ['dash.txt']);
  });

  it('ripgrep (from PATH, else the one shipped with the reference) through the reference server too', async () => {
    const onPath = spawnSync('sh', ['-c', 'command -v rg'], { encoding: 'utf8' }).stdout.trim();
    const rg = onPath || path.join(path.dirname(referenceBinary()), '..', 'codex-path', 'rg');
    assert.ok(existsSync(rg), `ripgrep at ${rg}`);
    const o = await searchInFolder(client, dir, { pattern: 'refneedle' }, { tool: 'rg', rgProgram: rg });
    assert.equal(o.failure, undefined, summarize(o));
    assert.deepEqual(o.matches.map((m) => [m.path, m.line, m.ranges]).sort(), [
      ['dash.txt', 1, [[3, 12]]],
      ['new\nline.txt', 1, [[2, 11]]],
      ['src/a b:c.ts', 1, [[4, 13]]],
    ]);
  });

  it('Go to File lists the folder with fs/walk, node_modules not entered', async () => {
    const o = await listFiles(client, dir);
    // The reference cannot walk a name holding a newline: it reports the entry as an error
    // ("No such file or directory", the newline lost) instead of listing it. Counted, not hidden.
    assert.deepEqual([...o.files].sort(), ['dash.txt', 'src/a b:c.ts']);
    assert.equal(o.unreadable, 1);
    assert.equal(o.truncated, false);
  });
});
