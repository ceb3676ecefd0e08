// The settings owner (src/extension/common/settings.ts): one typed snapshot of the user settings,
// refreshed on change and after its own writes, with one event per actual change.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EnvironmentStore, type EnvironmentSetting } from '../../../src/extension/environments/store';
import { readSettings, SettingsOwner, type SettingKey, type SettingsChange } from '../../../src/extension/common/settings';

/** A user-settings file in memory: values (user scope) over the package.json defaults. */
function userSettings(initial: Partial<Record<SettingKey, unknown>> = {}) {
  const defaults: Record<SettingKey, unknown> = {
    environments: [],
    'approval.policy': 'askOutsideWorkspace',
    'approval.timeoutSeconds': 25,
    'approval.sandboxAgentCommands': false,
    'network.allowedDomains': [],
    'agentEndpoint.port': 0,
    'tracing.otlpEndpoint': '',
    'tracing.otlpProtocol': 'http/protobuf',
    'telemetry.otlpEndpoint': '',
    'telemetry.otlpProtocol': 'http/protobuf',
    'ssh.path': '',
    'ssh.configFile': '',
    'ssh.keepSessionSeconds': 300,
    'containers.cli': 'auto',
    'containers.context': '',
    'kubernetes.kubectlPath': '',
    'kubernetes.context': '',
  };
  const values = new Map<SettingKey, unknown>(Object.entries(initial) as [SettingKey, unknown][]);
  const writes: SettingKey[] = [];
  const owner = new SettingsOwner(
    (key) => (values.has(key) ? values.get(key) : defaults[key]),
    async (key, value) => {
      writes.push(key);
      await new Promise((r) => setImmediate(r)); // the host writes asynchronously
      values.set(key, value);
    },
  );
  const changes: SettingsChange[] = [];
  owner.onDidChange((c) => changes.push(c));
  return { owner, values, writes, changes };
}

describe('settings owner', () => {
  it('reads every setting typed, with the defaults for values of the wrong type or range', () => {
    const good = readSettings((k) => ({ 'approval.policy': 'alwaysAsk', 'approval.timeoutSeconds': 3, 'approval.sandboxAgentCommands': true, 'network.allowedDomains': [' PyPI.org ', '*.github.com', '**.npmjs.org', '127.0.0.1', 'http://x.org', 'a*b.com', '*', 'x.org:443', 7, 'pypi.org'], 'agentEndpoint.port': 4567, 'tracing.otlpEndpoint': ' http://127.0.0.1:4318 ', 'tracing.otlpProtocol': 'http/json', 'ssh.path': ' /opt/ssh ', 'ssh.configFile': '~/cfg', 'ssh.keepSessionSeconds': 900 })[k as string]);
    assert.deepEqual(good, {
      environments: undefined,
      approvalPolicy: 'alwaysAsk',
      approvalTimeoutMs: 3000,
      sandboxAgentCommands: true,
      networkAllowedDomains: ['pypi.org', '*.github.com', '**.npmjs.org', '127.0.0.1'],
      agentEndpointPort: 4567,
      telemetry: { otlpEndpoint: 'http://127.0.0.1:4318', otlpProtocol: 'http/json' },
      ssh: { path: '/opt/ssh', configFile: '~/cfg', keepSessionSec: 900 },
      containers: { cli: 'auto', context: '', kubectl: '', kubeContext: '' },
    });
    const bad = readSettings((k) => ({ 'approval.policy': 'yolo', 'approval.timeoutSeconds': -1, 'approval.sandboxAgentCommands': 'yes', 'network.allowedDomains': 'pypi.org', 'agentEndpoint.port': 70000, 'tracing.otlpEndpoint': 42, 'tracing.otlpProtocol': 'grpc', 'ssh.path': 7, 'ssh.keepSessionSeconds': 5 })[k as string]);
    assert.deepEqual(bad, {
      environments: undefined,
      approvalPolicy: 'askOutsideWorkspace',
      approvalTimeoutMs: 25_000,
      sandboxAgentCommands: false,
      networkAllowedDomains: [],
      agentEndpointPort: 0,
      telemetry: { otlpEndpoint: '', otlpProtocol: 'http/protobuf' },
      ssh: { path: '', configFile: '', keepSessionSec: 300 },
      containers: { cli: 'auto', context: '', kubectl: '', kubeContext: '' },
    });
  });

  it('tracing: execServer.tracing.* (not filed under VS Code\'s "Telemetry"); the former execServer.telemetry.* pair still works when no new endpoint is set', () => {
    const read = (v: Record<string, unknown>) => readSettings((k) => v[k as string]).telemetry;
    assert.deepEqual(read({ 'telemetry.otlpEndpoint': 'http://old:4318', 'telemetry.otlpProtocol': 'http/json', 'tracing.otlpProtocol': 'http/protobuf' }), { otlpEndpoint: 'http://old:4318', otlpProtocol: 'http/json' });
    assert.deepEqual(read({ 'tracing.otlpEndpoint': 'http://new:4318', 'telemetry.otlpEndpoint': 'http://old:4318', 'telemetry.otlpProtocol': 'http/json', 'tracing.otlpProtocol': 'http/protobuf' }), { otlpEndpoint: 'http://new:4318', otlpProtocol: 'http/protobuf' }, 'the new pair wins, both its fields');
  });

  it('refresh() fires once per actual change, naming the changed fields', () => {
    const { owner, values, changes } = userSettings();
    owner.refresh();
    assert.equal(changes.length, 0, 'nothing changed: no event');
    values.set('approval.policy', 'alwaysAsk');
    values.set('tracing.otlpProtocol', 'http/json');
    owner.refresh();
    assert.equal(changes.length, 1);
    assert.deepEqual([...changes[0].changed].sort(), ['approvalPolicy', 'telemetry']);
    assert.equal(changes[0].previous.approvalPolicy, 'askOutsideWorkspace');
    assert.equal(changes[0].current.approvalPolicy, 'alwaysAsk');
    assert.equal(owner.current.approvalPolicy, 'alwaysAsk');
    owner.refresh();
    assert.equal(changes.length, 1, 'the same values again: no second event');
    values.set('approval.policy', 'nonsense'); // reads as the default
    owner.refresh();
    assert.equal(owner.current.approvalPolicy, 'askOutsideWorkspace');
  });

  it('write() stores the user value and listeners see the change before it resolves; the host event that follows fires nothing more', async () => {
    const { owner, writes, changes } = userSettings();
    await owner.write('approval.timeoutSeconds', 5);
    assert.deepEqual(writes, ['approval.timeoutSeconds']);
    assert.equal(changes.length, 1);
    assert.deepEqual([...changes[0].changed], ['approvalTimeoutMs']);
    assert.equal(owner.current.approvalTimeoutMs, 5000);
    owner.refresh(); // VS Code's onDidChangeConfiguration for the same write
    assert.equal(changes.length, 1);
  });

  it('an environment saved through the store is one change event, seen by the time add() resolves (no manual refresh)', async () => {
    const { owner, changes } = userSettings();
    const secrets = new Map<string, string>();
    const store = new EnvironmentStore(
      { read: () => owner.current.environments, write: (v: EnvironmentSetting[]) => owner.write('environments', v) },
      { get: async (k) => secrets.get(k), store: async (k, v) => void secrets.set(k, v), delete: async (k) => void secrets.delete(k) },
    );
    await store.add({ name: 'box', url: 'ws://127.0.0.1:9000' });
    assert.equal(changes.length, 1);
    assert.deepEqual([...changes[0].changed], ['environments']);
    assert.deepEqual(store.list().map((e) => e.name), ['Local', 'box']);
    await store.add({ name: 'box', url: 'ws://127.0.0.1:9001' });
    assert.equal(changes.length, 2);
    assert.deepEqual(changes[1].previous.environments, [{ name: 'box', url: 'ws://127.0.0.1:9000' }]);
    assert.deepEqual(changes[1].current.environments, [{ name: 'box', url: 'ws://127.0.0.1:9001' }]);
    await store.remove('box');
    assert.equal(changes.length, 3);
    assert.deepEqual(store.list().map((e) => e.name), ['Local']);
  });
});
