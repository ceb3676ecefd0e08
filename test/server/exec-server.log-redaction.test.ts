// A session id is a capability (resumeSessionId takes the session over), so no log line may
// carry it: an agent that can read a log (the extension's output channel, a CLI's stderr
// captured somewhere) must not learn how to resume someone else's session.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExecServer } from '../../src/server/exec-server';
import { sessionLogTag } from '../../src/protocol/log-tag';
import { connectClient } from '../support/server';
import { waitFor } from '../support/wait';

test('new, resumed and expired sessions are logged by tag, never by id', async () => {
  const lines: string[] = [];
  const server = new ExecServer({ log: (_l, m) => lines.push(m), detachedSessionTtlMs: 50 });
  try {
    const a = await connectClient(server);
    a.conn.close();
    const b = await connectClient(server, a.sessionId); // resume within the TTL
    b.conn.close();
    const tag = sessionLogTag(a.sessionId);
    await waitFor(() => lines.some((l) => l.includes(`${tag} expired`)), { what: 'the detached session to expire (50 ms TTL)', detail: () => lines.join('\n') });
    const text = lines.join('\n');
    assert.ok(!text.includes(a.sessionId), `a log line holds the session id:\n${text}`);
    assert.match(text, new RegExp(`new ${tag}`));
    assert.match(text, new RegExp(`resumed ${tag}`));
    assert.match(text, new RegExp(`${tag} expired`));
  } finally {
    await server.shutdown();
  }
});

test('the tag is stable per id and differs between ids', () => {
  const id1 = '0b7e5f5c-3c1d-4e7a-9a4b-1f2e3d4c5b6a';
  const id2 = '0b7e5f5c-3c1d-4e7a-9a4b-1f2e3d4c5b6b';
  assert.equal(sessionLogTag(id1), sessionLogTag(id1));
  assert.notEqual(sessionLogTag(id1), sessionLogTag(id2));
  assert.match(sessionLogTag(id1), /^session #[0-9a-f]{8}$/);
});
