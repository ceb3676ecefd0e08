// The masking rules of ./src/server/network/credentials.ts, as measured on the reference (codex
// 0.169 and 0.171; test/interop/credential-masking.test.ts runs them side by side): the
// built-in dummies' shapes, the marker variable, dummies drawn from a custom pattern, the
// destinations a credential may be bound to, and the swap (only `Authorization: Bearer
// <dummy>`, only for a bound destination, never for a look-alike path or another host).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BROKERED_ENV, compilePattern, CredentialBroker, decodeCredentialProviders, dummyFromPattern, maskableArgv, maskEnv,
  parseDestination, patternMatches, UnsupportedPattern,
} from '../../../src/server/network/credentials';
import { RpcError } from '../../../src/protocol/errors';

const GH = `ghp_${'a'.repeat(36)}`;
const OPENAI = `sk-proj-${'b'.repeat(20)}`;

test('built-in sources: prefix kept, `masked`, a random tail, at least 40 (GitHub) / 51 (OpenAI) characters; others untouched', () => {
  const env = { GITHUB_TOKEN: GH, GH_TOKEN: 'ghp_short', OPENAI_API_KEY: OPENAI, ANTHROPIC_API_KEY: 'sk-ant-ccc', AWS_SECRET_ACCESS_KEY: 'x', GITHUB_ENTERPRISE_TOKEN: GH };
  const m = maskEnv(env, []);
  assert.match(m.env.GITHUB_TOKEN, /^ghp_masked[A-Za-z0-9]{30}$/);
  assert.match(m.env.GH_TOKEN, /^ghp_masked[A-Za-z0-9]{30}$/);
  assert.match(m.env.OPENAI_API_KEY, /^sk-proj-masked[A-Za-z0-9]{37}$/);
  assert.equal(m.env.ANTHROPIC_API_KEY, 'sk-ant-ccc');
  assert.equal(m.env.AWS_SECRET_ACCESS_KEY, 'x');
  // No GH_HOST: an enterprise token has no destination and stays as it is (the reference's rule).
  assert.equal(m.env.GITHUB_ENTERPRISE_TOKEN, GH);
  assert.equal(env.GITHUB_TOKEN, GH, 'the input is not changed');
  assert.notEqual(maskEnv(env, []).env.GITHUB_TOKEN, m.env.GITHUB_TOKEN, 'a fresh tail per start');
  const long = `github_pat_${'Z'.repeat(60)}`;
  assert.match(maskEnv({ GH_TOKEN: long }, []).env.GH_TOKEN, /^github_pat_masked[A-Za-z0-9]{54}$/);
  assert.equal(m.env.CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE, '1');
  const marker = JSON.parse(m.env[BROKERED_ENV]) as [string, string][];
  assert.deepEqual(marker.map(([k]) => k), ['@alias:GH_TOKEN', '@alias:GITHUB_TOKEN', '@alias:OPENAI_API_KEY', 'GH_TOKEN', 'GITHUB_TOKEN', 'OPENAI_API_KEY']);
  for (const [k, v] of marker) assert.equal(v, m.env[k.replace('@alias:', '')]);
});

test('an enterprise token is bound to GH_HOST (not a github.com host)', () => {
  const m = maskEnv({ GH_ENTERPRISE_TOKEN: GH, GH_HOST: 'Git.Corp.Example' }, []);
  assert.match(m.env.GH_ENTERPRISE_TOKEN, /^ghp_masked/);
  const b = new CredentialBroker(m.credentials);
  const auth = [['Authorization', `Bearer ${m.env.GH_ENTERPRISE_TOKEN}`]] as [string, string][];
  assert.deepEqual(b.swap(auth, 'https', 'git.corp.example', 443, '/api/v3'), [['Authorization', `Bearer ${GH}`]]);
  assert.equal(maskEnv({ GH_ENTERPRISE_TOKEN: GH, GH_HOST: 'github.com' }, []).env.GH_ENTERPRISE_TOKEN, GH);
});

test('a custom pattern gives a dummy of the same shape and length; unsupported syntax is refused, never guessed', () => {
  const atoms = compilePattern('custom-[a-z]{20}');
  const d = dummyFromPattern(atoms, `custom-${'e'.repeat(20)}`)!;
  assert.match(d, /^custom-[a-z]{20}$/);
  assert.notEqual(d, `custom-${'e'.repeat(20)}`);
  for (const [pat, value, shape] of [
    ['^tok_\\d{4}-[A-Fa-f0-9]+$', 'tok_1234-abcDEF99', /^tok_\d{4}-[A-Fa-f0-9]{8}$/],
    ['x\\.[\\w]{3,8}\\-?z', 'x.ab_cd-z', /^x\.[\w]{5}-z$/],
    ['k.{10}', 'kQQQQQQQQQQ', /^k.{10}$/],
  ] as const) {
    const a = compilePattern(pat);
    const dd = dummyFromPattern(a, value)!;
    assert.match(dd, shape, pat);
    assert.equal(dd.length, value.length);
    assert.ok(patternMatches(a, dd), `${pat} accepts its dummy ${dd}`);
  }
  assert.equal(dummyFromPattern(atoms, 'custom-short'), undefined, 'a value the pattern does not match is not masked');
  for (const bad of ['[^a]x', '\\bx', 'a+?', '(?i)x', 'x\\Dy', '(?=a)b', '(?<!a)b', '(a', 'a)b', '(a)\\1', '((((((((((a))))))))))', 'a(^b)', '(a$)b', '(a)+?']) {
    assert.throws(() => compilePattern(bad), UnsupportedPattern, bad);
  }
});

test('groups and alternation: the dummy follows the branch the secret matched, keeps its literals, and the pattern accepts it', () => {
  const alnum36 = 'aB3dE5fG7hI9jK1lM2nO4pQ6rS8tU0vW1xY2';
  for (const [pat, value, shape] of [
    ['(ghp|gho)_[A-Za-z0-9]{36}', `gho_${alnum36}`, /^gho_[A-Za-z0-9]{36}$/],
    ['sk-(proj-)?[A-Za-z0-9]{20}', `sk-proj-${alnum36.slice(0, 20)}`, /^sk-proj-[A-Za-z0-9]{20}$/],
    ['sk-(proj-)?[A-Za-z0-9]{20}', `sk-${alnum36.slice(0, 20)}`, /^sk-[A-Za-z0-9]{20}$/],
    ['^(?:[a-f0-9]{8}-){3}[a-f0-9]{8}$', '0123abcd-4567ef01-89abcdef-01234567', /^(?:[a-f0-9]{8}-){3}[a-f0-9]{8}$/],
    ['(?P<kind>key|tok)_\\d+|legacy-[A-Z]{5}', 'tok_998877', /^tok_\d{6}$/],
    ['(?P<kind>key|tok)_\\d+|legacy-[A-Z]{5}', 'legacy-QWERT', /^legacy-[A-Z]{5}$/],
    ['(?<v>v[0-9])\\.([a-z]{4}|[0-9]{6})', 'v1.123456', /^v[0-9]\.[0-9]{6}$/],
  ] as const) {
    const a = compilePattern(pat);
    const d = dummyFromPattern(a, value);
    assert.ok(d !== undefined, `${pat}: ${value} gets a dummy`);
    assert.match(d, shape, pat);
    assert.equal(d.length, value.length);
    assert.notEqual(d, value);
    assert.ok(patternMatches(a, d), `${pat} accepts its dummy ${d}`);
  }
  const g = compilePattern('(ghp|gho)_[A-Za-z0-9]{36}');
  assert.equal(dummyFromPattern(g, `ghx_${alnum36}`), undefined, 'no branch matches: not masked');
  // An empty repetition is allowed while the group still owes repetitions, never as a loop.
  assert.ok(patternMatches(compilePattern('(a?){3}b'), 'b'));
  assert.ok(!patternMatches(compilePattern('(a?){3}b'), 'aaaab'));
  // A pattern that backtracks exponentially gives up (bounded steps): the value stays unmasked, quickly.
  const t0 = Date.now();
  assert.equal(dummyFromPattern(compilePattern('(a*)*b'), `${'a'.repeat(40)}c`), undefined);
  assert.ok(Date.now() - t0 < 2000, 'bounded');
});

test('custom providers: snake_case keys with the reference\'s unknown-field text; no patterns → skipped with its warning; bad destination → skipped', () => {
  assert.throws(() => decodeCredentialProviders({ c: { urlPrefixes: [] } }), (e: RpcError) => e.code === -32602 && e.message === 'unknown field `urlPrefixes`, expected one of `env`, `patterns`, `url_prefixes`, `url_prefix_from_env`, `auth`, `header`, `prefix`');
  const providers = decodeCredentialProviders({
    nopat: { env: ['A'], url_prefixes: ['https://x.example/'] },
    http: { env: ['B'], patterns: ['b-[a-z]{8}'], url_prefixes: ['http://runsc:80/'] },
    ok: { env: ['C'], patterns: ['c-[a-z]{8}'], url_prefixes: ['http://localhost:8080/api'], auth: [] },
  });
  const m = maskEnv({ A: 'a-aaaaaaaa', B: 'b-bbbbbbbb', C: 'c-cccccccc' }, providers);
  assert.deepEqual(m.warnings, [
    'ignoring invalid credential provider provider=nopat error=credential provider `nopat` has no credential patterns',
    'ignoring invalid credential provider provider=http error=invalid destination for credential provider `http`',
  ]);
  assert.equal(m.env.A, 'a-aaaaaaaa');
  assert.equal(m.env.B, 'b-bbbbbbbb');
  assert.match(m.env.C, /^c-[a-z]{8}$/);
  assert.notEqual(m.env.C, 'c-cccccccc');
  assert.ok(decodeCredentialProviders({ h: { env: [], patterns: ['x'], header: 'X-Api-Key' } })[0].unsupported);
});

test('provider auth forms as the reference reads them: names, defaults, and the combinations it ignores (refused here)', () => {
  const forms = (p: Record<string, unknown>) => decodeCredentialProviders({ p: { env: ['T'], patterns: ['t[a-z]{4}'], url_prefixes: ['https://x.example/'], ...p } })[0];
  assert.deepEqual(forms({}).forms, [{ kind: 'bearer' }]);
  assert.deepEqual(forms({ auth: [] }).forms, [{ kind: 'bearer' }]);
  assert.deepEqual(forms({ auth: ['bearer', 'token', 'token'] }).forms, [{ kind: 'bearer' }, { kind: 'token' }]);
  assert.deepEqual(forms({ auth: ['header'], header: 'X-Api-Key' }).forms, [{ kind: 'header', header: 'X-Api-Key', prefix: '' }]);
  assert.deepEqual(forms({ auth: ['basic', 'header'], header: 'x-other', prefix: 'K ' }).forms, [{ kind: 'basic' }, { kind: 'header', header: 'x-other', prefix: 'K ' }]);
  // The reference's messages (0.171): an unknown name fails the start; the rest make it ignore the provider.
  assert.throws(() => forms({ auth: ['x'] }), (e: RpcError) => e.code === -32602 && e.message === 'unknown variant `x`, expected one of `bearer`, `token`, `basic`, `header`');
  assert.equal(forms({ auth: ['header'] }).unsupported, 'credential provider `p` requires a header name exactly when using header authentication');
  assert.equal(forms({ header: 'X-Api-Key', prefix: '' }).unsupported, 'credential provider `p` requires a header name exactly when using header authentication');
  assert.equal(forms({ prefix: 'Token ' }).unsupported, 'credential provider `p` requires header authentication to use a header prefix');
  // serde's map spelling of a name is the same name (`{"bearer": null}`, `{"bearer": {}}`); other shapes fail with its texts (0.171, measured; the wire forms of numbers and booleans
  // in test/interop/managed-network-params).
  assert.deepEqual(forms({ auth: [{ bearer: null }, { token: {} }, 'basic'] }).forms, [{ kind: 'bearer' }, { kind: 'token' }, { kind: 'basic' }]);
  assert.deepEqual(forms({ auth: [{ header: null }], header: 'X-Api-Key' }).forms, [{ kind: 'header', header: 'X-Api-Key', prefix: '' }]);
  for (const [entry, message] of [
    [{ header: 'x', prefix: 'K ' }, 'invalid value: map, expected map with a single key'],
    [{}, 'invalid value: map, expected map with a single key'],
    [{ bogus: null }, 'unknown variant `bogus`, expected one of `bearer`, `token`, `basic`, `header`'],
    [{ bearer: 'x' }, 'invalid type: string "x", expected unit'],
    [{ bearer: [] }, 'invalid type: sequence, expected unit'],
    [null, 'invalid type: null, expected string or map'],
    [['bearer'], 'invalid type: sequence, expected string or map'],
  ] as [unknown, string][]) {
    assert.throws(() => forms({ auth: [entry] }), (e: RpcError) => e.code === -32602 && e.message === message, JSON.stringify(entry));
  }
});

test('the swap in each form: Token, Basic (the password), a header of its own with its prefix; a form the credential lacks keeps the dummy', () => {
  const providers = decodeCredentialProviders({
    tok: { env: ['TK'], patterns: ['tk-[a-z]{8}'], url_prefixes: ['https://api.example.com/'], auth: ['token'] },
    bas: { env: ['BA'], patterns: ['ba-[a-z]{8}'], url_prefixes: ['https://api.example.com/'], auth: ['basic'] },
    hdr: { env: ['HD'], patterns: ['hd-[a-z]{8}'], url_prefixes: ['https://api.example.com/'], auth: ['header'], header: 'X-Api-Key', prefix: 'K ' },
  });
  const m = maskEnv({ TK: 'tk-tttttttt', BA: 'ba-bbbbbbbb', HD: 'hd-hhhhhhhh' }, providers);
  const b = new CredentialBroker(m.credentials);
  const swap = (h: [string, string][], host = 'api.example.com') => b.swap(h, 'https', host, 443, '/v1');
  const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  assert.deepEqual(swap([['Authorization', `Token ${m.env.TK}`]]), [['Authorization', 'Token tk-tttttttt']]);
  assert.deepEqual(swap([['Authorization', basic('me', m.env.BA)]]), [['Authorization', basic('me', 'ba-bbbbbbbb')]]);
  assert.deepEqual(swap([['x-api-key', `K ${m.env.HD}`]]), [['x-api-key', 'K hd-hhhhhhhh']]);
  const kept = (why: string, h: [string, string][], host?: string) => assert.deepEqual(swap(h, host), h, why);
  kept('Bearer for a Token-only credential', [['Authorization', `Bearer ${m.env.TK}`]]);
  kept('Token for a Basic-only credential', [['Authorization', `Token ${m.env.BA}`]]);
  kept('the dummy as the Basic user name', [['Authorization', basic(m.env.BA, 'x')]]);
  kept('the header form without its prefix', [['X-Api-Key', m.env.HD]]);
  kept('the header form in another header', [['X-Other', `K ${m.env.HD}`]]);
  kept('two of its headers', [['X-Api-Key', `K ${m.env.HD}`], ['x-api-key', `K ${m.env.HD}`]]);
  kept('the header form to another host', [['X-Api-Key', `K ${m.env.HD}`]], 'evil.example.com');
  kept('Authorization for a header-only credential', [['Authorization', `Bearer ${m.env.HD}`]]);
});

test('destinations: HTTPS anywhere, HTTP only to loopback, scoped wildcards, no userinfo/query/fragment', () => {
  assert.deepEqual(parseDestination('https://API.example.com/v1/'), { scheme: 'https', host: 'api.example.com', wildcard: false, port: 443, pathPrefix: '/v1/' });
  assert.deepEqual(parseDestination('localhost:8080'), { scheme: 'http', host: 'localhost', wildcard: false, port: 8080, pathPrefix: '/' });
  assert.deepEqual(parseDestination('*.example.com'), { scheme: 'https', host: 'example.com', wildcard: true, port: 443, pathPrefix: '/' });
  for (const bad of ['http://example.com/', 'ftp://localhost/', 'https://u:p@x.com/', 'https://x.com/?q', 'https://x.com/#f', 'https://a*b.com/']) assert.equal(parseDestination(bad), undefined, bad);
});

test('the swap: only `Authorization: Bearer <dummy>` to a bound scheme, host, port and path prefix; anything else keeps the dummy', () => {
  const providers = decodeCredentialProviders({ c: { env: ['C'], patterns: ['c-[a-z]{8}'], url_prefixes: ['https://api.example.com/v1'] } });
  const m = maskEnv({ C: 'c-cccccccc', GITHUB_TOKEN: GH }, providers);
  const b = new CredentialBroker(m.credentials);
  const bearer = (v: string) => [['Host', 'api.example.com'], ['Authorization', `Bearer ${v}`]] as [string, string][];
  const real = bearer('c-cccccccc');
  assert.deepEqual(b.swap(bearer(m.env.C), 'https', 'api.example.com', 443, '/v1'), real);
  assert.deepEqual(b.swap(bearer(m.env.C), 'https', 'API.example.com', 443, '/v1/models'), real);
  const kept = (why: string, h: [string, string][], scheme: 'http' | 'https', host: string, port: number, path: string) => assert.deepEqual(b.swap(h, scheme, host, port, path), h, why);
  kept('another host', bearer(m.env.C), 'https', 'evil.example.com', 443, '/v1');
  kept('a suffix look-alike', bearer(m.env.C), 'https', 'api.example.com.evil', 443, '/v1');
  kept('another port', bearer(m.env.C), 'https', 'api.example.com', 8443, '/v1');
  kept('plain HTTP', bearer(m.env.C), 'http', 'api.example.com', 443, '/v1');
  kept('a path beside the prefix', bearer(m.env.C), 'https', 'api.example.com', 443, '/v10');
  kept('a dot segment out of the prefix', bearer(m.env.C), 'https', 'api.example.com', 443, '/v1/../admin');
  kept('an encoded slash', bearer(m.env.C), 'https', 'api.example.com', 443, '/v1%2f..%2fadmin');
  kept('another credential\'s destination (GitHub dummy to this host)', bearer(m.env.GITHUB_TOKEN), 'https', 'api.example.com', 443, '/v1');
  kept('not Bearer', [['Authorization', `token ${m.env.C}`]], 'https', 'api.example.com', 443, '/v1');
  kept('two Authorization headers', [['Authorization', `Bearer ${m.env.C}`], ['authorization', `Bearer ${m.env.C}`]], 'https', 'api.example.com', 443, '/v1');
  kept('another header', [['X-Token', m.env.C]], 'https', 'api.example.com', 443, '/v1');
  assert.deepEqual(b.swap(bearer(m.env.GITHUB_TOKEN), 'https', 'api.github.com', 443, '/user'), bearer(GH));
  assert.deepEqual(b.swap(bearer(m.env.GITHUB_TOKEN), 'https', 'x.ghe.com', 443, '/'), bearer(GH));
  kept('ghe.com itself is not *.ghe.com', bearer(m.env.GITHUB_TOKEN), 'https', 'ghe.com', 443, '/');
});

test('only a non-login shell command is masked (the reference\'s rule)', () => {
  assert.ok(maskableArgv(['/bin/bash', '-c', 'x']));
  assert.ok(maskableArgv(['sh', '-c', 'x']));
  for (const a of [['/bin/bash', '-lc', 'x'], ['/bin/bash', '-l', '-c', 'x'], ['/usr/bin/env'], ['/bin/bash', '-c'], ['python3', '-c', 'x']]) assert.ok(!maskableArgv(a), a.join(' '));
});
