// The relay target of a configured environment (src/extension/agent/relay-targets.ts), as the
// UI builds it for Start Agent Endpoint on an environment (a command environment — the ssh
// command Connect to Host saves — is what every relay.*.test.ts runs through): a websocket
// environment with its token
// (our CLI with capability-token auth), a wrong token failing the agent's request clearly; and
// the Codex entries (codex-entry.ts): one `[[environments]]` per endpoint, ids unique, names
// that cannot break the TOML.
import { strict as assert } from 'node:assert';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { codexEnvironmentEntries } from '../../../src/extension/agent/codex-entry';
import { relayTargetOf } from '../../../src/extension/agent/relay-targets';
import { startCli } from '../../support/cli';
import { waitFor } from '../../support/wait';
import { closedOf, endpointFor, outputOf, start, ws } from './relay-helpers';

describe('relay targets of configured environments', () => {
  it('a websocket environment: its token is sent; a wrong one fails the request with the reason, no hang', async (t) => {
    mkdirSync(ws, { recursive: true });
    const token = randomBytes(16).toString('hex');
    const srv = await startCli(['--ws-auth', 'capability-token', '--ws-token-sha256', createHash('sha256').update(token).digest('hex')], { t });
    for (const [given, ok] of [[token, true], ['wrong', false]] as const) {
      const f = await endpointFor(relayTargetOf({ name: 'wsbox', kind: 'websocket', url: srv.url }, async () => given), { sandboxAll: true });
      try {
        const a = await f.agent();
        const init = await a.handshake();
        if (ok) {
          assert.ok(init.result, JSON.stringify(init.error));
          const r = await a.send('process/start', start('w1', ['/bin/echo', 'over-ws']));
          assert.ok(r.result, JSON.stringify(r.error));
          await waitFor(() => closedOf(a, 'w1'), { timeout: 20_000, what: 'process/closed' });
          assert.equal(outputOf(a, 'w1'), 'over-ws\n');
        } else {
          assert.match(init.error?.message ?? '', /401|unauthori[sz]ed|token/i, `a clear error: ${JSON.stringify(init)}`);
        }
      } finally {
        await f.stop();
      }
    }
  });

  it('Local has no relay target', () => {
    assert.throws(() => relayTargetOf({ name: 'Local', kind: 'local' }, async () => undefined), /Local has no relay/);
  });
});

describe('Codex environments.toml entries of the endpoints', () => {
  it('one [[environments]] per endpoint; ids unique and plain; a hostile name cannot add TOML', () => {
    const text = codexEnvironmentEntries(
      [
        { environment: 'Local', url: 'ws://127.0.0.1:1', token: 'a'.repeat(43) },
        { environment: 'devbox', url: 'ws://127.0.0.1:2', token: 'b'.repeat(43) },
        { environment: 'Dev Box', url: 'ws://127.0.0.1:3', token: 'c'.repeat(43) },
        { environment: 'dev-box', url: 'ws://127.0.0.1:4', token: 'd'.repeat(43) },
        { environment: 'x"\n[[environments]]\nid = "evil', url: 'ws://127.0.0.1:5', token: 'e'.repeat(43) },
      ],
      'Local',
    );
    const tables = text.split('\n').filter((l) => l === '[[environments]]');
    assert.equal(tables.length, 5, text);
    const ids = [...text.matchAll(/^id = "([^"]*)"$/gm)].map((m) => m[1]);
    assert.deepEqual(ids, ['vscode', 'vscode-devbox', 'vscode-dev-box', 'vscode-dev-box-2', 'vscode-x-environments-id-evil']);
    for (const line of text.split('\n')) assert.match(line, /^(#[^\n]*|\[\[environments\]\]|id = "[a-z0-9_-]+"|url = "ws:\/\/127\.0\.0\.1:\d"|auth_bearer_token = "[a-e]{43}"|)$/, `line: ${line}`);
  });
});
