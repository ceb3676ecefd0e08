// Unit tests of the websocket upgrade authenticator: both reference modes, every failure
// class, the constant-time comparison path, and that no secret ever appears in a message.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import fc from 'fast-check';
import { generateKeyPair, SignJWT } from 'jose';
import {
  AuthMessages,
  createAuthenticator,
  createTokenVerifier,
  SecurityConfigError,
  type AuthResult,
  type WsAuthConfig,
} from '../../src/transports/ws-auth';
import { nowSeconds, signJwt, tempDir, unsignedJwt } from '../support/security';

const TOKEN = 'cap-token-0123456789-abcdefghij';
const SECRET = 'hs256-shared-secret-0123456789-ABCDEFGH'; // 39 bytes
const tmp = tempDir();
after(() => tmp.dispose());

/** A minimal upgrade request: the authenticator only reads headers. */
const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

function assertDenied(r: AuthResult, message: string, ...secrets: string[]) {
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.equal(r.status, 401);
  assert.equal(r.message, message);
  for (const s of secrets) assert.ok(!r.message.includes(s), 'failure message must not contain a secret');
}

describe('capability-token from a token file', () => {
  let auth: ReturnType<typeof createAuthenticator>;
  before(() => {
    // A trailing newline (from `echo`) is trimmed, like the reference.
    auth = createAuthenticator({ mode: 'capability-token', tokenFile: tmp.file('token', `${TOKEN}\n`) });
  });

  test('the right token is accepted, with any case of the Bearer scheme', async () => {
    assert.deepEqual(await auth(req(bearer(TOKEN))), { ok: true });
    assert.deepEqual(await auth(req({ authorization: `bearer ${TOKEN}` })), { ok: true });
    assert.deepEqual(await auth(req({ authorization: `BEARER  ${TOKEN}` })), { ok: true });
  });

  test('missing Authorization → 401 missing token', async () => {
    assertDenied(await auth(req({})), AuthMessages.missingToken);
  });

  test('another scheme or an empty bearer → 401 invalid header, token not echoed', async () => {
    assertDenied(await auth(req({ authorization: `Basic ${TOKEN}` })), AuthMessages.invalidHeader, TOKEN);
    assertDenied(await auth(req({ authorization: 'Bearer ' })), AuthMessages.invalidHeader);
    assertDenied(await auth(req({ authorization: TOKEN })), AuthMessages.invalidHeader, TOKEN);
  });

  test('wrong, prefix, suffix and newline-carrying tokens → 401 invalid token, never echoed', async () => {
    for (const wrong of ['wrong', TOKEN.slice(0, -1), `${TOKEN}x`, TOKEN.toUpperCase(), 'x'.repeat(10_000)]) {
      assertDenied(await auth(req(bearer(wrong))), AuthMessages.invalidToken, wrong, TOKEN);
    }
  });
});

describe('capability-token from a SHA-256 digest', () => {
  const digest = crypto.createHash('sha256').update(TOKEN).digest('hex');

  test('accepts the token whose digest was configured (hex in either case)', async () => {
    for (const hex of [digest, digest.toUpperCase()]) {
      const auth = createAuthenticator({ mode: 'capability-token', tokenSha256: hex });
      assert.deepEqual(await auth(req(bearer(TOKEN))), { ok: true });
      assertDenied(await auth(req(bearer('other'))), AuthMessages.invalidToken, 'other');
    }
  });

  test('presenting the digest itself is not the token', async () => {
    const auth = createAuthenticator({ mode: 'capability-token', tokenSha256: digest });
    assertDenied(await auth(req(bearer(digest))), AuthMessages.invalidToken, digest);
  });

  test('a digest that is not 64 hex chars is a configuration error', () => {
    for (const bad of ['abc', digest.slice(1), `${digest}0`, `zz${digest.slice(2)}`]) {
      assert.throws(
        () => createTokenVerifier({ mode: 'capability-token', tokenSha256: bad }),
        (e: unknown) => e instanceof SecurityConfigError && /64-character hex SHA-256 digest/.test(e.message),
      );
    }
  });
});

test('comparison goes through crypto.timingSafeEqual on 32-byte digests, whatever the token length', async () => {
  const auth = createAuthenticator({ mode: 'capability-token', tokenFile: tmp.file('token2', TOKEN) });
  // Patch the real module object (the `import *` namespace is a read-only view of it).
  const mod: { timingSafeEqual: typeof crypto.timingSafeEqual } = require('node:crypto');
  const original = mod.timingSafeEqual;
  const calls: Array<[number, number]> = [];
  mod.timingSafeEqual = (a, b) => {
    calls.push([a.byteLength, b.byteLength]);
    return original(a, b);
  };
  try {
    const inputs = [TOKEN, 'a', 'wrong-but-same-length-as-token!', 'y'.repeat(4096)];
    for (const t of inputs) await auth(req(bearer(t)));
    assert.equal(calls.length, inputs.length, 'every presented token is compared once, in constant time');
    assert.ok(calls.every(([a, b]) => a === 32 && b === 32), `digest lengths: ${JSON.stringify(calls)}`);
  } finally {
    mod.timingSafeEqual = original;
  }
});

describe('capability-token configuration errors', () => {
  const cases: Array<[string, () => WsAuthConfig, RegExp]> = [
    ['no token source', () => ({ mode: 'capability-token' }) as unknown as WsAuthConfig, /is required when `--ws-auth capability-token`/],
    ['missing file', () => ({ mode: 'capability-token', tokenFile: `${tmp.dir}/nope` }), /failed to read websocket auth secret .*nope.*ENOENT/],
    ['empty file', () => ({ mode: 'capability-token', tokenFile: tmp.file('empty', ' \n') }), /must not be empty/],
    [
      'both sources',
      () => ({ mode: 'capability-token', tokenFile: tmp.file('t3', TOKEN), tokenSha256: 'a'.repeat(64) }) as unknown as WsAuthConfig,
      /mutually exclusive/,
    ],
  ];
  for (const [name, cfg, re] of cases) {
    test(name, () => {
      assert.throws(() => createAuthenticator(cfg()), (e: unknown) => e instanceof SecurityConfigError && re.test(e.message));
    });
  }
});

describe('signed-bearer-token (HS256 JWT)', () => {
  let secretFile: string;
  let auth: ReturnType<typeof createAuthenticator>;
  before(() => {
    secretFile = tmp.file('secret', `${SECRET}\n`);
    auth = createAuthenticator({ mode: 'signed-bearer-token', sharedSecretFile: secretFile, issuer: 'iss1', audience: 'aud1' });
  });
  const good = () => ({ exp: nowSeconds() + 60, iss: 'iss1', aud: 'aud1' });

  test('a valid token is accepted (secret file trimmed like the reference)', async () => {
    assert.deepEqual(await auth(req(bearer(await signJwt(SECRET, good())))), { ok: true });
  });

  test('missing header and non-JWT bearer values are rejected', async () => {
    assertDenied(await auth(req({})), AuthMessages.missingToken);
    assertDenied(await auth(req(bearer('abc.def.ghi'))), AuthMessages.invalidJwt, 'abc.def.ghi');
    assertDenied(await auth(req(bearer('not-a-jwt'))), AuthMessages.invalidJwt, 'not-a-jwt');
  });

  test('wrong secret, missing exp → invalid', async () => {
    for (const t of [await signJwt(`${SECRET}x`, good()), await signJwt(SECRET, { iss: 'iss1', aud: 'aud1' })]) {
      assertDenied(await auth(req(bearer(t))), AuthMessages.invalidJwt, t, SECRET);
    }
  });

  test('expired beyond the skew → expired; within the default 30 s skew → accepted', async () => {
    const t = await signJwt(SECRET, { ...good(), exp: nowSeconds() - 120 });
    assertDenied(await auth(req(bearer(t))), AuthMessages.expiredJwt, t, SECRET);
    assert.deepEqual(await auth(req(bearer(await signJwt(SECRET, { ...good(), exp: nowSeconds() - 10 })))), { ok: true });
  });

  test('not yet valid (nbf in the future beyond the skew) → not valid yet', async () => {
    const t = await signJwt(SECRET, { ...good(), exp: nowSeconds() + 600, nbf: nowSeconds() + 300 });
    assertDenied(await auth(req(bearer(t))), AuthMessages.notYetValidJwt, t);
  });

  test('issuer and audience are enforced when configured (mismatch or absent)', async () => {
    const { iss: _i, ...noIss } = good();
    const { aud: _a, ...noAud } = good();
    for (const [claims, msg] of [
      [{ ...good(), iss: 'other' }, AuthMessages.issuerMismatch],
      [noIss, AuthMessages.issuerMismatch],
      [{ ...good(), aud: 'other' }, AuthMessages.audienceMismatch],
      [noAud, AuthMessages.audienceMismatch],
    ] as const) {
      const t = await signJwt(SECRET, claims);
      assertDenied(await auth(req(bearer(t))), msg, t);
    }
  });

  test('algorithms other than HS256 are rejected: HS384, HS512, none, RS256', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const tokens = [
      await signJwt(SECRET, good(), 'HS384'),
      await signJwt(SECRET, good(), 'HS512'),
      unsignedJwt(good()),
      await new SignJWT(good()).setProtectedHeader({ alg: 'RS256' }).sign(privateKey),
    ];
    for (const t of tokens) assertDenied(await auth(req(bearer(t))), AuthMessages.invalidJwt, t);
  });

  test('--ws-max-clock-skew-seconds 0 rejects a token expired 5 s ago', async () => {
    const strict = createAuthenticator({ mode: 'signed-bearer-token', sharedSecretFile: secretFile, maxClockSkewSeconds: 0 });
    const t = await signJwt(SECRET, { exp: nowSeconds() - 5 });
    assertDenied(await strict(req(bearer(t))), AuthMessages.expiredJwt, t);
    assert.deepEqual(await strict(req(bearer(await signJwt(SECRET, { exp: nowSeconds() + 30 })))), { ok: true });
  });

  test('without configured iss/aud, tokens carrying any iss/aud are accepted', async () => {
    const open = createAuthenticator({ mode: 'signed-bearer-token', sharedSecretFile: secretFile });
    assert.deepEqual(await open(req(bearer(await signJwt(SECRET, { exp: nowSeconds() + 60, iss: 'a', aud: 'b' })))), { ok: true });
  });

  test('a shared secret shorter than 32 bytes is a clear configuration error; 32 bytes is enough', async () => {
    const short = tmp.file('short', 'x'.repeat(31));
    assert.throws(
      () => createAuthenticator({ mode: 'signed-bearer-token', sharedSecretFile: short }),
      (e: unknown) => e instanceof SecurityConfigError && /must be at least 32 bytes/.test(e.message) && !e.message.includes('x'.repeat(31)),
    );
    const exact = createAuthenticator({ mode: 'signed-bearer-token', sharedSecretFile: tmp.file('s32', 'y'.repeat(32)) });
    assert.deepEqual(await exact(req(bearer(await signJwt('y'.repeat(32), { exp: nowSeconds() + 60 })))), { ok: true });
  });

  test('missing secret file and negative skew are configuration errors', () => {
    assert.throws(() => createAuthenticator({ mode: 'signed-bearer-token', sharedSecretFile: `${tmp.dir}/none` }), SecurityConfigError);
    assert.throws(
      () => createAuthenticator({ mode: 'signed-bearer-token', sharedSecretFile: secretFile, maxClockSkewSeconds: -1 }),
      /non-negative integer/,
    );
  });
});

test('property: 3 000 random Authorization headers are all refused with a fixed reason (never ok, never echoed)', async () => {
  const auth = createAuthenticator({ mode: 'capability-token', tokenFile: tmp.file('token-prop', TOKEN) });
  const jwtAuth = createAuthenticator({ mode: 'signed-bearer-token', sharedSecretFile: tmp.file('secret-prop', SECRET) });
  const fixed = new Set<string>(Object.values(AuthMessages));
  const header = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 120 }),
    fc.string({ maxLength: 80 }).map((t) => `Bearer ${t}`),
    fc.tuple(fc.base64String({ maxLength: 60 }), fc.base64String({ maxLength: 200 }), fc.base64String({ maxLength: 60 })).map(([a, b, c]) => `bearer ${a}.${b}.${c}`),
  ).filter((h) => !h.includes(TOKEN));
  await fc.assert(
    fc.asyncProperty(header, async (h) => {
      for (const verdict of [await auth(req({ authorization: h })), await jwtAuth(req({ authorization: h }))]) {
        assert.equal(verdict.ok, false);
        if (verdict.ok) return;
        assert.equal(verdict.status, 401);
        assert.ok(fixed.has(verdict.message), `unexpected message ${verdict.message}`);
      }
    }),
    { numRuns: 3_000, seed: 77 },
  );
});
