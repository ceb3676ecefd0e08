// The built CLI's security over real sockets: HTTP 401 before any JSON-RPC, the loopback
// rule, wss:// with a generated self-signed cert, the browser-Origin rule, and that no
// token or secret reaches the logs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { attempt, ensureBuilt, RawRpc, runCliExpectExit, startCli, stopAll, type Attempt } from '../support/cli-servers';
import { makeSelfSigned, nowSeconds, signJwt, tempDir } from '../support/security';
import { AuthMessages } from '../../src/transports/ws-auth';

const TOKEN = 'cli-capability-token-Zq81xYv03';
const SECRET = 'cli-shared-secret-0123456789abcdefXYZ';
const tmp = tempDir();
let tokenFile: string;
let secretFile: string;

before(() => {
  ensureBuilt();
  tokenFile = tmp.file('token', `${TOKEN}\n`);
  secretFile = tmp.file('secret', SECRET);
});
after(async () => {
  await stopAll();
  tmp.dispose();
});

const auth = (t: string) => ({ headers: { Authorization: `Bearer ${t}` } });

function assertHttp(a: Attempt, status: number, body: string): void {
  assert.equal(a.kind, 'http', `expected an HTTP refusal, got ${a.kind}${a.kind === 'open' ? ' (socket opened)' : ''}`);
  if (a.kind !== 'http') return;
  assert.equal(a.status, status);
  assert.equal(a.body, body);
}

async function assertWorks(a: Attempt): Promise<void> {
  assert.equal(a.kind, 'open', JSON.stringify(a.kind === 'open' ? '' : a));
  if (a.kind !== 'open') return;
  const rpc = new RawRpc(a.ws);
  const sessionId = await rpc.init();
  assert.match(sessionId, /^[0-9a-f-]{36}$/);
  const st = await rpc.call('environment/status', null);
  assert.deepEqual(st.result, { status: 'ready' });
  a.ws.close();
}

test('capability-token: 401 for missing/wrong/other-scheme tokens before any JSON-RPC; right token works; tokens never logged', async () => {
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0', '--ws-auth', 'capability-token', '--ws-token-file', tokenFile, '--log-level', 'debug']);
  assertHttp(await attempt(cli.url), 401, AuthMessages.missingToken);
  assertHttp(await attempt(cli.url, auth('wrong-token-value-777')), 401, AuthMessages.invalidToken);
  assertHttp(await attempt(cli.url, { headers: { Authorization: `Basic ${TOKEN}` } }), 401, AuthMessages.invalidHeader);
  await assertWorks(await attempt(cli.url, auth(TOKEN)));
  // /readyz stays open (health checks carry no token), like the reference.
  const ready = await fetch(`${cli.url.replace(/^ws/, 'http')}/readyz`);
  assert.equal(ready.status, 200);
  await cli.stop();
  const logs = cli.stderr() + cli.stdout();
  assert.match(logs, /401 invalid websocket bearer token/, 'refusals are logged (without the token)');
  for (const secret of [TOKEN, 'wrong-token-value-777']) assert.ok(!logs.includes(secret), `logs contain ${secret}`);
});

test('capability-token by --ws-token-sha256: only the digest is on the command line', async () => {
  const digest = createHash('sha256').update(TOKEN).digest('hex');
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0', '--ws-auth', 'capability-token', '--ws-token-sha256', digest]);
  assertHttp(await attempt(cli.url, auth(digest)), 401, AuthMessages.invalidToken);
  await assertWorks(await attempt(cli.url, auth(TOKEN)));
  await cli.stop();
});

test('signed-bearer-token: expired / not-yet-valid / wrong issuer / HS512 → 401; valid JWT works; JWTs never logged', async () => {
  const cli = await startCli([
    '--listen', 'ws://127.0.0.1:0', '--ws-auth', 'signed-bearer-token', '--ws-shared-secret-file', secretFile,
    '--ws-issuer', 'tests', '--ws-audience', 'exec', '--log-level', 'debug',
  ]);
  const claims = { iss: 'tests', aud: 'exec', exp: nowSeconds() + 120 };
  const bad = {
    expired: [await signJwt(SECRET, { ...claims, exp: nowSeconds() - 600 }), AuthMessages.expiredJwt],
    early: [await signJwt(SECRET, { ...claims, nbf: nowSeconds() + 600 }), AuthMessages.notYetValidJwt],
    issuer: [await signJwt(SECRET, { ...claims, iss: 'someone' }), AuthMessages.issuerMismatch],
    hs512: [await signJwt(SECRET, claims, 'HS512'), AuthMessages.invalidJwt],
    secret: [await signJwt(`${SECRET}!`, claims), AuthMessages.invalidJwt],
  };
  for (const [token, message] of Object.values(bad)) assertHttp(await attempt(cli.url, auth(token)), 401, message);
  const good = await signJwt(SECRET, claims);
  await assertWorks(await attempt(cli.url, auth(good)));
  await cli.stop();
  const logs = cli.stderr() + cli.stdout();
  for (const t of [good, ...Object.values(bad).map(([t]) => t), SECRET]) {
    // A JWT's signature part is what makes it usable: it must appear nowhere.
    assert.ok(!logs.includes(t.split('.').pop()!), 'a token/secret appeared in the logs');
  }
});

test('non-loopback listen without auth is refused (exit 2, clear message); with auth it listens', async () => {
  for (const listen of ['ws://0.0.0.0:0', 'ws://[::]:0']) {
    const r = runCliExpectExit(['--listen', listen]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /refusing to listen on non-loopback address .* without authentication/);
    assert.equal(r.stdout, '', 'nothing printed on stdout: no URL, no listener');
  }
  const cli = await startCli(['--listen', 'ws://0.0.0.0:0', '--ws-auth', 'capability-token', '--ws-token-file', tokenFile]);
  const local = cli.url.replace('0.0.0.0', '127.0.0.1'); // connect only via loopback
  assertHttp(await attempt(local), 401, AuthMessages.missingToken);
  await assertWorks(await attempt(local, auth(TOKEN)));
  await cli.stop();
});

test('bad security configuration exits non-zero with a clear error and no secret in it', () => {
  const short = tmp.file('short-secret', 'tooshort-secret-123');
  const cases: Array<[string[], RegExp]> = [
    [['--ws-auth', 'signed-bearer-token', '--ws-shared-secret-file', short], /must be at least 32 bytes/],
    [['--ws-auth', 'capability-token'], /is required when `--ws-auth capability-token`/],
    [['--ws-auth', 'capability-token', '--ws-token-file', `${tmp.dir}/missing`], /failed to read websocket auth secret/],
    [['--ws-token-file', tokenFile], /require `--ws-auth capability-token` or `--ws-auth signed-bearer-token`/],
    [['--listen', 'wss://127.0.0.1:0'], /requires --tls-cert and --tls-key/],
    [['--tls-cert', tokenFile], /must be given together/],
    [['--listen', 'stdio', '--ws-auth', 'capability-token', '--ws-token-file', tokenFile], /only apply to a ws:\/\/ or wss:\/\//],
  ];
  for (const [args, re] of cases) {
    const r = runCliExpectExit(args);
    assert.notEqual(r.status, 0, `${args.join(' ')} should fail`);
    assert.match(r.stderr, re);
    assert.ok(!r.stderr.includes('tooshort-secret-123') && !r.stderr.includes(TOKEN), 'secret echoed in an error');
  }
});

test('wss:// with a self-signed certificate generated for this test', async () => {
  const files = makeSelfSigned(tmp.dir, 'cli');
  const cli = await startCli([
    '--listen', 'wss://127.0.0.1:0', '--tls-cert', files.certFile, '--tls-key', files.keyFile,
    '--ws-auth', 'capability-token', '--ws-token-file', tokenFile,
  ]);
  assert.match(cli.url, /^wss:\/\/127\.0\.0\.1:\d+$/);
  const ca = readFileSync(files.certFile);
  assertHttp(await attempt(cli.url, { ca }), 401, AuthMessages.missingToken);
  await assertWorks(await attempt(cli.url, { ca, ...auth(TOKEN) }));
  const untrusted = await attempt(cli.url, auth(TOKEN));
  assert.equal(untrusted.kind, 'error', 'an untrusted self-signed certificate must fail the handshake');
  // Plain ws:// to a TLS port must not reach JSON-RPC either.
  const plain = await attempt(cli.url.replace(/^wss/, 'ws'), auth(TOKEN));
  assert.notEqual(plain.kind, 'open');
  await cli.stop();
});

test('a browser Origin is refused with 403 unless --allow-origin lists it', async () => {
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0', '--allow-origin', 'https://trusted.example']);
  const withOrigin = (origin: string) => attempt(cli.url, { origin });
  const evil = await withOrigin('http://evil.example');
  assert.equal(evil.kind, 'http');
  if (evil.kind === 'http') assert.equal(evil.status, 403);
  const sneaky = await withOrigin('https://trusted.example.evil.com');
  assert.equal(sneaky.kind === 'http' && sneaky.status, 403);
  await assertWorks(await withOrigin('https://trusted.example'));
  await assertWorks(await attempt(cli.url)); // native clients send no Origin
  await cli.stop();

  const strict = await startCli(['--listen', 'ws://127.0.0.1:0']);
  const local = await attempt(strict.url, { origin: 'http://localhost:8080' });
  assert.equal(local.kind === 'http' && local.status, 403, 'even a localhost page is refused by default');
  await strict.stop();
});
