// process/start's managed-network, shellSnapshot and metadata members, malformed: the same
// -32602, message for message, from our CLI and the reference (stdio, side by side). The
// cases are the ones probed for docs/protocol.md "Managed network"; a valid start is not
// among them (what a valid one does is tested in test/server/network).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import os from 'node:os';
import { test } from 'node:test';
import { waitFor } from '../support/wait';
import { commandOf, ourServer, referenceServer, type ServerCommand } from '../support/reference';

const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: false };
const without = (k: string) => Object.fromEntries(Object.entries(PROXY).filter(([key]) => key !== k));
const np = (proxy: object, more: object = {}) => ({ networkProxy: { proxy, ...more } });
const UUID = '01a232ec-1111-2222-3333-444455556666';

export const MALFORMED: object[] = [
  { networkProxy: 'x' }, { networkProxy: 5 }, { networkProxy: {} }, { networkProxy: [] }, { networkProxy: [{}] },
  { networkProxy: { proxy: 'x' } }, { networkProxy: { proxy: [] } }, { networkProxy: { proxy: null } }, { networkProxy: { proxy: {} } },
  ...Object.keys(PROXY).map((k) => np(without(k))),
  np({ ...PROXY, enabled: false }), np({ ...PROXY, enabled: 'yes' }), np({ ...PROXY, enabled: null }),
  np({ ...PROXY, mode: 'bogus' }), np({ ...PROXY, mode: 1 }), np({ ...PROXY, mode: null }), np({ ...PROXY, mode: { full: 1 } }),
  np({ mode: 'x', enabled: 1 }), np({ enabled: 1, mode: 'x' }),
  np({ ...PROXY, domains: { a: 'maybe' } }), np({ ...PROXY, domains: [] }), np({ ...PROXY, domains: { a: 1 } }), np({ ...PROXY, domains: { a: { allow: 1 } } }),
  np({ ...PROXY, unixSockets: { '/x': 'maybe' } }), np({ ...PROXY, unixSockets: { a: 1 } }),
  np({ ...PROXY, reviewDomains: 1 }), np({ ...PROXY, reviewDomains: [1] }), np({ ...PROXY, reviewDomains: null }),
  np({ ...PROXY, credentialMasking: 'yes' }), np({ ...PROXY, credentialMasking: null }),
  np({ ...PROXY, credentialProviders: 1 }), np({ ...PROXY, credentialProviders: 'x' }), np({ ...PROXY, credentialProviders: [] }),
  np({ ...PROXY, credentialProviders: { x: 1 } }), np({ ...PROXY, credentialProviders: { x: { urlPrefixes: [] } } }),
  ...[[{}], [5], [null], [['bearer']], [{ bearer: 'x' }], [{ bearer: [] }], [true], [{ bogus: null }], [{ bearer: null, basic: null }], [{ bearer: 1 }]].map((auth) =>
    np({ ...PROXY, credentialMasking: true, credentialProviders: { p: { env: ['T'], patterns: ['t[0-9]{8}'], url_prefixes: ['https://x.example/'], auth } } })),
  np(PROXY, { policyDecisionTimeoutMs: 0 }), np(PROXY, { policyDecisionTimeoutMs: -1 }), np(PROXY, { policyDecisionTimeoutMs: 'x' }), np(PROXY, { policyDecisionTimeoutMs: 1.5 }),
  np(PROXY, { auditMetadata: { model: 1 } }), np(PROXY, { auditMetadata: 'x' }), np(PROXY, { auditMetadata: null }),
  np(PROXY, { environmentId: 1 }), np(PROXY, { executionId: 1 }),
  { managedNetwork: 'x' }, { managedNetwork: { loopbackPorts: 'x' } }, { managedNetwork: { loopbackPorts: [-1] } }, { managedNetwork: { loopbackPorts: [70000] } },
  { managedNetwork: { loopbackPorts: [1.5] } }, { managedNetwork: { loopbackPorts: ['x'] } }, { managedNetwork: { loopbackPorts: [true] } }, { managedNetwork: { loopbackPorts: null } },
  { managedNetwork: { allowLocalBinding: 1 } }, { managedNetwork: { allowLocalBinding: null } }, { managedNetwork: { allowUnixSockets: [1] } },
  { managedNetwork: { allowUnixSockets: 'x' } }, { managedNetwork: { dangerouslyAllowAllUnixSockets: 'x' } }, { managedNetwork: [[1], true, [], false, 5] },
  { enforceManagedNetwork: 'x' }, { enforceManagedNetwork: null },
  { shellSnapshot: 'x' }, { shellSnapshot: {} }, { shellSnapshot: [] }, { shellSnapshot: ['a'] }, { shellSnapshot: ['a', { name: 'b', path: '/bin/bash' }, 3] },
  { shellSnapshot: { scopeId: 'a' } }, { shellSnapshot: { shell: { name: 'bash', path: '/bin/bash' } } },
  { shellSnapshot: { scopeId: '', shell: { name: 'bash', path: '/bin/bash' } } }, { shellSnapshot: { scopeId: 'x'.repeat(257), shell: { name: 'bash', path: '/bin/bash' } } },
  { shellSnapshot: { scopeId: 'é'.repeat(128) + 'a', shell: { name: 'bash', path: '/bin/bash' } } },
  { shellSnapshot: { scopeId: 'a', shell: 'x' } }, { shellSnapshot: { scopeId: 'a', shell: {} } }, { shellSnapshot: { scopeId: 'a', shell: [] } },
  { shellSnapshot: { scopeId: 'a', shell: { name: 'bash' } } }, { shellSnapshot: { scopeId: 'a', shell: { name: 1, path: '/bin/bash' } } },
  { shellSnapshot: { scopeId: 1, shell: { name: 'bash', path: '/bin/bash' } } }, { shellSnapshot: { scopeId: null, shell: { name: 'b', path: '/x' } } },
  { metadata: 'x' }, { metadata: 1 }, { metadata: { threadId: 1 } }, { metadata: { toolCallId: 1 } }, { metadata: ['a'] }, { metadata: [1] },
  { metadata: [UUID, 't', 'x'] }, { metadata: [UUID, 1] },
  ...['zz', '01a232ec11112222333344445555666z', '01a232ec-1111-2222-3333-44445555666', '01a232ec-1111-2222-3333', '01a232ec-111-22222-3333-444455556666', '',
    '01a232ec-1111-2222-3333-444455556666x', '01a232ec-1111-2222-3333-4444555566667', '01a232ec_1111-2222-3333-444455556666', 'é'.repeat(16),
    '01a232ec1111222233334444555566667', '{01a232ec111122223333444455556666}', '01a232ec-1111-2222-3333-444455556666-'].map((threadId) => ({ metadata: { threadId } })),
];
/** Well-formed values both accept (the start itself then runs `true`). */
export const ACCEPTED: object[] = [
  { networkProxy: null }, { managedNetwork: {} }, { managedNetwork: [] }, { managedNetwork: [[1]] }, { managedNetwork: { loopbackPorts: [0, 65535] } },
  { shellSnapshot: null }, { shellSnapshot: ['a', { name: 'b', path: '/bin/bash' }] }, { shellSnapshot: { scopeId: 'a', shell: { name: 'bash', path: 'rel' } } },
  { metadata: null }, { metadata: {} }, { metadata: [] }, { metadata: { other: 1 } }, { metadata: [UUID, 't'] },
  ...[UUID, UUID.toUpperCase(), UUID.replace(/-/g, ''), `urn:uuid:${UUID}`, `{${UUID}}`].map((threadId) => ({ metadata: { threadId, toolCallId: 'call_1' } })),
  { enforceManagedNetwork: false },
];

type Reply = { id: number; result?: unknown; error?: { code: number; message: string } };

async function answers(server: ServerCommand, cases: object[]): Promise<Map<number, Reply>> {
  const child = spawn(commandOf(server), server.args('stdio'), { env: server.env(), stdio: ['pipe', 'pipe', 'ignore'] });
  const replies = new Map<number, Reply>();
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const msg = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      if (typeof msg.id === 'number') replies.set(msg.id, msg);
    }
  });
  const cwd = new URL(`file://${os.tmpdir()}`).href;
  child.stdin.write(JSON.stringify({ id: 0, method: 'initialize', params: { clientName: 'params' } }) + '\n');
  child.stdin.write(JSON.stringify({ method: 'initialized', params: {} }) + '\n');
  cases.forEach((c, i) => {
    const params = { processId: `p${i}`, argv: ['true'], cwd, env: {}, tty: false, ...c };
    child.stdin.write(JSON.stringify({ id: i + 1, method: 'process/start', params }) + '\n');
  });
  try {
    await waitFor(() => replies.size === cases.length + 1, { what: `${server.name}: ${cases.length} answers`, detail: () => `${replies.size - 1} so far` });
  } finally {
    child.stdin.end();
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
  }
  return replies;
}

test('malformed networkProxy / managedNetwork / enforceManagedNetwork / shellSnapshot / metadata: the reference\'s -32602, text for text', async () => {
  const [ours, ref] = await Promise.all([answers(ourServer, MALFORMED), answers(referenceServer, MALFORMED)]);
  const diffs: string[] = [];
  MALFORMED.forEach((c, i) => {
    const o = ours.get(i + 1)!;
    const r = ref.get(i + 1)!;
    assert.equal(r.error?.code, -32602, `the reference refuses case ${i} ${JSON.stringify(c)}: ${JSON.stringify(r)}`);
    if (o.error?.code !== r.error.code || o.error.message !== r.error.message) diffs.push(`${JSON.stringify(c).slice(0, 160)}: ours ${JSON.stringify(o.error ?? o.result)}, reference ${JSON.stringify(r.error)}`);
  });
  assert.deepEqual(diffs, []);
});

test('well-formed values of the same members are accepted by both', async () => {
  const [ours, ref] = await Promise.all([answers(ourServer, ACCEPTED), answers(referenceServer, ACCEPTED)]);
  ACCEPTED.forEach((c, i) => {
    assert.equal(ref.get(i + 1)!.error, undefined, `reference: ${JSON.stringify(c)} → ${JSON.stringify(ref.get(i + 1))}`);
    assert.equal(ours.get(i + 1)!.error, undefined, `ours: ${JSON.stringify(c)} → ${JSON.stringify(ours.get(i + 1))}`);
  });
});
