// Remote search under attack: the host controls the files in the searched folder (names, sizes,
// symlinks) and what its rg/grep print. Each test is the attack, run for real through an
// in-process ExecServer (and the parsers fed what a hostile host can send); the ones marked
// "held" passed on the code before this file too (kept as guards).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ExecServerClient } from '../../../src/client/client';
import { connectInProcess, connectWebSocket } from '../../../src/client/connect';
import { ExecServer } from '../../../src/server/exec-server';
import { relativeResultPath } from '../../../src/extension/search/argv';
import { listFiles } from '../../../src/extension/search/files';
import { grepNulParser, MAX_LINE_CHARS, MAX_RECORD_BYTES, rgJsonParser, type SearchMatch } from '../../../src/extension/search/parse';
import { searchInFolder, summarize } from '../../../src/extension/search/run';
import { startCli } from '../../support/cli';
import { findRg } from '../../support/ripgrep';
import { tempDir } from '../../support/tmp';

/** VS Code's notification link syntax: notifications render it, and a click on command: runs the command with the link's arguments. */
const NOTIFICATION_LINK = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)(?: (["'])(.+?)(\3))?\)/i;
const LINK = '[Retry](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22touch%20pwned%5Cn%22%7D)';


let server: ExecServer;
let client: ExecServerClient;
let rg: string;

before(async () => {
  server = new ExecServer();
  client = await connectInProcess(server, { clientName: 'search-attack' });
  rg = findRg();
});
after(async () => {
  await client.close();
  await server.shutdown();
});

/** ArrayBuffer bytes still held after `feed` pushed 256 MiB into a parser that is still alive. */
function heldAfterFeeding(feed: (chunk: Uint8Array) => void): number {
  const chunk = new Uint8Array(1 << 20).fill(0x61);
  const before = process.memoryUsage().arrayBuffers;
  for (let i = 0; i < 256; i++) feed(chunk);
  return process.memoryUsage().arrayBuffers - before;
}

describe('search attacks', () => {
  it('a matching line of 256 MiB without a newline is never held whole: rg --json and grep records are bounded while they stream', () => {
    const MiB = 1 << 20;
    // rg: the JSON line carries the whole line; --max-columns does not apply to --json.
    const rgNotes: string[] = [];
    const rgRows: SearchMatch[] = [];
    const rgp = rgJsonParser((m) => rgRows.push(m), (l) => rgNotes.push(l));
    rgp.push(Buffer.from('{"type":"match","data":{"path":{"text":"./huge.txt"},"lines":{"text":"'));
    const rgHeld = heldAfterFeeding((c) => rgp.push(c));
    rgp.push(Buffer.from('needle\\n"},"line_number":3,"absolute_offset":0,"submatches":[{"match":{"text":"needle"},"start":268435456,"end":268435462}]}}\n'));
    rgp.push(Buffer.from('{"type":"match","data":{"path":{"text":"./ok.txt"},"lines":{"text":"a needle\\n"},"line_number":1,"absolute_offset":0,"submatches":[{"match":{"text":"needle"},"start":2,"end":8}]}}\n'));
    rgp.end();
    assert.ok(rgHeld < 64 * MiB, `rg parser held ${Math.round(rgHeld / MiB)} MiB of a 256 MiB line`);
    assert.deepEqual(rgRows.map((m) => [m.path, m.line]), [['ok.txt', 1]], 'the records after it still parse');
    assert.equal(rgNotes.length, 1);
    assert.match(rgNotes[0], /skipped/);
    assert.match(rgNotes[0], /huge\.txt/, 'the skipped file is named');

    const grepRows: SearchMatch[] = [];
    const gp = grepNulParser({ pattern: 'aaa' }, (m) => grepRows.push(m));
    gp.push(Buffer.from('./huge.txt\x007:'));
    const grepHeld = heldAfterFeeding((c) => gp.push(c));
    gp.push(Buffer.from('\n./ok.txt\x001:aaa\n'));
    gp.end();
    assert.ok(grepHeld < 64 * MiB, `grep parser held ${Math.round(grepHeld / MiB)} MiB of a 256 MiB line`);
    assert.deepEqual(grepRows.map((m) => [m.path, m.line]), [['huge.txt', 7], ['ok.txt', 1]], 'grep gives the row at its line (its number comes first)');
    assert.ok(grepRows[0].text.length <= MAX_LINE_CHARS);
  });

  it('real rg and grep on a folder with a matching line longer than the record bound: grep shows the row, rg names the skipped file, other rows stay', async () => {
    const dir = tempDir('search-huge-');
    const fd = openSync(path.join(dir, 'huge.txt'), 'w');
    writeSync(fd, 'first\nneedle ');
    const block = Buffer.alloc(1 << 20, 0x78);
    for (let i = 0; i <= MAX_RECORD_BYTES / block.length; i++) writeSync(fd, block);
    writeSync(fd, '\nlast needle\n');
    closeSync(fd);
    writeFileSync(path.join(dir, 'small.txt'), 'a needle\n');
    const g = await searchInFolder(client, dir, { pattern: 'needle' }, { tool: 'grep' });
    assert.deepEqual(g.matches.map((m) => [m.path, m.line]).sort(), [['huge.txt', 2], ['huge.txt', 3], ['small.txt', 1]]);
    assert.equal(g.matches.find((m) => m.line === 2)!.text.slice(0, 6), 'needle');
    const r = await searchInFolder(client, dir, { pattern: 'needle' }, { tool: 'rg', rgProgram: rg });
    assert.deepEqual(r.matches.map((m) => [m.path, m.line]).sort(), [['huge.txt', 3], ['small.txt', 1]]);
    assert.ok(r.errors.some((e) => /huge\.txt.*skipped|skipped.*huge\.txt/.test(e)), r.errors.join('; '));
  });

  it("the host's tool printing a file name with a command link in its error: the summary shown in the failure notification has no link", async () => {
    const dir = tempDir('search-link-');
    // What rg/grep print for an unreadable file (the attacker names it; root reads everything, so a stand-in prints it).
    const grep = path.join(dir, 'grep');
    writeFileSync(grep, `#!/bin/sh\necho 'grep: ./${LINK}: Permission denied' >&2\nexit 2\n`);
    chmodSync(grep, 0o755);
    const o = await searchInFolder(client, dir, { pattern: 'nothing-here' }, { tool: 'grep', grepProgram: grep });
    assert.ok(o.failure, 'a failure (no rows, exit 2)');
    const shown = summarize(o);
    assert.match(shown, /^Search failed: .*Permission denied/);
    assert.doesNotMatch(shown, NOTIFICATION_LINK, shown);
  });

  it('held: an include glob shaped like an option (--pre=<program>, -f<file>) is a glob, never run or read as an option', async () => {
    const dir = tempDir('search-glob-');
    const marker = path.join(dir, 'ran');
    const evil = path.join(dir, 'evil.sh');
    writeFileSync(evil, `#!/bin/sh\ntouch '${marker}'\ncat "$1"\n`);
    chmodSync(evil, 0o755);
    writeFileSync(path.join(dir, 'a.txt'), 'needle\n');
    for (const tool of ['rg', 'grep'] as const) {
      const o = await searchInFolder(client, dir, { pattern: 'needle', include: [`--pre=${evil}`, '-f/etc/passwd'] }, { tool, rgProgram: rg });
      assert.equal(existsSync(marker), false, `${tool}: the glob ran a program`);
      assert.equal(o.failure, undefined, `${tool}: ${summarize(o)}`);
    }
  });

  it('include globs filter with both tools (grep ignored them: GNU grep includes unmatched files when an --exclude comes first)', async () => {
    const dir = tempDir('search-include-');
    writeFileSync(path.join(dir, 'a.txt'), 'needle\n');
    writeFileSync(path.join(dir, 'b.ts'), 'needle\n');
    mkdirSync(path.join(dir, 'node_modules'));
    writeFileSync(path.join(dir, 'node_modules', 'c.ts'), 'needle\n');
    for (const tool of ['rg', 'grep'] as const) {
      const o = await searchInFolder(client, dir, { pattern: 'needle', include: ['*.ts'] }, { tool, rgProgram: rg });
      assert.deepEqual(o.matches.map((m) => m.path), ['b.ts'], `${tool}: ${o.argv.join(' ')}`);
      const none = await searchInFolder(client, dir, { pattern: 'needle', include: ['--pre=x'] }, { tool, rgProgram: rg });
      assert.deepEqual(none.matches, [], `${tool}: no file is named like that glob`);
    }
  });

  it('held: files named like options (--pre=<program>, -f, -e) are rows, never arguments; names with ANSI escapes come back exact', async () => {
    const dir = tempDir('search-dashnames-');
    const marker = path.join(dir, 'ran');
    writeFileSync(path.join(dir, 'evil.sh'), `#!/bin/sh\ntouch '${marker}'\n`, { mode: 0o755 });
    const names = [`--pre=${'evil.sh'}`, '-f', '-e', '--files', '\x1b]0;title\x07\x1b[31mred.txt'];
    for (const n of names) writeFileSync(path.join(dir, n), 'needle\n');
    for (const tool of ['rg', 'grep'] as const) {
      const o = await searchInFolder(client, dir, { pattern: 'needle' }, { tool, rgProgram: rg });
      assert.deepEqual(o.matches.map((m) => m.path).sort(), [...names].sort(), tool);
      assert.equal(existsSync(marker), false, `${tool}: a file name ran a program`);
    }
    assert.deepEqual((await listFiles(client, dir)).files.sort(), [...names, 'evil.sh'].sort());
  });

  it('held: symlink loops in the folder (to itself, to its parent, to /) do not make Go to File or the search loop or leave the folder', async () => {
    const dir = tempDir('search-loop-');
    mkdirSync(path.join(dir, 'sub'));
    writeFileSync(path.join(dir, 'sub', 'f.txt'), 'needle\n');
    symlinkSync('.', path.join(dir, 'sub', 'self'));
    symlinkSync('..', path.join(dir, 'sub', 'up'));
    symlinkSync('/', path.join(dir, 'root'));
    const files = await listFiles(client, dir);
    assert.deepEqual(files.files, ['sub/f.txt']);
    for (const tool of ['rg', 'grep'] as const) {
      const o = await searchInFolder(client, dir, { pattern: 'needle' }, { tool, rgProgram: rg });
      assert.deepEqual(o.matches.map((m) => m.path), ['sub/f.txt'], tool);
    }
  });

  it("ignore files above the searched folder (/tmp/.ignore holding '*', written by anyone who can write there) do not hide its files from rg", async () => {
    const parent = tempDir('search-parent-');
    writeFileSync(path.join(parent, '.ignore'), '*\n');
    writeFileSync(path.join(parent, '.rgignore'), '*.txt\n');
    mkdirSync(path.join(parent, 'project'));
    writeFileSync(path.join(parent, 'project', 'a.txt'), 'needle\n');
    const o = await searchInFolder(client, path.join(parent, 'project'), { pattern: 'needle' }, { tool: 'rg', rgProgram: rg });
    assert.deepEqual(o.matches.map((m) => m.path), ['a.txt'], summarize(o));
    // The folder's own ignore files still apply (as in VS Code's search).
    writeFileSync(path.join(parent, 'project', '.ignore'), 'a.txt\n');
    const own = await searchInFolder(client, path.join(parent, 'project'), { pattern: 'needle' }, { tool: 'rg', rgProgram: rg });
    assert.deepEqual(own.matches.map((m) => m.path), []);
  });

  it('Go to File in a folder of many empty directories (no file to reach maxFiles): the walk stops at the directory bound and says so', async () => {
    const dir = tempDir('search-dirs-');
    for (let i = 0; i < 300; i++) mkdirSync(path.join(dir, `d${i}`, 'e'), { recursive: true });
    writeFileSync(path.join(dir, 'top.txt'), '');
    let reads = 0;
    const counting = new Proxy(client, {
      get(target, key) {
        if (key !== 'fs') return Reflect.get(target, key);
        const fs = target.fs;
        return new Proxy(fs, {
          get(f, k) {
            const v = Reflect.get(f, k);
            if (k === 'walk') return (...a: unknown[]) => (reads++, (v as (...x: unknown[]) => unknown).apply(f, a));
            return typeof v === 'function' ? v.bind(f) : v;
          },
        });
      },
    }) as typeof client;
    const o = await listFiles(counting, dir, { maxDirectories: 50 });
    assert.ok(reads <= 50, `${reads} directories read`);
    assert.equal(o.truncated, true, 'the list says it is cut');
    assert.deepEqual(o.files, ['top.txt']);
    const all = await listFiles(client, dir, { maxDirectories: 1000 });
    assert.equal(all.truncated, false);
    assert.equal(all.directories, 601);
  });

  it("a host PATH with an empty entry (':/usr/bin'): a `grep` or `rg` planted in the searched folder never runs — the tools are found as on PATH, results unchanged", async (t) => {
    const folder = tempDir('search-planted-');
    const marker = path.join(tempDir('search-planted-marker-'), 'ran');
    for (const tool of ['grep', 'rg']) writeFileSync(path.join(folder, tool), `#!/bin/sh\necho planted >> '${marker}'\n`, { mode: 0o755 });
    mkdirSync(path.join(folder, 'src'));
    writeFileSync(path.join(folder, 'src', 'a.txt'), 'needle\n');
    const grepDir = path.dirname(spawnSync('sh', ['-c', 'command -v grep'], { encoding: 'utf8' }).stdout.trim());
    // The empty entry first: execvp looks in the cwd before the real tools.
    const srv = await startCli([], { t, env: { ...process.env, PATH: `:${path.dirname(rg)}:${grepDir}:/usr/bin:/bin` } });
    const ws = await connectWebSocket(srv.url, { clientName: 'search-planted' });
    t.after(() => ws.close());
    for (const opts of [{ tool: 'grep' as const }, { tool: 'rg' as const, rgProgram: 'rg' }, { tool: 'auto' as const, rgProgram: 'rg' }]) {
      const o = await searchInFolder(ws, folder, { pattern: 'needle' }, opts);
      assert.equal(existsSync(marker), false, `${opts.tool}: the planted program ran (${existsSync(marker) ? readFileSync(marker, 'utf8') : ''})`);
      assert.deepEqual(o.matches.map((m) => m.path), ['src/a.txt'], `${opts.tool}: ${summarize(o)}`);
    }
    // Paths come back relative to the folder, whatever its form.
    assert.equal(relativeResultPath('/a/b/c.txt', '/a/b'), 'c.txt');
    assert.equal(relativeResultPath('/a/b/c.txt', '/a/b/'), 'c.txt');
    assert.equal(relativeResultPath('/etc/passwd', '/'), 'etc/passwd');
    assert.equal(relativeResultPath('./x/y', '.'), 'x/y');
  });
});
