// Conformance of `httpHeaderEnvVars` (REFERENCE-CAPABILITIES §5.2) against every reference
// version and ours: header `valueEnvVar` appends the executor's variable to `value`; an unset or
// empty variable, a bad name or value is -32602 with the reference's text and nothing is sent;
// the capability is advertised.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ourServer, referenceServers } from '../support/reference';
import { exchange, initialized } from '../support/wire';

test('httpHeaderEnvVars: valueEnvVar, errors and nothing sent, as every reference version', async (t) => {
  const got: Record<string, string[]> = {};
  const web = http.createServer((req, res) => {
    const tag = String(req.headers['x-tag']);
    (got[tag] ??= []).push(JSON.stringify({ authorization: req.headers.authorization, 'x-a': req.headers['x-a'] }));
    res.end('ok');
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  t.after(() => web.close());
  const url = `http://127.0.0.1:${(web.address() as AddressInfo).port}/`;
  const env = { CAPS_HDR_TOKEN: 'secret-from-executor-env', CAPS_EMPTY: '', CAPS_BAD: 'a\nb' };
  const req = (id: number, headers: object[]) => ({ id, method: 'http/request', params: { method: 'GET', url, requestId: `r${id}`, headers } });
  const cases: [number, object[], string][] = [
    [1, [{ name: 'Authorization', value: 'Bearer ', valueEnvVar: 'CAPS_HDR_TOKEN' }], 'prefix + variable'],
    [2, [{ name: 'X-Missing', value: 'a', valueEnvVar: 'CAPS_NOT_SET_ANYWHERE' }], 'unset'],
    [3, [{ name: 'X-A', valueEnvVar: 'CAPS_HDR_TOKEN' }], 'no value'],
    [4, [{ name: 'X-A', value: 'v', valueEnvVar: null }], 'null variable'],
    [5, [{ name: 'X-A', value: 'v', valueEnvVar: '' }], 'empty name'],
    [6, [{ name: 'X-A', value: 'v', valueEnvVar: 5 }], 'a number'],
    [7, [{ name: 'X-E', value: 'p-', valueEnvVar: 'CAPS_EMPTY' }], 'empty variable'],
    [8, [{ name: 'X-Bad', value: 'x', valueEnvVar: 'CAPS_BAD' }], 'a newline in the variable'],
    [9, [{ name: 'X-M1', value: 'x', valueEnvVar: 'CAPS_NOT_SET1' }, { name: 'X-M2', value: 'x', valueEnvVar: 'CAPS_NOT_SET2' }], 'the first of two'],
    [10, [{ name: 'bad name', value: 'x', valueEnvVar: 'CAPS_HDR_TOKEN' }], 'a bad name'],
    [11, [{ name: 'X-A=', value: 'x', valueEnvVar: 'CAPS_NOT_SET' }], 'a bad name before the variable'],
    [12, [{ name: 'X-A', value: 'x\r\n', valueEnvVar: 'CAPS_HDR_TOKEN' }], 'CR LF in the value'],
  ];
  const tagged = cases.map(([id, headers]) => req(id, [{ name: 'X-Tag', value: String(id) }, ...headers]));
  const info = { id: 20, method: 'environment/info', params: null };
  const batches = initialized([...tagged, info]);
  const servers = [ourServer, ...referenceServers()];
  const answers: Map<number, import('../support/wire').Reply>[] = [];
  const sent: Record<string, string[]>[] = [];
  for (const s of servers) {
    for (const k of Object.keys(got)) delete got[k];
    answers.push(await exchange(s, batches, env));
    sent.push(JSON.parse(JSON.stringify(got)));
  }
  const [ours] = answers;
  assert.deepEqual(JSON.parse(sent[0]['1'][0]), { authorization: 'Bearer secret-from-executor-env' });
  assert.equal(ours.get(2)!.error?.message, 'http/request header X-Missing requires executor environment variable CAPS_NOT_SET_ANYWHERE');
  assert.equal((ours.get(20)!.result as any).capabilities.httpHeaderEnvVars, true);
  servers.slice(1).forEach((ref, i) => {
    const theirs = answers[i + 1];
    assert.equal((theirs.get(20)!.result as any).capabilities.httpHeaderEnvVars, true, `${ref.name} advertises it`);
    for (const [id, , what] of cases) {
      const o = ours.get(id)!;
      const r = theirs.get(id)!;
      assert.deepEqual(o.error ?? null, r.error ?? null, `${what}: error vs ${ref.name}`);
      assert.equal(!!o.result, !!r.result, `${what}: result vs ${ref.name}`);
      if (r.result) assert.equal(o.result!.status, r.result.status, `${what}: status vs ${ref.name}`);
      assert.deepEqual(sent[0][String(id)] ?? [], sent[i + 1][String(id)] ?? [], `${what}: what reached the origin vs ${ref.name}`);
    }
  });
});
