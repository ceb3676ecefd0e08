// Find in Files / Go to File for remote folders (src/extension/search/*), run for real: the
// search processes (grep always; ripgrep from PATH or the one bundled with the reference codex)
// start through a real in-process ExecServer, on real files with hostile names, and the attack
// tests check that a query is never read as an option or by a shell.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ExecClient, StartProcessOptions } from '../../../src/client/api';
import type { ExecServerClient } from '../../../src/client/client';
import { connectInProcess, connectWebSocket } from '../../../src/client/connect';
import { ExecServer } from '../../../src/server/exec-server';
import { DEFAULT_EXCLUDED_NAMES, excludedNamesFromSettings, grepArgv, rgArgv, type SearchQuery, type SearchTool } from '../../../src/extension/search/argv';
import { listFiles } from '../../../src/extension/search/files';
import { grepNulParser, rgJsonParser, visibleLine, visiblePath, type SearchMatch } from '../../../src/extension/search/parse';
import { detectTool, searchInFolder, summarize } from '../../../src/extension/search/run';
import { startCli } from '../../support/cli';
import { findRg } from '../../support/ripgrep';
import { tempDir } from '../../support/tmp';



let server: ExecServer;
let client: ExecServerClient;
let rg: string;
let fixture: string;

const NEWLINE_NAME = 'new\nline.txt';
const MARKUP_NAME = '<img src=x onerror=alert(1)>[x](command:workbench.action.quit).txt';

before(async () => {
  server = new ExecServer();
  client = await connectInProcess(server, { clientName: 'search-test' });
  rg = findRg();
  fixture = tempDir('search-fixture-');
  const f = (rel: string, content: string | Buffer) => {
    mkdirSync(path.dirname(path.join(fixture, rel)), { recursive: true });
    writeFileSync(path.join(fixture, rel), content);
  };
  f('a b:c.txt', 'first needle here\nnothing\nNEEDLE again needle\n');
  f(NEWLINE_NAME, 'x needle\n');
  f(MARKUP_NAME, 'needle in markup\n');
  f('sub/deep/u.txt', 'héllo needle ünï\n');
  f('bin.dat', Buffer.concat([Buffer.from('needle\0binary\n'), Buffer.alloc(64, 0)]));
  f('node_modules/pkg/index.js', 'needle in node_modules\n');
  f('.git/config', 'needle in .git\n');
  f('.hidden.txt', 'hidden needle\n');
  f('latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0x0a])); // "café needle" in Latin-1
  f('dash.txt', '-v is a flag\n--pre=x\nplain line\n');
});
after(async () => {
  await client.close();
  await server.shutdown();
});

const sortKey = (m: SearchMatch) => `${m.path}\u0000${String(m.line).padStart(6, '0')}`;
const sorted = (ms: SearchMatch[]) => [...ms].sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : 1));

/** The search processes still running on this machine whose argv holds `marker`. */
function runningWith(marker: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      const state = readFileSync(`/proc/${d}/stat`, 'utf8');
      const st = state.slice(state.lastIndexOf(')') + 2).charAt(0);
      if (st !== 'Z' && argv.some((a) => a.includes(marker)) && /(^|\/)(rg|grep)$/.test(argv[0])) pids.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

for (const tool of ['grep', 'rg'] as const) {
  const opts = () => ({ tool, rgProgram: rg });

  describe(`find in files with ${tool}`, () => {
    it('finds every match with its line and column; names with colons, spaces, newlines and markup stay exact; binary files, .git and node_modules are skipped', async () => {
      const o = await searchInFolder(client, fixture, { pattern: 'needle' }, opts());
      assert.equal(o.tool, tool);
      assert.equal(o.failure, undefined, `no failure (errors: ${o.errors.join('; ')})`);
      const got = sorted(o.matches).map((m) => [m.path, m.line, m.text, m.ranges]);
      const want: [string, number, string, [number, number][]][] = [
        ['.hidden.txt', 1, 'hidden needle', [[7, 13]]],
        [MARKUP_NAME, 1, 'needle in markup', [[0, 6]]],
        ['a b:c.txt', 1, 'first needle here', [[6, 12]]],
        ['a b:c.txt', 3, 'NEEDLE again needle', [[0, 6], [13, 19]]],
        ['latin1.txt', 1, 'caf\uFFFD needle', [[5, 11]]],
        [NEWLINE_NAME, 1, 'x needle', [[2, 8]]],
        ['sub/deep/u.txt', 1, 'héllo needle ünï', [[6, 12]]],
      ];
      assert.deepEqual(got, sorted(want.map(([p, l, t, r]) => ({ path: p, line: l, text: t, ranges: r, offset: 0 }))).map((m) => [m.path, m.line, m.text, m.ranges]));
      assert.equal(o.files, 6);
      assert.equal(o.notShown, 0);
      assert.equal(summarize(o), '7 matching lines in 6 files');
    });

    it('case sensitivity, whole words and regular expressions', async () => {
      const cs = await searchInFolder(client, fixture, { pattern: 'NEEDLE', caseSensitive: true }, opts());
      assert.deepEqual(cs.matches.map((m) => [m.path, m.line, m.ranges]), [['a b:c.txt', 3, [[0, 6]]]]);
      const word = await searchInFolder(client, fixture, { pattern: 'needl', wholeWord: true }, opts());
      assert.equal(word.matches.length, 0, 'a part of a word is not a whole word');
      assert.equal(summarize(word), 'No results');
      const re = await searchInFolder(client, fixture, { pattern: 'ne+dle (a|h)', isRegex: true }, opts());
      assert.deepEqual(sorted(re.matches).map((m) => [m.path, m.line, m.ranges]), [['a b:c.txt', 1, [[6, 14]]], ['a b:c.txt', 3, [[0, 8]]]]);
      const literal = await searchInFolder(client, fixture, { pattern: 'h[eé]llo' }, opts());
      assert.equal(literal.matches.length, 0, 'without regex the brackets are literal');
    });

    it('a query starting with "-" is searched for, not taken as an option (attack)', async () => {
      // As an option, -v would invert the match (grep: every other line; rg: --invert-match).
      const v = await searchInFolder(client, fixture, { pattern: '-v' }, opts());
      assert.deepEqual(v.matches.map((m) => [m.path, m.line, m.text]), [['dash.txt', 1, '-v is a flag']]);
      // rg --pre=<program> runs the program on every file searched.
      const marker = path.join(tempDir('search-pre-'), 'ran');
      const evil = path.join(path.dirname(marker), 'evil.sh');
      writeFileSync(evil, `#!/bin/sh\ntouch '${marker}'\ncat "$1"\n`);
      chmodSync(evil, 0o755);
      const pre = await searchInFolder(client, fixture, { pattern: `--pre=${evil}` }, opts());
      assert.equal(existsSync(marker), false, 'the query ran a program');
      assert.equal(pre.matches.length, 0);
      const preLiteral = await searchInFolder(client, fixture, { pattern: '--pre=x' }, opts());
      assert.deepEqual(preLiteral.matches.map((m) => [m.path, m.line]), [['dash.txt', 2]]);
      // grep -f<file> would read its patterns from a file: every line of passwd-like content would match.
      const f = await searchInFolder(client, fixture, { pattern: `-f${path.join(fixture, 'dash.txt')}` }, opts());
      assert.equal(f.matches.length, 0, `-f… found ${JSON.stringify(f.matches)}`);
    });

    it('shell metacharacters in the query are plain text (attack)', async () => {
      const dir = tempDir('search-shell-');
      const pwned = path.join(dir, 'pwned');
      const q = `$(touch ${pwned}); \`touch ${pwned}\` | touch ${pwned} && echo '"\\`;
      writeFileSync(path.join(dir, 'f.txt'), `before\n${q}\nafter\n`);
      const o = await searchInFolder(client, dir, { pattern: q }, opts());
      assert.equal(existsSync(pwned), false, 'a shell ran the query');
      assert.deepEqual(o.matches.map((m) => [m.path, m.line, m.text]), [['f.txt', 2, q]]);
    });

    it('caps the rows and says how many more were found; stops counting at the count limit', async () => {
      const dir = tempDir('search-cap-');
      writeFileSync(path.join(dir, 'many.txt'), Array.from({ length: 50 }, (_, i) => `hit ${i}`).join('\n') + '\n');
      const o = await searchInFolder(client, dir, { pattern: 'hit' }, { ...opts(), maxResults: 10 });
      assert.equal(o.matches.length, 10);
      assert.equal(o.notShown, 40);
      assert.equal(o.stoppedAtCountLimit, false);
      assert.equal(summarize(o), '10 matching lines in 1 file — 40 more not shown');
      const limited = await searchInFolder(client, dir, { pattern: 'hit' }, { ...opts(), maxResults: 10, countLimit: 20 });
      assert.equal(limited.matches.length, 10);
      assert.equal(limited.stoppedAtCountLimit, true);
      assert.ok(limited.notShown >= 10, `counted ${limited.notShown}`);
      assert.match(summarize(limited), /— at least \d+ more not shown/);
    });

    it('an invalid regular expression is reported as a failure, not as "no results"', async () => {
      const o = await searchInFolder(client, fixture, { pattern: 'needle(', isRegex: true }, opts());
      assert.equal(o.matches.length, 0);
      assert.ok(o.failure, `a failure (exit ${o.exitCode}, errors ${o.errors.join('; ')})`);
      assert.match(summarize(o), /^Search failed: /);
    });

    it('cancelling terminates the search process on the host (none left running)', async () => {
      const dir = tempDir('search-cancel-');
      const token = `zzcancel${process.pid}${tool}`;
      const body = Array.from({ length: 2000 }, (_, i) => `${token} line ${i} padding padding padding`).join('\n') + '\n';
      for (let i = 0; i < 100; i++) writeFileSync(path.join(dir, `f${i}.txt`), body); // ~10 MB of matches
      const ac = new AbortController();
      let aliveAtCancel: number[] = [];
      const o = await searchInFolder(client, dir, { pattern: token }, {
        ...opts(),
        signal: ac.signal,
        onMatch: () => {
          if (ac.signal.aborted) return;
          aliveAtCancel = runningWith(token);
          ac.abort();
        },
      });
      assert.equal(aliveAtCancel.length, 1, `the search was running when cancelled (${aliveAtCancel})`);
      assert.equal(o.cancelled, true);
      assert.deepEqual(runningWith(token), [], 'no search process left after cancel');
      assert.match(summarize(o), /cancelled/);
    });
  });
}

describe('find in files: choosing the tool and bad input', () => {
  it('uses ripgrep when it runs on the host, grep otherwise', async () => {
    assert.equal(await detectTool(client, rg), 'rg');
    assert.equal(await detectTool(client, '/nonexistent/rg'), 'grep');
    const o = await searchInFolder(client, fixture, { pattern: 'needle' }, { rgProgram: '/nonexistent/rg' });
    assert.equal(o.tool, 'grep');
    assert.equal(o.matches.length, 7);
  });

  it('rejects an empty query, a multi-line query and NUL characters before starting anything', async () => {
    for (const q of [{ pattern: '' }, { pattern: 'a\nb' }, { pattern: 'a\0b' }, { pattern: 'x', include: ['a\0'] }, { pattern: 'x', excludeNames: ['a/b'] }, { pattern: 'x', excludeNames: ['*.js'] }] as SearchQuery[]) {
      await assert.rejects(searchInFolder(client, fixture, q, { tool: 'grep' }), /empty|single line|NUL|plain file or folder name/);
    }
  });

  it('a folder that does not exist is an error naming it', async () => {
    await assert.rejects(searchInFolder(client, path.join(fixture, 'missing'), { pattern: 'x' }, { tool: 'grep' }), /cannot run grep on the host in .*missing/);
  });

  it('files.exclude / search.exclude entries naming one file or folder are honoured; other globs are left out', async () => {
    const names = excludedNamesFromSettings([{ '**/.git': true, '**/dist': true, '**/*.map': true, 'build/**': true }, { '**/node_modules': false, '**/sub': true }]);
    assert.ok(names.includes('dist') && names.includes('.git') && names.includes('sub'));
    assert.ok(!names.includes('node_modules'), 'a default turned back on');
    assert.ok(!names.some((n) => n.includes('*') || n.includes('/')));
    assert.ok(DEFAULT_EXCLUDED_NAMES.includes('node_modules'));
    for (const tool of ['grep', 'rg'] as const) {
      const o = await searchInFolder(client, fixture, { pattern: 'needle', excludeNames: ['sub', '.hidden.txt', '.git', 'node_modules'] }, { tool, rgProgram: rg });
      assert.deepEqual(o.matches.filter((m) => m.path.startsWith('sub/') || m.path === '.hidden.txt'), [], tool);
      assert.equal(o.matches.length, 5, `${tool}: ${o.matches.map((m) => m.path)}`);
    }
  });

  it('a FIFO in the folder does not hang the search (both tools skip it)', async () => {
    const dir = tempDir('search-fifo-');
    spawnSync('mkfifo', [path.join(dir, 'pipe')]);
    writeFileSync(path.join(dir, 'a.txt'), 'needle\n');
    for (const tool of ['grep', 'rg'] as const) {
      const o = await searchInFolder(client, dir, { pattern: 'needle' }, { tool, rgProgram: rg });
      assert.deepEqual(o.matches.map((m) => m.path), ['a.txt'], tool);
    }
    assert.deepEqual((await listFiles(client, dir)).files, ['a.txt'], 'go to file lists no FIFO');
  });

  it('argv: the query is the value of --regexp= (rg) or follows -e (grep), and "--" ends the options', () => {
    const q = { pattern: '--pre=sh' };
    const r = rgArgv(q);
    assert.equal(r.filter((a) => a.includes('--pre=sh')).join(), '--regexp=--pre=sh');
    assert.deepEqual(r.slice(-2), ['--', './']);
    const g = grepArgv(q);
    assert.equal(g[g.indexOf('--pre=sh') - 1], '-e');
    assert.deepEqual(g.slice(-2), ['--', '.']);
  });
});

describe('find in files: a tool choice that went stale on the host', () => {
  /**
   * A host of our CLI whose PATH is only `shims` (where `rg` is a script running the real
   * ripgrep through `rg-target`, a symlink) and, unless `noGrep`, `tools` (grep). Removing the
   * script is "rg uninstalled"; removing the symlink is "rg's wrapper finds no binary" (exit 127).
   */
  async function hostWithRgShim(t: import('node:test').TestContext, noGrep = false) {
    const root = tempDir('search-stale-');
    const shims = path.join(root, 'shims');
    const tools = path.join(root, 'tools');
    mkdirSync(shims);
    mkdirSync(tools);
    const target = path.join(root, 'rg-target');
    symlinkSync(rg, target);
    const shim = path.join(shims, 'rg');
    writeFileSync(shim, `#!/bin/sh\nexec '${target}' "$@"\n`, { mode: 0o755 });
    const grep = spawnSync('sh', ['-c', 'command -v grep'], { encoding: 'utf8' }).stdout.trim();
    symlinkSync(grep, path.join(tools, 'grep'));
    const srv = await startCli([], { t, env: { ...process.env, PATH: noGrep ? shims : `${shims}:${tools}` } });
    const ws = await connectWebSocket(srv.url, { clientName: 'search-stale' });
    t.after(() => ws.close());
    // Every process the search starts, in order (argv[0] and, for probes, --version).
    const starts: string[] = [];
    const client = new Proxy(ws, {
      get(target, key) {
        const v = Reflect.get(target, key);
        if (key === 'startProcess') {
          return (o: StartProcessOptions) => {
            starts.push(`${path.basename(o.argv[0])}${o.argv[1] === '--version' ? ' --version' : ''}`);
            return target.startProcess(o);
          };
        }
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as ExecClient;
    return { client, starts, shim, target };
  }

  it('rg removed from the host after it was chosen: the next search probes again and gives grep\'s rows, not "cannot run rg"', async (t) => {
    const h = await hostWithRgShim(t);
    const first = await searchInFolder(h.client, fixture, { pattern: 'needle' });
    assert.equal(first.tool, 'rg');
    assert.equal(first.matches.length, 7, summarize(first));
    rmSync(h.shim);
    h.starts.length = 0;
    const second = await searchInFolder(h.client, fixture, { pattern: 'needle' });
    assert.equal(second.tool, 'grep');
    assert.equal(second.failure, undefined, summarize(second));
    assert.deepEqual(sorted(second.matches).map((m) => [m.path, m.line]), sorted(first.matches).map((m) => [m.path, m.line]));
    assert.deepEqual(h.starts, ['rg', 'rg --version', 'grep'], 'the cached rg failed, one probe, one retry');
    h.starts.length = 0;
    await searchInFolder(h.client, fixture, { pattern: 'needle' });
    assert.deepEqual(h.starts, ['grep'], 'the fresh choice is cached');
  });

  it('rg still on PATH but unable to run its binary (exit 127): probed again, grep\'s rows', async (t) => {
    const h = await hostWithRgShim(t);
    assert.equal((await searchInFolder(h.client, fixture, { pattern: 'needle' })).tool, 'rg');
    rmSync(h.target);
    h.starts.length = 0;
    const o = await searchInFolder(h.client, fixture, { pattern: 'needle' });
    assert.equal(o.tool, 'grep');
    assert.equal(o.matches.length, 7, summarize(o));
    assert.deepEqual(h.starts, ['rg', 'rg --version', 'grep']);
  });

  it('neither tool can run any more: one probe, one retry, then an error naming the tool (no loop)', async (t) => {
    const h = await hostWithRgShim(t, true);
    assert.equal((await searchInFolder(h.client, fixture, { pattern: 'needle' })).tool, 'rg');
    rmSync(h.shim);
    h.starts.length = 0;
    await assert.rejects(searchInFolder(h.client, fixture, { pattern: 'needle' }), /cannot run grep on the host/);
    assert.deepEqual(h.starts, ['rg', 'rg --version', 'grep']);
  });

  it('a folder that does not exist is an error naming it, and does not make the host\'s rg forgotten', async (t) => {
    const h = await hostWithRgShim(t);
    await assert.rejects(searchInFolder(h.client, path.join(fixture, 'missing'), { pattern: 'x' }), /cannot run .*rg on the host in .*missing/);
    h.starts.length = 0;
    const o = await searchInFolder(h.client, fixture, { pattern: 'needle' });
    assert.equal(o.tool, 'rg');
    assert.equal(o.matches.length, 7, summarize(o));
    assert.deepEqual(h.starts, ['rg']);
  });
});

describe('find in files over a connection that drops', () => {
  /** ~10 MB of matching lines: the search is still running when the first rows arrive. */
  function bigFolder(token: string): string {
    const dir = tempDir('search-drop-');
    const body = Array.from({ length: 2000 }, (_, i) => `${token} line ${i} padding padding padding`).join('\n') + '\n';
    for (let i = 0; i < 100; i++) writeFileSync(path.join(dir, `f${i}.txt`), body);
    return dir;
  }

  it('Cancel after the server died returns within the grace period, not after the client\'s recovery timeout', async (t) => {
    const srv = await startCli([], { t });
    const ws = await connectWebSocket(srv.url, { clientName: 'search-drop', recoveryTimeoutMs: 60_000 });
    t.after(() => ws.close());
    const ac = new AbortController();
    let killedAt = 0;
    const o = await searchInFolder(ws, bigFolder('dropcancel'), { pattern: 'dropcancel' }, {
      tool: 'grep',
      signal: ac.signal,
      onMatch: () => {
        if (killedAt) return;
        killedAt = Date.now();
        srv.child.kill('SIGKILL');
        setTimeout(() => ac.abort(), 300);
      },
    });
    const took = Date.now() - killedAt;
    assert.equal(o.cancelled, true);
    assert.match(o.incomplete ?? '', /did not confirm/);
    // The client would keep trying to resume for 60 s; Cancel gives up after CANCEL_GRACE_MS (3 s).
    assert.ok(took < 30_000, `Cancel returned after ${took} ms`);
    assert.match(summarize(o), /cancelled — incomplete: the host did not confirm/);
  });

  it('a connection lost for good mid-search says the rows are incomplete (not a clean result)', async (t) => {
    const srv = await startCli([], { t });
    const ws = await connectWebSocket(srv.url, { clientName: 'search-lost', recoveryTimeoutMs: 1_000 });
    t.after(() => ws.close());
    let killed = false;
    const o = await searchInFolder(ws, bigFolder('droplost'), { pattern: 'droplost' }, {
      tool: 'grep',
      onMatch: () => {
        if (!killed) srv.child.kill('SIGKILL');
        killed = true;
      },
    });
    assert.ok(o.matches.length > 0);
    assert.equal(o.cancelled, false);
    assert.match(o.incomplete ?? '', /search process was lost/);
    assert.match(summarize(o), /incomplete: the search process was lost/);
  });
});

describe('find in files: output parsers', () => {
  const collect = (make: (on: (m: SearchMatch) => void) => { push(c: Uint8Array): void; end(): void }, data: Buffer, step: number) => {
    const out: SearchMatch[] = [];
    const p = make((m) => out.push(m));
    for (let i = 0; i < data.length; i += step) p.push(data.subarray(i, i + step));
    p.end();
    return out;
  };

  it('real grep and rg output split at every byte gives the same rows as whole', () => {
    for (const tool of ['grep', 'rg'] as SearchTool[]) {
      const q = { pattern: 'needle' };
      const argv = tool === 'rg' ? rgArgv(q, rg) : grepArgv(q);
      const r = spawnSync(argv[0], argv.slice(1), { cwd: fixture, env: { PATH: process.env.PATH, LC_ALL: 'C' } });
      const make = (on: (m: SearchMatch) => void) => (tool === 'rg' ? rgJsonParser(on) : grepNulParser(q, on));
      const whole = collect(make, r.stdout, r.stdout.length);
      assert.equal(whole.length, 7, `${tool}: ${r.stderr}`);
      assert.deepEqual(sorted(collect(make, r.stdout, 1)), sorted(whole), `${tool} byte by byte`);
      assert.deepEqual(sorted(collect(make, r.stdout, 7)), sorted(whole), `${tool} 7 bytes at a time`);
    }
  });

  it('a grep record with a file name that is not followed by a line number is skipped, later records still parse', () => {
    const bad: string[] = [];
    const out: SearchMatch[] = [];
    const p = grepNulParser({ pattern: 'x' }, (m) => out.push(m), (t) => bad.push(t));
    p.push(Buffer.from('./weird\0oops\n./ok.txt\x003:has x\n'));
    p.end();
    assert.deepEqual(out.map((m) => [m.path, m.line, m.text]), [['ok.txt', 3, 'has x']]);
    assert.equal(bad.length, 1);
  });

  it('a very long line is cut around its first match; offset + range gives the column in the full line', async () => {
    const dir = tempDir('search-long-');
    const line = `${'x'.repeat(5000)} findme ${'y'.repeat(5000)}`;
    writeFileSync(path.join(dir, 'min.js'), `${line}\n`);
    for (const tool of ['grep', 'rg'] as const) {
      const [m] = (await searchInFolder(client, dir, { pattern: 'findme' }, { tool, rgProgram: rg })).matches;
      assert.ok(m.text.length <= 2000, `${tool}: cut to ${m.text.length}`);
      assert.equal(m.text.slice(m.ranges[0][0], m.ranges[0][1]), 'findme', tool);
      assert.equal(m.offset + m.ranges[0][0], 5001, `${tool}: column in the full line`);
    }
  });

  it('names and lines are shown with visible escapes, markup stays literal text', () => {
    assert.equal(visiblePath(NEWLINE_NAME), 'new\\nline.txt');
    assert.equal(visiblePath('a\u202Eb\u200Bc'), 'a\\u202eb\\u200bc');
    assert.equal(visiblePath(MARKUP_NAME), MARKUP_NAME);
    const line = 'a\tb\u202Ec';
    assert.equal(visibleLine(line), 'a b\uFFFDc');
    assert.equal(visibleLine(line).length, line.length, 'one character for one: match ranges stay valid');
  });
});

describe('go to file: listing with fs/walk', () => {
  it('lists files below the folder, not entering .git or node_modules, names exact', async () => {
    const batches: string[][] = [];
    const o = await listFiles(client, fixture, { onBatch: (b) => batches.push(b) });
    assert.deepEqual([...o.files].sort(), ['.hidden.txt', MARKUP_NAME, 'a b:c.txt', 'bin.dat', 'dash.txt', 'latin1.txt', NEWLINE_NAME, 'sub/deep/u.txt'].sort());
    assert.equal(o.truncated, false);
    assert.deepEqual(batches.flat().sort(), [...o.files].sort(), 'every file was handed out in a batch');
    assert.ok(batches.length >= 2, 'files arrive in several batches (one per directory)');
  });

  it('stops at maxFiles and says so; extra excluded names are honoured', async () => {
    const dir = tempDir('search-walk-');
    for (let d = 0; d < 5; d++) {
      mkdirSync(path.join(dir, `d${d}`, 'skipme'), { recursive: true });
      for (let i = 0; i < 10; i++) writeFileSync(path.join(dir, `d${d}`, `f${i}`), '');
      writeFileSync(path.join(dir, `d${d}`, 'skipme', 'x'), '');
    }
    writeFileSync(path.join(dir, 'd0', 'secret.txt'), '');
    const all = await listFiles(client, dir, { excludeNames: ['skipme', 'secret.txt'] });
    assert.equal(all.files.length, 50);
    assert.ok(!all.files.some((f) => f.includes('skipme')));
    const capped = await listFiles(client, dir, { maxFiles: 23 });
    assert.equal(capped.files.length, 23);
    assert.equal(capped.truncated, true);
  });

  it('a missing folder rejects', async () => {
    await assert.rejects(listFiles(client, path.join(fixture, 'nope')), /no such file|not found|ENOENT/i);
  });
});
