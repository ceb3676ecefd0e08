// src/server/params.ts, paths.ts, process/env-policy.ts, process/output-buffer.ts: parameter checks and their reference messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RpcError } from '../../src/protocol/errors';
import { buildChildEnv, globMatch } from '../../src/server/process/env-policy';
import { OutputBuffer } from '../../src/server/process/output-buffer';
import * as P from '../../src/server/params';
import { pathToUri, uriToPath } from '../../src/server/paths';

function err(fn: () => unknown): { code: number; message: string } {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof RpcError);
    return { code: e.code, message: e.message };
  }
  throw new Error('expected an error');
}

test('params: serde-like messages for missing fields and wrong types', () => {
  assert.deepEqual(err(() => P.str({}, 'processId')), { code: -32602, message: 'missing field `processId`' });
  assert.deepEqual(err(() => P.str({ a: 5 }, 'a')), { code: -32602, message: 'invalid type: number, expected a string' });
  assert.deepEqual(err(() => P.bool({ a: 'yes' }, 'a')), { code: -32602, message: 'invalid type: string "yes", expected a boolean' });
  assert.deepEqual(err(() => P.strArray({ a: 'x' }, 'a')), { code: -32602, message: 'invalid type: string "x", expected a sequence' });
  assert.deepEqual(err(() => P.uint({ a: -1 }, 'a')), { code: -32602, message: 'invalid number' });
  assert.deepEqual(err(() => P.uint({ a: 1.5 }, 'a')), { code: -32602, message: 'invalid number' });
  assert.deepEqual(err(() => P.uint({ a: 'x' }, 'a')), { code: -32602, message: 'invalid type: string "x", expected usize' });
  assert.deepEqual(err(() => P.object(null, 'S')), { code: -32602, message: 'invalid type: null, expected struct S' });
  assert.deepEqual(P.object(null, 'S', true), {});
  assert.deepEqual(err(() => P.variant({ s: 'kill' }, 's', ['interrupt'])), { code: -32602, message: 'unknown variant `kill`, expected `interrupt`' });
  assert.equal(P.optStr({ a: null }, 'a'), undefined);
  assert.equal(P.optUint({}, 'a'), undefined);
  // Null-prototype record: keys like __proto__ are plain data.
  const env = P.strRecord({ env: JSON.parse('{"__proto__":"x","A":"1"}') }, 'env');
  assert.equal(Object.getPrototypeOf(env), null);
  assert.equal(env.A, '1');
});

test('params: strict base64', () => {
  assert.equal(P.base64('aGk=', 'x').toString(), 'hi');
  assert.equal(P.base64('aGk', 'x').toString(), 'hi', 'padding optional');
  assert.throws(() => P.base64('!!', 'what'), /what: Invalid symbol 33, offset 0\./);
  assert.throws(() => P.base64('a', 'what'), /Invalid input length/);
});

test('paths: file URIs and absolute paths in, relative/other schemes rejected like the reference', () => {
  assert.equal(uriToPath('file:///tmp/a%20b'), '/tmp/a b');
  assert.equal(uriToPath('/tmp/x/../y'), '/tmp/y');
  assert.deepEqual(err(() => uriToPath('rel/x')), { code: -32602, message: 'invalid URI: relative URL without a base' });
  assert.deepEqual(err(() => uriToPath('http://x/y')), { code: -32602, message: 'unsupported path URI scheme `http`' });
  assert.equal(err(() => uriToPath('file://host/y')).code, -32600);
  assert.equal(pathToUri('/tmp/a b#c'), 'file:///tmp/a%20b%23c');
  assert.equal(uriToPath(pathToUri('/tmp/ü x%')), '/tmp/ü x%');
});

test('env policy: globs are case-insensitive; layering order', () => {
  assert.ok(globMatch('*TOKEN*', 'my_token_x'));
  assert.ok(!globMatch('A?', 'ABC'));
  const server = { HOME: '/h', PATH: '/p', API_KEY: 'k', OTHER: 'o', GH_TOKEN: 't' };
  assert.deepEqual(buildChildEnv({ X: '1' }, undefined, server), { X: '1' });
  assert.deepEqual(buildChildEnv({}, { inherit: 'none' }, server), {});
  assert.deepEqual(buildChildEnv({}, { inherit: 'core' }, server), { HOME: '/h', PATH: '/p' });
  assert.deepEqual(buildChildEnv({}, { inherit: 'all' }, server), { HOME: '/h', PATH: '/p', OTHER: 'o' });
  assert.deepEqual(buildChildEnv({}, { inherit: 'all', ignoreDefaultExcludes: true, exclude: ['O*'] }, server), {
    HOME: '/h',
    PATH: '/p',
    API_KEY: 'k',
    GH_TOKEN: 't',
  });
  assert.deepEqual(buildChildEnv({ PATH: '/mine' }, { inherit: 'all', set: { S: '1' }, includeOnly: ['P*', 'S'] }, server), { PATH: '/mine', S: '1' });
});

test('output buffer: budget, eviction bookkeeping, newest chunk always kept', () => {
  const b = new OutputBuffer(10);
  for (let i = 1; i <= 5; i++) b.push({ seq: i, stream: 'stdout', data: Buffer.alloc(4, 48 + i) });
  assert.ok(b.retainedBytes <= 10);
  assert.equal(b.evictedThroughSeq, 3);
  assert.deepEqual(b.read(0, undefined).chunks.map((c) => c.seq), [4, 5]);
  assert.deepEqual(b.read(0, 1), { chunks: [b.read(0, undefined).chunks[0]], complete: false });
  assert.equal(b.read(5, undefined).complete, true);
  b.push({ seq: 6, stream: 'stderr', data: Buffer.alloc(50) });
  assert.deepEqual(b.read(0, undefined).chunks.map((c) => c.seq), [6], 'an oversized chunk alone is kept');
  assert.equal(b.evictedThroughSeq, 5);
  // Many pushes compact without losing order.
  const big = new OutputBuffer(100);
  for (let i = 1; i <= 5000; i++) big.push({ seq: i, stream: 'stdout', data: Buffer.alloc(10) });
  assert.deepEqual(big.read(4990, undefined).chunks.map((c) => c.seq), [4991, 4992, 4993, 4994, 4995, 4996, 4997, 4998, 4999, 5000]);
  assert.equal(big.evictedThroughSeq, 4990);
});
