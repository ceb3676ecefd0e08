// Wire compatibility of authentication: the same flags and the same bad credentials give the
// same HTTP status and reason from our CLI and from the reference `codex exec-server`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ensureBuilt, attempt, stopAll, type Attempt } from '../support/cli-servers';
import { nowSeconds, signJwt, tempDir } from '../support/security';
import { ourServer, referenceServer, startWsServer } from '../support/reference';

const TOKEN = 'parity-token-0123456789abcdef';
const SECRET = 'parity-shared-secret-0123456789abcdefgh';
const tmp = tempDir();
before(() => ensureBuilt());
after(async () => {
  await stopAll();
  tmp.dispose();
});

/** Starts a server (ours or the reference) and returns its ws URL (stopped by stopAll after the file). */
async function start(which: 'ours' | 'reference', args: string[]): Promise<string> {
  const s = await startWsServer(which === 'ours' ? ourServer : referenceServer, args, 60_000);
  return s.url;
}

const show = (a: Attempt) => (a.kind === 'http' ? `${a.status} ${a.body}` : a.kind === 'open' ? (a.ws.close(), 'open') : `error`);

test('capability-token: ours and the reference answer the same status and reason', async () => {
  const args = ['--ws-auth', 'capability-token', '--ws-token-file', tmp.file('token', `${TOKEN}\n`)];
  const [ours, ref] = await Promise.all([start('ours', args), start('reference', args)]);
  const cases: Array<Record<string, string>> = [
    {},
    { Authorization: 'Bearer wrong' },
    { Authorization: `Basic ${TOKEN}` },
    { Authorization: `bearer ${TOKEN}` },
    { Authorization: `Bearer ${TOKEN}` },
  ];
  for (const headers of cases) {
    const [a, b] = [show(await attempt(ours, { headers })), show(await attempt(ref, { headers }))];
    assert.equal(a, b, `headers ${JSON.stringify(headers)}`);
  }
});

test('signed-bearer-token: ours and the reference agree on valid, expired, early, wrong-issuer/audience and HS512 tokens', async () => {
  const args = ['--ws-auth', 'signed-bearer-token', '--ws-shared-secret-file', tmp.file('secret', SECRET), '--ws-issuer', 'iss1', '--ws-audience', 'aud1'];
  const [ours, ref] = await Promise.all([start('ours', args), start('reference', args)]);
  const good = { exp: nowSeconds() + 300, iss: 'iss1', aud: 'aud1' };
  const tokens = [
    await signJwt(SECRET, good),
    await signJwt(SECRET, { ...good, exp: nowSeconds() - 600 }),
    await signJwt(SECRET, { ...good, nbf: nowSeconds() + 600 }),
    await signJwt(SECRET, { ...good, iss: 'other' }),
    await signJwt(SECRET, { ...good, aud: 'other' }),
    await signJwt(SECRET, { iss: 'iss1', aud: 'aud1' }),
    await signJwt(SECRET, good, 'HS512'),
    await signJwt(`${SECRET}x`, good),
  ];
  for (const t of tokens) {
    const headers = { Authorization: `Bearer ${t}` };
    const [a, b] = [show(await attempt(ours, { headers })), show(await attempt(ref, { headers }))];
    assert.equal(a, b, `claims ${Buffer.from(t.split('.')[1], 'base64url').toString()}`);
  }
});

test('a browser Origin is refused with 403 by both', async () => {
  const [ours, ref] = await Promise.all([start('ours', []), start('reference', [])]);
  for (const url of [ours, ref]) {
    const a = await attempt(url, { origin: 'http://evil.example' });
    assert.equal(a.kind === 'http' && a.status, 403, url);
  }
});
