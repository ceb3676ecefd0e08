// src/transports/detach-proof.ts parseDetachAnswer: what a host's `exec-server --detach` prints is trusted only as a port and a URL-safe token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDetachAnswer } from '../../src/transports/detach-proof';

const token = 'A'.repeat(43);

test('parseDetachAnswer: the JSON line among other output; pid and started as printed', () => {
  const out = `motd line\n{"port":41234,"token":"${token}","pid":77,"started":true}\n`;
  assert.deepEqual(parseDetachAnswer(out), { port: 41234, token, pid: 77, started: true });
  assert.deepEqual(parseDetachAnswer(`{"port":1,"token":"${token}"}`), { port: 1, token, pid: NaN, started: false });
});

test('parseDetachAnswer: no line, bad JSON, a bad port or a token that could smuggle header or argument text → undefined', () => {
  for (const out of [
    '',
    'not json',
    '{"port":41234,"token":',
    `{"port":0,"token":"${token}"}`,
    `{"port":65536,"token":"${token}"}`,
    `{"port":"22 -oProxyCommand=x","token":"${token}"}`,
    '{"port":41234,"token":"short"}',
    `{"port":41234,"token":"${token}\\r\\nX-Evil: 1"}`,
    `{"port":41234,"token":"${token} ${token}"}`,
    `{"port":41234,"token":${JSON.stringify('a'.repeat(513))}}`,
    '{"port":41234}',
  ]) assert.equal(parseDetachAnswer(out), undefined, out);
});
