// Raw wire comparison: the same request lines sent over stdio to our CLI and to the
// reference; responses (by id) must carry the same error codes and messages, and results
// the same shape. Run `npm run build` first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as os from 'node:os';
import { ourServer, referenceServers } from '../support/reference';
import { exchange } from '../support/wire';

const cwd = new URL(`file://${os.tmpdir()}`).href;
const BATCHES: object[][] = [
  [{ id: 1, method: 'process/start', params: { processId: 'x', argv: ['true'], cwd, env: {}, tty: false } }],
  [{ id: 2, method: 'initialize', params: { clientName: 'wire' } }],
  [{ id: 3, method: 'environment/status', params: null }],
  [{ id: 4, method: 'initialize', params: { clientName: 'again' } }],
  [{ method: 'initialized', params: {} }, { id: 5, method: 'environment/status', params: null }],
  [
    { id: 6, method: 'process/start', params: { argv: ['true'], cwd, env: {}, tty: false } },
    { id: 7, method: 'process/start', params: { processId: 'e', argv: [], cwd, env: {}, tty: false } },
    { id: 8, method: 'process/read', params: { processId: 'nope' } },
    { id: 9, method: 'fs/readFile', params: { path: '/etc/hostname' } },
    { id: 10, method: 'fs/readFile', params: { path: 'file:///definitely/not/here' } },
    { id: 11, method: 'no/such/method', params: {} },
    { id: 12, method: 'process/terminate', params: { processId: 'nope' } },
    { id: 13, method: 'process/write', params: { processId: 'nope', chunk: '', writeId: '1' } },
    { id: 14, method: 'fs/getMetadata', params: { path: cwd } },
    { id: 15, method: 'environment/info', params: null },
  ],
];
// Our server accepts plain absolute paths (a documented extension): 9 differs on purpose.
const EXTENSION_DIFFERENCES = new Set([9]);

for (const referenceServer of referenceServers()) test(`wire compat: lifecycle and error replies match ${referenceServer.name} code for code, message for message`, async () => {
  const [ours, ref] = await Promise.all([exchange(ourServer, BATCHES), exchange(referenceServer, BATCHES)]);
  for (const [id, r] of ref) {
    if (EXTENSION_DIFFERENCES.has(id)) continue;
    const o = ours.get(id)!;
    assert.ok(o, `our reply to ${id}`);
    assert.equal(!!o.error, !!r.error, `id ${id}: ours ${JSON.stringify(o)} vs reference ${JSON.stringify(r)}`);
    if (r.error) {
      assert.equal(o.error!.code, r.error.code, `id ${id} code: ${o.error!.message} vs ${r.error.message}`);
      assert.equal(o.error!.message, r.error.message, `id ${id} message`);
    } else {
      // Same result keys (ours may add extension fields).
      // environment info differs by nature (providerId, prependPathDirs are reference internals).
      const keys = id === 15 ? ['shell', 'cwd', 'platformOs', 'tempDir'] : Object.keys(r.result ?? {});
      for (const k of keys) {
        if (id === 2 && k === 'environmentInfo') continue;
        assert.ok(k in (o.result ?? {}), `id ${id}: result key ${k} missing in ${JSON.stringify(o.result)}`);
      }
    }
  }
  assert.equal(ref.get(9)!.error!.code, -32602); // the reference rejects plain paths...
  assert.ok(ours.get(9)!.result, 'our server accepts the plain absolute path'); // ...ours accepts them
});
