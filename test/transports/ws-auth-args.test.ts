// The security CLI flags: parsing, the reference's combination errors, the loopback rule.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { parseAuthArgs, validateListenSecurity } from '../../src/transports/ws-auth-args';
import { isLoopbackHost, listenHost, SecurityConfigError } from '../../src/transports/ws-auth';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { cliPath } from '../support/cli';
import { tempDir } from '../support/tmp';

const DIGEST = 'a'.repeat(64);

function throwsConfig(fn: () => unknown, re: RegExp) {
  assert.throws(fn, (e: unknown) => e instanceof SecurityConfigError && re.test(e.message));
}

describe('parseAuthArgs', () => {
  test('extracts security flags in both spellings and leaves the rest in order', () => {
    const r = parseAuthArgs([
      '--listen', 'ws://127.0.0.1:0', '--ws-auth', 'capability-token', `--ws-token-sha256=${DIGEST}`,
      '--allow-origin', 'https://a.example', '--allow-origin=http://localhost:3000', '--verbose',
    ]);
    assert.deepEqual(r.rest, ['--listen', 'ws://127.0.0.1:0', '--verbose']);
    assert.deepEqual(r.options.auth, { mode: 'capability-token', tokenSha256: DIGEST });
    assert.deepEqual(r.options.allowedOrigins, ['https://a.example', 'http://localhost:3000']);
    assert.equal(r.options.tls, undefined);
  });

  test('no security flags → no auth, no TLS, no origins', () => {
    assert.deepEqual(parseAuthArgs(['--listen', 'stdio']), { options: { auth: undefined, tls: undefined, allowedOrigins: [] }, rest: ['--listen', 'stdio'] });
  });

  test('signed-bearer-token collects its options; skew parsed as an integer', () => {
    const r = parseAuthArgs([
      '--ws-auth', 'signed-bearer-token', '--ws-shared-secret-file', '/s', '--ws-issuer', 'i', '--ws-audience', 'a',
      '--ws-max-clock-skew-seconds', '5', '--tls-cert', '/c.pem', '--tls-key', '/k.pem',
    ]);
    assert.deepEqual(r.options.auth, { mode: 'signed-bearer-token', sharedSecretFile: '/s', issuer: 'i', audience: 'a', maxClockSkewSeconds: 5 });
    assert.deepEqual(r.options.tls, { certFile: '/c.pem', keyFile: '/k.pem' });
  });

  const bad: Array<[string, string[], RegExp]> = [
    ['capability without source', ['--ws-auth', 'capability-token'], /`--ws-token-file` or `--ws-token-sha256` is required/],
    ['token flag without mode', ['--ws-token-file', '/x'], /require `--ws-auth capability-token` or `--ws-auth signed-bearer-token`/],
    ['both token sources', ['--ws-auth', 'capability-token', '--ws-token-file', '/x', '--ws-token-sha256', DIGEST], /mutually exclusive/],
    ['jwt flag with capability mode', ['--ws-auth', 'capability-token', '--ws-token-file', '/x', '--ws-issuer', 'i'], /require `--ws-auth signed-bearer-token`/],
    ['token flag with jwt mode', ['--ws-auth', 'signed-bearer-token', '--ws-shared-secret-file', '/s', '--ws-token-file', '/x'], /not `signed-bearer-token`/],
    ['jwt without secret', ['--ws-auth', 'signed-bearer-token'], /`--ws-shared-secret-file` is required/],
    ['unknown mode', ['--ws-auth', 'password'], /invalid --ws-auth mode "password" \(possible values/],
    ['missing value at end', ['--ws-token-file'], /--ws-token-file requires a value/],
    ['flag as value', ['--ws-auth', '--listen'], /--ws-auth requires a value/],
    ['empty value', ['--ws-issuer='], /requires a non-empty value/],
    ['repeated single flag', ['--ws-auth', 'capability-token', '--ws-auth', 'capability-token'], /may only be given once/],
    ['negative skew', ['--ws-auth', 'signed-bearer-token', '--ws-shared-secret-file', '/s', '--ws-max-clock-skew-seconds', '-1'], /requires a value|non-negative integer/],
    ['fractional skew', ['--ws-auth', 'signed-bearer-token', '--ws-shared-secret-file', '/s', '--ws-max-clock-skew-seconds', '1.5'], /non-negative integer/],
    ['cert without key', ['--tls-cert', '/c.pem'], /must be given together/],
    ['key without cert', ['--tls-key', '/k.pem'], /must be given together/],
    ['origin with a path', ['--allow-origin', 'https://a.example/path'], /must look like scheme:\/\/host/],
    ['origin without scheme', ['--allow-origin', 'a.example'], /must look like scheme:\/\/host/],
    ['wildcard origin', ['--allow-origin', '*'], /must look like scheme:\/\/host/],
  ];
  for (const [name, argv, re] of bad) test(`error: ${name}`, () => throwsConfig(() => parseAuthArgs(argv), re));
});

describe('loopback rule', () => {
  test('isLoopbackHost', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1']) {
      assert.equal(isLoopbackHost(h), true, h);
    }
    for (const h of ['0.0.0.0', '::', '[::]', '192.168.1.2', '10.0.0.1', 'example.com', '127.0.0.1.evil.com', '128.0.0.1', '127.0.0.256', '', '::2']) {
      assert.equal(isLoopbackHost(h), false, h);
    }
  });

  test('listenHost extracts the host of ws/wss URLs only', () => {
    assert.equal(listenHost('ws://127.0.0.1:0'), '127.0.0.1');
    assert.equal(listenHost('wss://[::1]:8443'), '[::1]');
    assert.equal(listenHost('stdio'), undefined);
    assert.equal(listenHost('ws://'), undefined);
  });

  const auth = { mode: 'capability-token', tokenSha256: DIGEST } as const;
  test('non-loopback without auth is refused with a clear error; with auth it is allowed', () => {
    throwsConfig(() => validateListenSecurity('ws://0.0.0.0:0', { allowedOrigins: [] }), /refusing to listen on non-loopback address 0\.0\.0\.0 without authentication/);
    throwsConfig(() => validateListenSecurity('ws://[::]:0', { allowedOrigins: [] }), /non-loopback/);
    assert.doesNotThrow(() => validateListenSecurity('ws://0.0.0.0:0', { auth, allowedOrigins: [] }));
    assert.doesNotThrow(() => validateListenSecurity('ws://127.0.0.1:0', { allowedOrigins: [] }));
    assert.doesNotThrow(() => validateListenSecurity('ws://localhost:0', { allowedOrigins: [] }));
  });

  test('wss:// needs a certificate; websocket-only flags are refused with stdio', () => {
    throwsConfig(() => validateListenSecurity('wss://127.0.0.1:0', { allowedOrigins: [] }), /requires --tls-cert and --tls-key/);
    assert.doesNotThrow(() => validateListenSecurity('wss://127.0.0.1:0', { tls: { certFile: '/c', keyFile: '/k' }, allowedOrigins: [] }));
    throwsConfig(() => validateListenSecurity('stdio', { auth, allowedOrigins: [] }), /only apply to a ws:\/\/ or wss:\/\//);
    throwsConfig(() => validateListenSecurity('stdio', { allowedOrigins: ['https://a.example'] }), /only apply/);
    assert.doesNotThrow(() => validateListenSecurity('stdio', { allowedOrigins: [] }));
  });
});

describe('capability token strength on a network listener', () => {
  test('attack: a 5-byte token file on 0.0.0.0 (guessable from the network) is refused at startup; loopback keeps accepting it', () => {
    const dir = tempDir('ws-short-token-');
    const short = path.join(dir, 'short');
    writeFileSync(short, 'abcde\n');
    const long = path.join(dir, 'long');
    writeFileSync(long, 'f'.repeat(16));
    const auth = { mode: 'capability-token' as const, tokenFile: short };
    throwsConfig(() => validateListenSecurity('ws://0.0.0.0:0', { auth, allowedOrigins: [] }), /capability token of 5 bytes: it must be at least 16/);
    throwsConfig(() => validateListenSecurity('ws://[::]:0', { auth, allowedOrigins: [] }), /at least 16/);
    validateListenSecurity('ws://127.0.0.1:0', { auth, allowedOrigins: [] });
    validateListenSecurity('ws://0.0.0.0:0', { auth: { mode: 'capability-token', tokenFile: long }, allowedOrigins: [] });
    // The CLI itself: exits 2 instead of listening (on the old code it listened until killed).
    const r = spawnSync(process.execPath, [cliPath, '--listen', 'ws://0.0.0.0:0', '--ws-auth', 'capability-token', '--ws-token-file', short], { encoding: 'utf8', timeout: 5_000, killSignal: 'SIGKILL' });
    assert.equal(r.status, 2, `the CLI started: ${r.stderr}`);
    assert.match(r.stderr, /at least 16/);
  });
});
