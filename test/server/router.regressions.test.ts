// Regressions found by the router fuzz, pinned as plain tests so they fail by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExecServer } from '../../src/server/exec-server';

test('Object.prototype names are not methods: __proto__/constructor/toString/valueOf/hasOwnProperty → -32601', async () => {
  const errors: string[] = [];
  const server = new ExecServer({ log: (level, m) => level === 'error' && errors.push(m) });
  const conn = server.connect({ notify() {} }, { terminateOnClose: true });
  await conn.requestUntyped('initialize', { clientName: 'regression' });
  conn.notification('initialized', {});
  try {
    for (const method of ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', '__defineGetter__']) {
      await assert.rejects(conn.requestUntyped(method, {}), (e: { code?: number; message?: string }) => {
        assert.equal(e.code, -32601, `${method}: ${e.message}`);
        assert.equal(e.message, `exec-server stub does not implement \`${method}\` yet`);
        return true;
      });
    }
    assert.deepEqual(errors, [], 'no internal error logged');
  } finally {
    conn.close();
    await server.shutdown();
  }
});
