// The engine's Linux-only parts refuse, with their reason, on a POSIX system that is not Linux
// (macOS: no machine here, so the server runs in a child whose process.platform says 'darwin'
// before any engine module is loaded — every platform check reads it). A managed sandbox is
// refused naming bubblewrap and Linux, and nothing runs; an unsandboxed process and a PTY still
// run (POSIX: they do not depend on Linux).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../support/cli';

const out = (rel: string) => JSON.stringify(path.join(repoRoot, 'out', rel));

/** Runs `body` (async JS with c, dir, h, sb in scope) in a child that believes it runs on `platform`; returns its JSON. */
function onPlatform(platform: string, body: string): Record<string, unknown> {
  const code = `
    Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} });
    const h = require(${out('test/support/server.js')});
    const sb = require(${out('src/protocol/codex-sandbox.js')});
    (async () => {
      const { c, dir, close } = await h.serverWithTmpDir();
      try { console.log(JSON.stringify(await (async () => { ${body} })())); } finally { await close(); }
      process.exit(0);
    })().catch((e) => { console.log(JSON.stringify({ crashed: String(e && e.stack || e) })); process.exit(1); });`;
  const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

describe('engine platform guards', () => {
  it('on macOS a managed sandbox is refused with its reason (bubblewrap, Linux only) and nothing runs; a plain process and a PTY still run', { timeout: 90_000 }, () => {
    const r = onPlatform('darwin', `
      const fs = require('fs'), path = require('path');
      const marker = path.join(dir, 'ran');
      const sandbox = sb.managedSandbox({ entries: sb.workspaceWriteEntries({ slashTmp: false }), cwd: h.uri(dir), network: 'restricted' });
      let refused;
      try {
        await c.call('process/start', h.startParams('boxed', ['/bin/sh', '-c', 'touch ' + marker], { cwd: h.uri(dir), sandbox }));
      } catch (e) { refused = e.message; }
      const results = { refused, ran: fs.existsSync(marker) };
      for (const tty of [false, true]) {
        const id = 'plain-' + tty;
        await c.call('process/start', h.startParams(id, ['/bin/sh', '-c', 'test -t 1 && echo tty; echo plain; exit 3'], { cwd: h.uri(dir), tty }));
        await c.sink.waitFor(() => c.sink.closed(id), 20000, id + ' closed');
        const ex = c.sink.forProcess(id).find((e) => e.method === 'process/exited');
        results[id] = { exitCode: ex.params.exitCode, out: c.sink.outputText(id) };
      }
      return results;`);
    assert.match(String(r.refused), /managed sandboxes are enforced with bubblewrap on Linux only; this server runs on darwin/, JSON.stringify(r));
    assert.equal(r.ran, false, 'the refused command did not run');
    assert.deepEqual(r['plain-false'], { exitCode: 3, out: 'plain\n' });
    const pty = r['plain-true'] as { exitCode: number; out: string };
    assert.equal(pty.exitCode, 3);
    assert.match(pty.out, /tty\r?\nplain/);
  });

  it('on macOS fs/* with a managed sandbox are refused with their reason (no /proc to pin what was opened) and change nothing; without a sandbox they run', { timeout: 90_000 }, () => {
    const r = onPlatform('darwin', `
      const fs = require('fs'), path = require('path');
      fs.writeFileSync(path.join(dir, 'in.txt'), 'secret');
      const sandbox = sb.managedSandbox({ entries: sb.workspaceWriteEntries({ slashTmp: false }), cwd: h.uri(dir), network: 'restricted' });
      const policyContext = { cwd: h.uri(dir), workspaceRoots: [h.uri(dir)] };
      const attempt = async (method, params) => { try { return { ok: await c.call(method, { ...params, sandbox, policyContext }) }; } catch (e) { return { code: e.code, message: e.message }; } };
      const read = await attempt('fs/readFile', { path: h.uri(path.join(dir, 'in.txt')) });
      const write = await attempt('fs/writeFile', { path: h.uri(path.join(dir, 'out.txt')), dataBase64: Buffer.from('x').toString('base64') });
      const mkdir = await attempt('fs/createDirectory', { path: h.uri(path.join(dir, 'sub')) });
      const plain = await c.call('fs/readFile', { path: h.uri(path.join(dir, 'in.txt')) });
      return { read, write, mkdir, wrote: fs.existsSync(path.join(dir, 'out.txt')), made: fs.existsSync(path.join(dir, 'sub')), plain: Buffer.from(plain.dataBase64, 'base64').toString() };`);
    for (const k of ['read', 'write', 'mkdir'] as const) {
      const e = r[k] as { code?: number; message?: string };
      assert.equal(e.code, -32600, `${k}: ${JSON.stringify(e)}`);
      assert.match(String(e.message), /cannot be enforced: fs\/\* under a managed sandbox are pinned through \/proc, on Linux only; this server runs on darwin/);
    }
    assert.equal(r.wrote, false, 'the refused write wrote nothing');
    assert.equal(r.made, false, 'the refused mkdir made nothing');
    assert.equal(r.plain, 'secret', 'fs/readFile without a sandbox still runs');
  });

  it('control: the same sandboxed start on Linux runs (so the refusal above is the platform guard, not the request)', { timeout: 90_000, skip: process.platform !== 'linux' ? 'not Linux' : false }, () => {
    const r = onPlatform('linux', `
      const fs = require('fs'), path = require('path');
      const marker = path.join(dir, 'ran');
      const sandbox = sb.managedSandbox({ entries: sb.workspaceWriteEntries({ slashTmp: false }), cwd: h.uri(dir), network: 'restricted' });
      await c.call('process/start', h.startParams('boxed', ['/bin/sh', '-c', 'touch ' + marker], { cwd: h.uri(dir), sandbox }));
      await c.sink.waitFor(() => c.sink.closed('boxed'), 20000, 'boxed closed');
      return { ran: fs.existsSync(marker) };`);
    assert.deepEqual(r, { ran: true });
  });
});
