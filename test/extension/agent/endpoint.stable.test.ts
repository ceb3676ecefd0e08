// A stable agent endpoint (docs/reliability.md, optional part): the extension restarts the endpoint
// after a window reload with the token it keeps in SecretStorage and the port it had, so the
// agent's environments.toml entry stays valid. The core takes the token it is given — only a
// strong one — and other tokens still get HTTP 401.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as net from 'node:net';
import { connectWebSocket } from '../../../src/client/connect';
import { AgentEndpoint, MIN_AGENT_TOKEN_LENGTH, newAgentToken } from '../../../src/extension/agent/endpoint';

const gate = {
  policy: () => 'neverAsk' as const,
  sandboxAll: () => false,
  timeoutMs: () => 10_000,
  workspaceRoots: () => [],
  ask: async () => undefined,
};

describe('agent endpoint: a given token and port', () => {
  it('a restart on the same port with the same token serves the same entry; other tokens get 401', async () => {
    const token = newAgentToken();
    const first = await AgentEndpoint.start({ port: 0, token, gate });
    const { url, port } = first;
    await first.stop();
    const again = await AgentEndpoint.start({ port, token, gate });
    try {
      assert.equal(again.url, url);
      assert.equal(again.token, token);
      const c = await connectWebSocket(again.url, { token, reconnect: false });
      assert.equal(typeof (await c.environmentInfo()).shell.path, 'string');
      await c.close();
      await assert.rejects(connectWebSocket(again.url, { token: newAgentToken(), reconnect: false }), /401/);
      await assert.rejects(connectWebSocket(again.url, { token: '', reconnect: false }), /401/);
    } finally {
      await again.stop();
    }
  });

  it('refuses a weak token (short, or not base64url) and listens nowhere', async () => {
    for (const weak of ['', 'short', 'x'.repeat(MIN_AGENT_TOKEN_LENGTH - 1), `${'a'.repeat(MIN_AGENT_TOKEN_LENGTH)} `, `${'a'.repeat(MIN_AGENT_TOKEN_LENGTH)}/+`]) {
      const port = await new Promise<number>((r) => {
        const s = net.createServer().listen(0, '127.0.0.1', () => {
          const p = (s.address() as net.AddressInfo).port;
          s.close(() => r(p));
        });
      });
      await assert.rejects(AgentEndpoint.start({ port, token: weak, gate }), /at least 43 base64url characters/, `token ${JSON.stringify(weak)}`);
      // Nothing was left listening on that port.
      await new Promise<void>((resolve, reject) => {
        const s = net.createServer().once('error', reject).listen(port, '127.0.0.1', () => s.close(() => resolve()));
      });
    }
  });
});
