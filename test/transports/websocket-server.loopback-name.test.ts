// Attack (docs/security.md, "The second attack review"): `--listen ws://dev.localhost:P` without --ws-auth passed
// the loopback rule by its name (`*.localhost`), whatever the name resolves to. With /etc/hosts
// sending dev.localhost to 0.0.0.0 (here: a private /etc/hosts in a bwrap mount namespace, the
// host's network), the unauthenticated server listened on every interface.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { cliPath } from '../support/cli';
import { tempDir } from '../support/tmp';

test('attack: an unauthenticated listener on a *.localhost name that resolves to 0.0.0.0 is refused (the bound address decides)', async (t) => {
  const dir = tempDir('ws-loopback-name-');
  const hosts = path.join(dir, 'hosts');
  writeFileSync(hosts, '0.0.0.0 dev.localhost\n127.0.0.1 localhost\n');
  const child = spawn('/usr/bin/bwrap', ['--dev-bind', '/', '/', '--ro-bind', hosts, '/etc/hosts', '--die-with-parent', '--', process.execPath, cliPath, '--listen', 'ws://dev.localhost:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => void child.kill('SIGKILL'));
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), 15_000);
    child.once('exit', (c) => (clearTimeout(timer), resolve(c)));
  });
  assert.doesNotMatch(out, /^ws:\/\//m, `the unauthenticated server listened: ${out}`);
  assert.equal(code, 1, `exit ${code}: ${err}`);
  assert.match(err, /dev\.localhost resolved to 0\.0\.0\.0, which is not a loopback address/);
});

test('a *.localhost name that resolves to loopback still listens without authentication', async (t) => {
  const dir = tempDir('ws-loopback-name-');
  const hosts = path.join(dir, 'hosts');
  writeFileSync(hosts, '127.0.0.1 dev.localhost localhost\n');
  const child = spawn('/usr/bin/bwrap', ['--dev-bind', '/', '/', '--ro-bind', hosts, '/etc/hosts', '--die-with-parent', '--', process.execPath, cliPath, '--listen', 'ws://dev.localhost:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => void child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const listening = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 15_000);
    child.stdout.on('data', () => /^ws:\/\//m.test(out) && (clearTimeout(timer), resolve(true)));
    child.once('exit', () => (clearTimeout(timer), resolve(false)));
  });
  assert.ok(listening, 'the loopback-resolving name listens');
});
