// The managed proxy's domain policy, pure (src/server/network/policy.ts + decide.ts with an
// injected resolver): the reference's observed matrix (REFERENCE-CAPABILITIES §1.4), wildcards,
// local and private addresses, limited mode, and that a name is resolved once per decision.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decide, type CallbackAnswer, type DecisionHost, type PolicyDecisionParams } from '../../../src/server/network/decide';
import type { ProxyConfig } from '../../../src/server/network/launch-config';
import { isLocalAddress, judgeHost, matchPattern, modeGuard } from '../../../src/server/network/policy';

function cfg(domains: Record<string, 'allow' | 'deny' | 'none'> | null, more: Partial<ProxyConfig> = {}): ProxyConfig {
  return {
    enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full',
    domains: Object.entries(domains ?? {}), unixSockets: [], allowLocalBinding: false, reviewDomains: [], credentialMasking: false, credentialProviders: [], transparentTcp: false, ...more,
  };
}
/** Names as /etc/hosts maps them on the reference's test machine: all loopback. */
const loopback = async (h: string) => [{ address: h.includes(':') ? h : h.match(/^\d/) ? h : '127.0.0.1', family: 4 as const }];

async function reason(c: ProxyConfig, host: string): Promise<string> {
  const events: PolicyDecisionParams[] = [];
  const h: DecisionHost = { processId: 'p', config: c, notify: (e) => events.push(e), resolve: loopback };
  const o = await decide(h, { protocol: 'http', host, port: 18080, method: 'GET', client: '127.0.0.1:1' });
  return o.ok ? 'allow' : o.reason;
}

test('the reference\'s matrix (§1.4): localhost / 127.0.0.1 / runsc (→127.0.0.1) under each domains setting', async () => {
  const rows: [Record<string, 'allow' | 'deny'> | null, Partial<ProxyConfig>, string[]][] = [
    [{ localhost: 'allow' }, {}, ['allow', 'not_allowed_local', 'not_allowed']],
    [{ localhost: 'allow', runsc: 'deny' }, {}, ['allow', 'not_allowed_local', 'denied']],
    [{ runsc: 'allow' }, {}, ['not_allowed_local', 'not_allowed_local', 'not_allowed_local']],
    [{ '127.0.0.1': 'allow' }, {}, ['not_allowed_local', 'allow', 'not_allowed']],
    [{ '*': 'allow' }, {}, ['not_allowed_local', 'not_allowed_local', 'not_allowed_local']],
    [null, {}, ['not_allowed_local', 'not_allowed_local', 'not_allowed']],
    [{ runsc: 'allow' }, { allowLocalBinding: true }, ['not_allowed', 'not_allowed', 'allow']],
  ];
  for (const [domains, more, expected] of rows) {
    const c = cfg(domains, more);
    assert.deepEqual([await reason(c, 'localhost'), await reason(c, '127.0.0.1'), await reason(c, 'runsc')], expected, JSON.stringify([domains, more]));
  }
});

test('patterns: * everything, *.x subdomains only, **.x apex and subdomains, case-insensitive, malformed never match', () => {
  assert.ok(matchPattern('*', 'anything.test'));
  assert.ok(matchPattern('*.example.com', 'a.b.example.com'));
  assert.ok(!matchPattern('*.example.com', 'example.com'));
  assert.ok(matchPattern('**.example.com', 'example.com'));
  assert.ok(matchPattern('**.example.com', 'x.example.com'));
  assert.ok(!matchPattern('**.example.com', 'badexample.com'));
  assert.ok(matchPattern('PyPI.org', 'pypi.org.'));
  assert.ok(!matchPattern('a*b.com', 'axb.com'));
  assert.ok(!matchPattern('example.com', 'example.com.evil.test'));
});

test('deny wins over allow; `none` is no rule; review domains go to the callback even when allowed', () => {
  assert.deepEqual(judgeHost(cfg({ '*.example.com': 'allow', 'bad.example.com': 'deny' }), 'bad.example.com'), { kind: 'deny', reason: 'denied' });
  assert.deepEqual(judgeHost(cfg({ 'x.test': 'none' }), 'x.test'), { kind: 'notAllowed', review: false });
  assert.deepEqual(judgeHost(cfg({ 'x.test': 'allow' }, { reviewDomains: ['x.test'] }), 'x.test'), { kind: 'notAllowed', review: true });
});

test('local and private addresses: loopback, RFC 1918, link-local (metadata), CGNAT, unspecified, ULA, IPv4-mapped, the IPv4 documentation ranges; a public one is not', () => {
  for (const a of ['192.0.2.9', '198.51.100.9', '203.0.113.8', '127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fc00::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254', '[::1]']) {
    assert.ok(isLocalAddress(a), a);
  }
  // 2001:db8::/32 (IPv6 documentation) is public to the reference (measured: not_allowed, not not_allowed_local).
  for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700::1111', '172.32.0.1', '2001:db8::5', '203.0.114.1']) assert.ok(!isLocalAddress(a), a);
});

test('limited mode: GET/HEAD/OPTIONS pass; other methods, CONNECT and SOCKS do not', () => {
  const c = cfg({}, { mode: 'limited' });
  assert.equal(modeGuard(c, 'http', 'GET'), undefined);
  assert.equal(modeGuard(c, 'http', 'head'), undefined);
  assert.equal(modeGuard(c, 'http', 'OPTIONS'), undefined);
  assert.equal(modeGuard(c, 'http', 'POST'), 'method_not_allowed');
  assert.equal(modeGuard(c, 'https_connect', 'CONNECT'), 'mitm_required');
  assert.equal(modeGuard(c, 'socks5_tcp', undefined), 'method_not_allowed');
  assert.equal(modeGuard(cfg({}), 'http', 'POST'), undefined);
});

test('DNS: a name is resolved once per decision and the judged addresses are the ones returned (a later answer cannot win)', async () => {
  let calls = 0;
  const h: DecisionHost = {
    processId: 'p',
    config: cfg({ 'flip.test': 'allow' }),
    notify: () => {},
    // First a public answer (judged), then loopback: the connection must use the first.
    resolve: async () => [{ address: calls++ === 0 ? '8.8.4.4' : '127.0.0.1', family: 4 }],
  };
  const o = await decide(h, { protocol: 'https_connect', host: 'flip.test', port: 443, method: 'CONNECT', client: 'c' });
  assert.deepEqual(o, { ok: true, addresses: [{ address: '8.8.4.4', family: 4 }] });
  assert.equal(calls, 1);
});

test('a decision callback: allow overrides not_allowed (policyOverride) and the local check still applies; deny/ask keep their reason; garbage → not_allowed', async () => {
  const events: PolicyDecisionParams[] = [];
  const mk = (answer: CallbackAnswer, address = '9.9.9.9'): DecisionHost => ({
    processId: 'p', config: cfg({}), notify: (e) => events.push(e), ask: async () => answer, resolve: async () => [{ address, family: 4 }],
  });
  const t = { protocol: 'http' as const, host: 'unknown.test', port: 80, method: 'GET', client: 'c' };
  assert.equal((await decide(mk({ type: 'allow' }), t)).ok, true);
  assert.deepEqual([events.at(-1)!.decision, events.at(-1)!.source, events.at(-1)!.reason, events.at(-1)!.policyOverride], ['allow', 'decider', 'not_allowed', true]);
  const local = await decide(mk({ type: 'allow' }, '127.0.0.1'), t);
  assert.equal(local.ok ? 'allow' : local.reason, 'not_allowed_local');
  const denied = await decide(mk({ type: 'deny', reason: 'user_denied' }), t);
  assert.deepEqual(denied.ok ? undefined : [denied.reason, denied.decision, denied.header, denied.message], ['user_denied', 'deny', 'blocked-by-policy', 'Request blocked by network policy.']);
  const ask = await decide(mk({ type: 'ask', reason: 'needs_review' }), t);
  assert.deepEqual(ask.ok ? undefined : [ask.reason, ask.decision], ['needs_review', 'ask']);
  const garbage = await decide(mk({ type: 'invalid' }), t);
  assert.deepEqual(garbage.ok ? undefined : [garbage.reason, garbage.source, garbage.header, garbage.message], ['not_allowed', 'decider', 'blocked-by-allowlist', 'Domain not in allowlist.']);
});
