// Credential masking (credentialMasking + credentialProviders, REFERENCE §5.1) side by side: our
// CLI and every reference version, each over its websocket, the same proxied starts. The
// origins are loopback listeners: plain HTTP, and HTTPS with a certificate of a test CA that
// each server trusts for upstream TLS only through its own environment (the reference:
// SSL_CERT_FILE; ours: EXEC_SERVER_TEST_UPSTREAM_CA). Only `localhost` and `127.0.0.1` are
// used (/etc/hosts), never real DNS. Compared field by field, on what the child and the
// origins observe: the shape of every dummy and which variables are masked, the marker
// variable, the CA bundle variables, which requests reached an origin with the real value and
// which with the dummy, what a login shell and a direct binary get, and the two log lines.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../src/protocol/codex-sandbox';
import { ProcessCa } from '../../src/server/network/mitm-ca';
import { RawRpcClient } from '../support/raw-rpc';
import { removeTempDir, tempDir } from '../support/tmp';
import { ourServer, referenceServers, startWsServer, type ServerCommand } from '../support/reference';
import { startTestOrigins, type TestOrigins } from '../support/test-origins';

let origins: TestOrigins;
let port: number;
let tport: number;
let dir: string;
let caFile: string;
const seen: string[] = [];

before(async () => {
  // Not below /tmp: the reference's sandbox gives the command a private /tmp.
  dir = tempDir('es-cm-interop-', { parent: path.join(process.cwd(), 'out') });
  const testCa = await ProcessCa.create(path.join(dir, 'test-ca'));
  caFile = path.join(dir, 'test-ca.pem');
  fs.writeFileSync(caFile, testCa.certPem);
  const record = (req: http.IncomingMessage, res: http.ServerResponse) => {
    // Basic credentials decoded (user:password), and the header of the `header` form when sent.
    const a = req.headers.authorization ?? '-';
    const auth = a.startsWith('Basic ') ? `Basic ${Buffer.from(a.slice(6), 'base64').toString()}` : a;
    const key = req.headers['x-api-key'] === undefined ? '' : ` x-api-key ${req.headers['x-api-key']}`;
    seen.push(`${req.socket.localPort === tport ? 'https' : 'http'} ${req.headers.host?.replace(/:\d+$/, '')} ${req.url} ${auth}${key}`);
    res.end('ok\n');
  };
  origins = await startTestOrigins(testCa, record);
  ({ port, tport } = origins);
});
after(async () => {
  await origins.close();
  removeTempDir(dir);
});

const REAL: Record<string, string> = {
  GITHUB_TOKEN: `ghp_${'a'.repeat(36)}`,
  GH_TOKEN: 'ghp_short',
  OPENAI_API_KEY: `sk-proj-${'b'.repeat(20)}`,
  ANTHROPIC_API_KEY: 'sk-ant-ccc',
  AWS_SECRET_ACCESS_KEY: 'd'.repeat(40),
  GH_ENTERPRISE_TOKEN: `ghp_${'f'.repeat(36)}`,
  MY_CUSTOM_TOKEN: `custom-${'e'.repeat(20)}`,
  HT_TOKEN: `ht_${'g'.repeat(16)}`,
  NP_TOKEN: 'np-value',
  HK_TOKEN: 'hk-abcdefghijkl',
  TK_TOKEN: 'tk-abcdefghijkl',
  BA_TOKEN: 'ba-abcdefghijkl',
  GR_TOKEN: 'grtest_abcdefghijkl',
};
const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: false, domains: { localhost: 'allow', '127.0.0.1': 'allow' } };
const providers = () => ({
  custom: { env: ['MY_CUSTOM_TOKEN'], patterns: ['custom-[a-z]{20}'], url_prefixes: [`https://localhost:${tport}/`], auth: [] },
  ht: { env: ['HT_TOKEN'], patterns: ['ht_[a-z]{16}'], url_prefixes: [`http://localhost:${port}/api/`] },
  nopat: { env: ['NP_TOKEN'], url_prefixes: [`http://localhost:${port}/`] },
  // The `auth` forms: a header of its own, Token besides Bearer, Basic.
  hk: { env: ['HK_TOKEN'], patterns: ['hk-[a-z]{12}'], url_prefixes: [`http://localhost:${port}/api/`], auth: ['header'], header: 'x-api-key', prefix: '' },
  tk: { env: ['TK_TOKEN'], patterns: ['tk-[a-z]{12}'], url_prefixes: [`http://localhost:${port}/api/`], auth: ['bearer', 'token'] },
  ba: { env: ['BA_TOKEN'], patterns: ['ba-[a-z]{12}'], url_prefixes: [`http://localhost:${port}/api/`], auth: ['basic'] },
  // A group with alternation in the pattern.
  gr: { env: ['GR_TOKEN'], patterns: ['gr(live|test)_[a-z]{12}'], url_prefixes: [`http://localhost:${port}/api/`] },
});

/** A value as the comparison sees it: real, or the dummy's kept prefix, length and alphabet. */
function shape(name: string, v: string | undefined): string {
  if (v === undefined) return 'unset';
  if (v === REAL[name]) return 'real';
  const m = /^(.*?masked|custom-|ht_)(.*)$/.exec(v);
  const [prefix, tail] = m ? [m[1], m[2]] : ['', v];
  return `${prefix}+${tail.length} ${/^[a-z]+$/.test(tail) ? 'lower' : /^[A-Za-z0-9]+$/.test(tail) ? 'alnum' : 'other'}`;
}

interface Outcome {
  shapes: Record<string, string>;
  marker: string[];
  brokerActive: string;
  caKeys: string[];
  bundle: string;
  requests: string[];
  login: Record<string, string>;
  direct: Record<string, string>;
  logs: string[];
  flags: string;
  output: string[];
  /** What the script printed (curl's errors among it): for the message when a request is missing. */
  transcript: string;
}

const envOf = (text: string) => Object.fromEntries(text.split('\n').filter((l) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

async function outcome(server: ServerCommand, tag: string): Promise<Outcome> {
  const W = path.join(dir, tag);
  fs.mkdirSync(W, { recursive: true });
  const trust = server.version === undefined ? { EXEC_SERVER_TEST_UPSTREAM_CA: caFile } : { SSL_CERT_FILE: caFile, RUST_LOG: 'warn' };
  const srv = await startWsServer({ ...server, env: () => ({ ...server.env(), ...trust }) });
  const c = await RawRpcClient.open(srv.url);
  try {
    const sandbox = managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: `file://${W}`, network: 'enabled' });
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: W, LANG: 'C', ...REAL };
    const start = async (id: string, argv: string[]) => {
      await c.call('process/start', { processId: id, argv, cwd: `file://${W}`, env, tty: false, sandbox, enforceManagedNetwork: true, networkProxy: { proxy: { ...PROXY, credentialMasking: true, credentialProviders: providers() } } });
      await c.closedProcess(id);
      return Buffer.concat(c.frames.filter((f) => f.method === 'process/output' && f.params.processId === id).map((f) => Buffer.from(f.params.chunk, 'base64'))).toString();
    };
    seen.length = 0;
    const script = [
      `env > ${W}/env.txt`,
      `stat -c %a "$SSL_CERT_FILE"; grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE"`,
      `curl -sS https://localhost:${tport}/cred -H "Authorization: Bearer $MY_CUSTOM_TOKEN"`,
      `curl -sS https://localhost:${tport}/gh -H "Authorization: Bearer $GITHUB_TOKEN"`,
      `curl -sS http://localhost:${port}/api/x -H "Authorization: Bearer $HT_TOKEN"`,
      `curl -sS http://localhost:${port}/other -H "Authorization: Bearer $HT_TOKEN"`,
      `curl -sS http://127.0.0.1:${port}/api/x -H "Authorization: Bearer $HT_TOKEN"`,
      `curl -sS http://localhost:${port}/api/t -H "Authorization: token $HT_TOKEN"`,
      `curl -sS http://localhost:${port}/api/c -H "Authorization: Bearer $MY_CUSTOM_TOKEN"`,
      `curl -sS http://localhost:${port}/api/k -H "x-api-key: $HK_TOKEN"`,
      `curl -sS http://localhost:${port}/api/kb -H "Authorization: Bearer $HK_TOKEN"`,
      `curl -sS http://localhost:${port}/api/t -H "Authorization: Token $TK_TOKEN"`,
      `curl -sS http://localhost:${port}/api/tb -H "Authorization: Bearer $TK_TOKEN"`,
      `curl -sS -u "user:$BA_TOKEN" http://localhost:${port}/api/b`,
      `curl -sS http://localhost:${port}/api/bt -H "Authorization: Token $BA_TOKEN"`,
      `curl -sS http://localhost:${port}/api/g -H "Authorization: Bearer $GR_TOKEN"`,
    ].join('\n');
    const out = await start('m1', ['/bin/bash', '-c', script]);
    const childEnv = envOf(fs.readFileSync(path.join(W, 'env.txt'), 'utf8'));
    const requests = [...seen];
    const dummies = Object.fromEntries(Object.keys(REAL).map((k) => [childEnv[k], k]));
    // Each value an origin received, named: the real value of X or the dummy of X.
    const named = (s: string) => s.replace(/(Bearer |token |Token |Basic user:|x-api-key )(\S+)/g, (_all, form: string, v: string) => {
      const kind = Object.entries(REAL).find(([, r]) => r === v)?.[0];
      return `${form}${kind ? `real ${kind}` : dummies[v] ? `dummy ${dummies[v]}` : v}`;
    });
    const bundle = childEnv.SSL_CERT_FILE ?? '';
    const caKeys = Object.keys(childEnv).filter((k) => childEnv[k] === bundle).sort();
    const lines = out.trim().split('\n');
    const login = envOf(await start('m2', ['/bin/bash', '-lc', 'env']));
    const direct = envOf(await start('m3', ['/usr/bin/env']));
    // A real value the child reads from a file and prints, in one write and split in two: output
    // is not masked (measured on both references).
    fs.writeFileSync(path.join(W, 'secret.txt'), `${REAL.GITHUB_TOKEN}\n`);
    await start('m4', ['/bin/bash', '-c', `cat ${W}/secret.txt; printf '%s' "$(head -c 10 ${W}/secret.txt)"; sleep 0.3; tail -c +11 ${W}/secret.txt`]);
    // Compared as printed lines: how the writes fall into output chunks is the pipe's timing
    // (cat's line and the first half of the split one may come in one read).
    const printed = Buffer.concat(c.frames.filter((f) => f.method === 'process/output' && f.params.processId === 'm4').map((f) => Buffer.from(f.params.chunk, 'base64'))).toString();
    const output = printed.split('\n').filter(Boolean).map((line) => shape('GITHUB_TOKEN', line));
    const pick = (e: Record<string, string>) => ({
      ...Object.fromEntries(Object.keys(REAL).map((k) => [k, shape(k, e[k])])),
      caKeys: Object.keys(e).filter((k) => e[k] === e.SSL_CERT_FILE).sort().join(' '),
      marker: e.CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS ?? 'unset',
      active: e.CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE ?? 'unset',
    });
    const stderr = srv.stderr();
    const caps = c.frames.find((f) => f.result?.environmentInfo)?.result.environmentInfo.capabilities ?? {};
    return {
      output,
      flags: `credentialMasking ${caps.credentialMasking} credentialMaskingCustomProviders ${caps.credentialMaskingCustomProviders}`,
      shapes: Object.fromEntries(Object.keys(REAL).map((k) => [k, shape(k, childEnv[k])])),
      marker: (JSON.parse(childEnv.CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS) as [string, string][]).map(([k, v]) => `${k} ${v === childEnv[k.replace('@alias:', '')] ? 'same' : 'differs'}`),
      brokerActive: childEnv.CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE,
      caKeys,
      // The reference's bundle also carries the roots of its own SSL_CERT_FILE (here: the test
      // CA, how it is told to trust the test origin), one more than ours, which is not told so.
      bundle: `${/\/proxy\/ca-bundle-[0-9a-f]{64}\.pem$/.test(bundle)} mode ${lines[0]} certs ${Number(lines[1]) - (server.version === undefined ? 0 : 1) - (fs.readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8').match(/BEGIN CERTIFICATE/g) ?? []).length} more than the system's`,
      requests: requests.map(named),
      transcript: out.slice(0, 4000),
      login: pick(login) as unknown as Record<string, string>,
      direct: pick(direct) as unknown as Record<string, string>,
      logs: [
        'Credential masking is unavailable for this shell startup; preserving shell profiles and snapshots and running with unmasked credentials.',
        'credential provider `nopat` has no credential patterns',
      ].map((t) => `${t}: ${stderr.includes(t)}`),
    };
  } finally {
    await c.close();
    await srv.stop();
  }
}

test('credential masking: our CLI masks, binds and swaps as every reference version does', async () => {
  const ours = await outcome(ourServer, 'ours');
  for (const ref of referenceServers()) {
    const theirs = await outcome(ref, `ref-${ref.version}`);
    console.log(ref.name, 'bundle variables', theirs.caKeys.join(' '));
    assert.deepEqual(ours.shapes, theirs.shapes, `dummies vs ${ref.name}`);
    assert.deepEqual(ours.marker, theirs.marker, `marker vs ${ref.name}`);
    assert.equal(ours.brokerActive, theirs.brokerActive, `broker-active vs ${ref.name}`);
    // 0.171 points two more variables at the bundle than 0.169; ours sets 0.171's list.
    for (const k of theirs.caKeys) assert.ok(ours.caKeys.includes(k), `${k} (${ref.name}) points at our bundle too`);
    assert.equal(ours.bundle, theirs.bundle, `bundle vs ${ref.name}`);
    assert.deepEqual(ours.requests, theirs.requests, `what the origins received vs ${ref.name} (ours printed: ${JSON.stringify(ours.transcript)})`);
    assert.deepEqual({ ...ours.login, caKeys: '' }, { ...theirs.login, caKeys: '' }, `login shell vs ${ref.name}`);
    assert.deepEqual({ ...ours.direct, caKeys: '' }, { ...theirs.direct, caKeys: '' }, `direct binary vs ${ref.name}`);
    assert.deepEqual(ours.logs, theirs.logs, `log lines vs ${ref.name}`);
    assert.equal(ours.flags, theirs.flags, `advertised flags vs ${ref.name}`);
    assert.deepEqual(ours.output, theirs.output, `printed secrets vs ${ref.name}`);
  }
  const newest = await outcome(referenceServers().at(-1)!, 'ref-newest-keys');
  assert.deepEqual(ours.caKeys, newest.caKeys, 'the bundle variables are the newest reference\'s');
  assert.equal(ours.flags, 'credentialMasking true credentialMaskingCustomProviders true');
  assert.deepEqual(ours.output, ['real', 'real'], 'a secret the child prints is not masked, whole or split (as measured on the references)');
  assert.equal(ours.requests.filter((r) => r.includes('real')).length, 7, `the swap happened (the test can fail the other way too): ${JSON.stringify(ours.requests)}; ours printed ${JSON.stringify(ours.transcript)}`);
  // Each form put the real value back only where its provider's auth allows it.
  for (const want of ['/api/k - x-api-key real HK_TOKEN', '/api/kb Bearer dummy HK_TOKEN', '/api/t Token real TK_TOKEN', '/api/tb Bearer real TK_TOKEN', '/api/b Basic user:real BA_TOKEN', '/api/bt Token dummy BA_TOKEN', '/api/g Bearer real GR_TOKEN']) {
    assert.ok(ours.requests.some((r) => r.endsWith(want)), `${want} in ${JSON.stringify(ours.requests)}`);
  }
});
