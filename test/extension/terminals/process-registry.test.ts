// The process registry (src/extension/terminals/process-registry.ts): what the Processes tree lists
// and forgets.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { connectInProcess } from '../../../src/client/connect';
import { ExecServer } from '../../../src/server/exec-server';
import { ProcessRegistry } from '../../../src/extension/terminals/process-registry';

const server = new ExecServer();
after(() => server.shutdown());

describe('process registry', () => {
  it('tracks real processes until they close, per environment, and forgets an environment', async () => {
    const client = await connectInProcess(server, { clientName: 'registry-test' });
    const reg = new ProcessRegistry();
    let changes = 0;
    reg.onDidChange(() => changes++);
    try {
      const quick = await client.startProcess({ argv: ['/bin/sh', '-c', 'exit 0'], cwd: '/' });
      const slow = await client.startProcess({ argv: ['/bin/sh', '-c', 'sleep 60'], cwd: '/' });
      reg.add('Local', 'quick', 'api', quick);
      const s = reg.add('Local', 'slow', 'terminal', slow);
      reg.add('Other', 'slow elsewhere', 'agent', slow);
      assert.equal(reg.list('Local').length, 2);
      assert.equal(reg.list().length, 3);
      await quick.closed;
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(reg.list('Local').map((p) => p.label), ['slow']);
      assert.equal(reg.get(s.key), s);
      reg.forgetEnvironment('Other');
      assert.equal(reg.list('Other').length, 0);
      assert.equal(await reg.get(s.key)!.handle.terminate(), true);
      await slow.closed;
      await new Promise((r) => setImmediate(r));
      assert.equal(reg.list().length, 0);
      assert.ok(changes >= 5);
    } finally {
      reg.dispose();
      await client.close();
    }
  });
});
