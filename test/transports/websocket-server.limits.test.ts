// Attack (docs/security.md, "The listener"): the websocket listener's bounds on open websockets
// (MAX_CONNECTIONS) and on sessions (MAX_SESSIONS, with the server's session count). Before,
// only connections not yet upgraded were bounded: a peer past the upgrade (with the token) could
// open websockets until the descriptor table or the heap gave out.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, test } from 'node:test';
import type WebSocket from 'ws';
import { listenWebSocket, MAX_CONNECTIONS, MAX_SESSIONS, type WebSocketListener } from '../../src/transports/websocket-server';
import { attempt, type Attempt } from '../support/cli-servers';
import { waitFor } from '../support/wait';

const listeners: WebSocketListener[] = [];
const sockets: WebSocket[] = [];
after(async () => {
  for (const ws of sockets) ws.terminate();
  await Promise.all(listeners.map((l) => l.close()));
});

async function listen(sessionCount?: () => number): Promise<WebSocketListener> {
  const l = await listenWebSocket({ host: '127.0.0.1', port: 0, sessionCount, onConnection: () => {} });
  listeners.push(l);
  return l;
}

function mustOpen(a: Attempt, what: string): WebSocket {
  if (a.kind !== 'open') throw new Error(`${what} was refused: ${JSON.stringify(a)}`);
  sockets.push(a.ws);
  return a.ws;
}

function readyz(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/readyz' }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on('error', reject);
  });
}

test(`attack: websockets past ${MAX_CONNECTIONS} are refused with 503 and the reason; the listener stays up and admits again once one closed`, async () => {
  const l = await listen();
  const open: WebSocket[] = [];
  for (let i = 0; i < MAX_CONNECTIONS; i++) open.push(mustOpen(await attempt(l.url), `websocket ${i + 1}`));
  const over = await attempt(l.url);
  // Before: the websocket past the bound opened like every other.
  if (over.kind === 'open') sockets.push(over.ws);
  assert.equal(over.kind, 'http', `the websocket past the bound: ${over.kind}`);
  assert.equal(over.kind === 'http' && over.status, 503);
  assert.match(over.kind === 'http' ? over.body : '', new RegExp(`too many connections: ${MAX_CONNECTIONS} websockets open \\(at most ${MAX_CONNECTIONS}\\)`));
  assert.equal(await readyz(l.port), 200, 'the listener still answers');
  open[0].close();
  const again = await waitFor(
    async () => {
      const a = await attempt(l.url);
      if (a.kind === 'open') return a.ws;
      return undefined;
    },
    { what: 'a websocket to be admitted once one closed', interval: 50 },
  );
  sockets.push(again);
});

test(`attack: a new websocket is refused (503) while sessions + websockets reach ${MAX_SESSIONS}, so connect-initialize-leave cannot pile up sessions`, async () => {
  let sessions = MAX_SESSIONS - 2;
  const l = await listen(() => sessions);
  const first = mustOpen(await attempt(l.url), 'the first websocket');
  sessions++; // it initialized: one more session
  const over = await attempt(l.url); // 255 sessions + 1 websocket
  // Before: the server's sessions were not asked, and the websocket opened.
  if (over.kind === 'open') sockets.push(over.ws);
  assert.equal(over.kind === 'http' && over.status, 503, JSON.stringify(over.kind === 'http' ? over : over.kind));
  assert.match(over.kind === 'http' ? over.body : '', new RegExp(`too many sessions: ${MAX_SESSIONS - 1} sessions and 1 websockets \\(at most ${MAX_SESSIONS} together\\)`));
  first.close();
  await waitFor(async () => (await readyz(l.port)) === 200 && l.connectionCount === 0, { what: 'the first websocket to close', interval: 20 });
  sessions--; // a detached session expired
  mustOpen(await attempt(l.url), 'a websocket once below the bound');
});
