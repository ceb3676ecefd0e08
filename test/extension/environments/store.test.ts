// The environment store (src/extension/environments/store.ts): Local plus the settings entries,
// their validation (reserved names, URL schemes) and tokens kept apart in secret storage.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EnvironmentStore, parseEnvironment, tokenKey, type EnvironmentSetting } from '../../../src/extension/environments/store';

function memoryStore(initial: unknown = []) {
  let value: unknown = initial;
  const secrets = new Map<string, string>();
  const store = new EnvironmentStore(
    { read: () => value, write: async (v: EnvironmentSetting[]) => void (value = v) },
    { get: async (k) => secrets.get(k), store: async (k, v) => void secrets.set(k, v), delete: async (k) => void secrets.delete(k) },
  );
  return { store, secrets, setting: () => value };
}

describe('environment store', () => {
  it('always lists Local first, with valid settings entries after it', () => {
    const { store } = memoryStore([{ name: 'box', url: 'ws://127.0.0.1:9000' }, { name: 'stdio', command: 'exec-server', args: ['--listen', 'stdio'] }]);
    assert.deepEqual(store.list(), [
      { name: 'Local', kind: 'local' },
      { name: 'box', kind: 'websocket', url: 'ws://127.0.0.1:9000' },
      { name: 'stdio', kind: 'command', command: 'exec-server', args: ['--listen', 'stdio'] },
    ]);
    assert.deepEqual(store.problems(), []);
  });

  it('reports invalid entries instead of failing, and ignores duplicates', () => {
    const { store } = memoryStore([
      'nope',
      { name: '' },
      { name: 'Local', url: 'ws://x' },
      { name: 'both', url: 'ws://x', command: 'y' },
      { name: 'http', url: 'http://x' },
      { name: 'bad/name', url: 'ws://x' },
      { name: 'dup', url: 'ws://a' },
      { name: 'dup', url: 'ws://b' },
      { name: 'args', command: 'x', args: [1] },
    ]);
    assert.deepEqual(store.list().map((e) => e.name), ['Local', 'dup']);
    assert.equal(store.get('dup')?.url, 'ws://a');
    assert.equal(store.problems().length, 8);
    assert.ok(store.problems().some((p) => /reserved/.test(p)));
    assert.ok(store.problems().some((p) => /ws:\/\/ or wss:\/\//.test(p)));
    assert.equal(memoryStore({ not: 'an array' }).store.problems()[0], 'execServer.environments must be an array');
  });

  it('add keeps the token out of settings (SecretStorage only) and replaces an entry of the same name', async () => {
    const { store, secrets, setting } = memoryStore();
    await store.add({ name: 'remote', url: 'ws://127.0.0.1:1234', token: 's3cret' });
    assert.deepEqual(setting(), [{ name: 'remote', url: 'ws://127.0.0.1:1234' }]);
    assert.ok(!JSON.stringify(setting()).includes('s3cret'));
    assert.equal(await store.token('remote'), 's3cret');
    assert.equal(secrets.get(tokenKey('remote')), 's3cret');
    await store.add({ name: 'remote', url: 'ws://127.0.0.1:5678' });
    assert.deepEqual(setting(), [{ name: 'remote', url: 'ws://127.0.0.1:5678' }]);
    assert.equal(await store.token('remote'), undefined, 'replacing without a token forgets the old one');
  });

  it('add rejects invalid input with a clear message and changes nothing', async () => {
    const { store, setting, secrets } = memoryStore();
    await assert.rejects(store.add({ name: 'x' }), /exactly one of "url" or "command"/);
    await assert.rejects(store.add({ name: 'Local', url: 'ws://a' }), /reserved/);
    await assert.rejects(store.add({ name: 'c', command: 'exec-server', token: 't' }), /token only applies/);
    await assert.rejects(store.add({ name: 'u', url: 'not a url' }), /not a valid URL/);
    assert.deepEqual(setting(), []);
    assert.equal(secrets.size, 0);
  });

  it('remove deletes the entry and its token; Local cannot be removed', async () => {
    const { store, setting } = memoryStore();
    await store.add({ name: 'a', url: 'ws://127.0.0.1:1', token: 't' });
    await store.add({ name: 'b', command: 'exec-server', args: ['--listen', 'stdio'] });
    assert.equal(await store.remove('a'), true);
    assert.deepEqual(setting(), [{ name: 'b', command: 'exec-server', args: ['--listen', 'stdio'] }]);
    assert.equal(await store.token('a'), undefined);
    assert.equal(await store.remove('a'), false);
    await assert.rejects(store.remove('Local'), /cannot be removed/);
  });

  it('parseEnvironment accepts wss and names with spaces', () => {
    assert.deepEqual(parseEnvironment({ name: 'My Box', url: 'wss://h:1/x' }), { name: 'My Box', kind: 'websocket', url: 'wss://h:1/x' });
    assert.equal(typeof parseEnvironment({ name: 'a  b', url: 'ws://h' }), 'string');
  });
});
