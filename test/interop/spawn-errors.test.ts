// process/start spawn failures against every reference version and ours: the same code and
// message, and `error.data.kind` as 0.171 sends it (0.169 sends no `data`; ours sends it to every
// client — a 0.169 client ignores the member). Cases from REFERENCE-CAPABILITIES §6.4, measured.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ourServer, referenceServers } from '../support/reference';
import { exchange, initialized } from '../support/wire';
import { tempDir } from '../support/tmp';

test('spawn errors: code, message and data.kind as the reference (missing binary, missing cwd, not executable, directory, NUL byte)', async (t) => {
  const dir = tempDir('spawn-errors-', { t });
  const noexec = path.join(dir, 'noexec');
  writeFileSync(noexec, 'x');
  chmodSync(noexec, 0o644);
  mkdirSync(path.join(dir, 'adir'));
  const cwd = pathToFileURL(dir).href;
  const start = (id: number, argv: string[], extra: object = {}) => ({
    id, method: 'process/start', params: { processId: `p${id}`, argv, cwd, env: { PATH: '/usr/bin:/bin' }, tty: false, ...extra },
  });
  // id → [what, the kind 0.171 sends]
  const cases: [object, string, string][] = [
    [start(1, ['/nonexistent/bin']), 'missing binary', 'spawnNotFound'],
    [start(2, ['not-on-path-xyz']), 'not on PATH', 'spawnNotFound'],
    [start(3, ['/bin/true'], { cwd: 'file:///nonexistent/dir' }), 'missing cwd', 'spawnNotFound'],
    [start(4, [noexec]), 'a file without x bit', 'spawnPermissionDenied'],
    [start(5, [path.join(dir, 'adir')]), 'a directory', 'spawnPermissionDenied'],
    [start(6, ['/bin/echo', 'a\u0000b']), 'NUL in argv', 'spawnFailed'],
    [start(7, ['/bin/tr\u0000ue']), 'NUL in argv[0]', 'spawnFailed'],
    [start(8, ['/bin/true'], { env: { A: 'x\u0000y' } }), 'NUL in env', 'spawnFailed'],
    [start(9, ['/nonexistent/bin'], { env: { A: 'x\u0000' } }), 'NUL in env before the lookup', 'spawnFailed'],
    [start(10, ['/bin/true', '\u0000'], { cwd: 'file:///nonexistent/dir' }), 'NUL in argv before the cwd', 'spawnFailed'],
    [start(11, ['/bin/true'], { cwd: pathToFileURL(noexec).href }), 'cwd is a file', 'spawnFailed'],
    [start(12, ['/nonexistent/bin'], { tty: true }), 'PTY: missing binary', 'spawnNotFound'],
    [start(13, [noexec], { tty: true }), 'PTY: not executable', 'spawnPermissionDenied'],
    [start(14, [path.join(dir, 'adir')], { tty: true }), 'PTY: a directory', 'spawnPermissionDenied'],
    [start(15, ['/bin/echo', 'a\u0000b'], { tty: true }), 'PTY: NUL in argv', 'spawnFailed'],
  ];
  const nulCwd = { id: 16, method: 'process/start', params: { processId: 'p16', argv: ['/bin/true'], cwd: 'file:///tmp/a%00b', env: {}, tty: false } };
  const batches = initialized([...cases.map((c) => c[0]), nulCwd]);
  const refs = referenceServers();
  const [ours, ...theirs] = await Promise.all([exchange(ourServer, batches), ...refs.map((r) => exchange(r, batches))]);
  for (const [req, what, kind] of cases) {
    const id = (req as { id: number }).id;
    const o = ours.get(id)!;
    assert.deepEqual(o.error, { code: -32603, message: o.error?.message, data: { kind } }, `ours, ${what}: ${JSON.stringify(o)}`);
    refs.forEach((ref, i) => {
      const r = theirs[i].get(id)!;
      assert.ok(r.error, `${ref.name}, ${what}: expected an error, got ${JSON.stringify(r)}`);
      assert.equal(o.error!.code, r.error.code, `${what}: code vs ${ref.name}`);
      assert.equal(o.error!.message, r.error.message, `${what}: message vs ${ref.name}`);
      // 0.169 sends no data at all; 0.171 (and newer) the kind.
      if (r.error.data !== undefined) assert.deepEqual(o.error!.data, r.error.data, `${what}: data vs ${ref.name}`);
      else assert.equal(ref.version, '0.169.0', `${ref.name} sent no data for ${what}`);
    });
  }
  const o16 = ours.get(16)!;
  assert.deepEqual(o16.error, { code: -32602, message: "'file:///tmp/a%00b' is invalid on 'linux'" }, `ours, %00 in cwd: ${JSON.stringify(o16)}`);
  refs.forEach((ref, i) => assert.deepEqual(theirs[i].get(16)!.error, o16.error, `%00 in cwd vs ${ref.name}`));
});
