// Wire fuzzing against the built CLI over a real websocket: generated requests (text and
// binary frames, integer and string ids) interleaved with junk (truncated JSON, random text
// and bytes, arrays, primitives, unusable ids). Asserts: every request with an id gets a
// result or an error with an integer code; junk gets proper error objects; the connection
// and server survive; a non-`initialized` notification closes only its connection;
// processes started by fuzz input are gone after the server shuts down.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import WebSocket from 'ws';
import { attempt, ensureBuilt, startCli, stopAll } from '../support/cli-servers';
import { frameArb, sanitize, type Frame } from '../support/fuzz-frames';
import { closedPortUrl, isRpcErrorShape } from '../support/fuzz';
import { childPids, isAlive } from '../support/process';
import { waitFor } from '../support/wait';

const EPISODES = 40;
const REQUESTS_PER_EPISODE = 400;
const JUNK_PER_EPISODE = 150;
const SEED = Number(process.env.FUZZ_SEED ?? 4242);

let scratch: string;
before(() => {
  ensureBuilt();
  scratch = realpathSync(mkdtempSync(path.join(tmpdir(), 'exec-wire-fuzz-')));
});
after(async () => {
  await stopAll();
  rmSync(scratch, { recursive: true, force: true });
});

type Outgoing = { data: string | Buffer; binary: boolean; id?: number | string };

/** Junk that is not a request and not a notification (those would legitimately close the socket). */
const junkArb: fc.Arbitrary<Outgoing> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }).map((s) => ({ data: s, binary: false })),
  fc.uint8Array({ maxLength: 200 }).map((u) => ({ data: Buffer.from(u), binary: true })),
  fc.tuple(frameArb, fc.double({ min: 0, max: 1, noNaN: true })).map(([f, cut]) => {
    const s = JSON.stringify({ id: 1, ...f }) ?? '{';
    return { data: s.slice(0, Math.max(1, Math.floor(s.length * cut) - 1)), binary: false }; // a proper prefix: never valid JSON
  }),
  fc.jsonValue({ maxDepth: 4 }).map((v) => ({ data: JSON.stringify(v) ?? 'null', binary: false })),
  fc.tuple(fc.oneof(fc.boolean(), fc.constant({}), fc.constant([]), fc.array(fc.integer(), { maxLength: 2 })), fc.constantFrom('environment/status', 'fs/readFile', 'x'))
    .map(([id, method]) => ({ data: JSON.stringify({ id, method, params: {} }), binary: false })),
  fc.integer().map((id) => ({ data: JSON.stringify({ id: `junk-${id}`, result: { x: 1 } }), binary: false })),
).filter((o) => !isNotification(o.data));

function isNotification(data: string | Buffer): boolean {
  try {
    const v = JSON.parse(data.toString());
    return typeof v === 'object' && v !== null && !Array.isArray(v) && 'method' in v && (v.id === undefined || v.id === null);
  } catch {
    return false;
  }
}

interface Episode {
  ws: WebSocket;
  answers: Map<string, Record<string, unknown>>;
  idless: Array<Record<string, unknown>>;
  closed: Promise<number>;
  call(method: string, params: unknown, id: number | string): Promise<Record<string, unknown>>;
}

async function connect(url: string): Promise<Episode> {
  const a = await attempt(url);
  if (a.kind !== 'open') throw new Error(`connect failed: ${JSON.stringify(a)}`);
  const ws = a.ws;
  const answers = new Map<string, Record<string, unknown>>();
  const idless: Array<Record<string, unknown>> = [];
  const waiters = new Map<string, (m: Record<string, unknown>) => void>();
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString()) as Record<string, unknown>;
    if ('method' in m) return; // server notification (process output etc.)
    if (m.id === null || m.id === undefined) {
      idless.push(m);
      return;
    }
    const key = JSON.stringify(m.id);
    answers.set(key, m);
    waiters.get(key)?.(m);
  });
  const closed = new Promise<number>((res) => ws.on('close', (code) => res(code)));
  return {
    ws,
    answers,
    idless,
    closed,
    call: (method, params, id) =>
      new Promise((res) => {
        waiters.set(JSON.stringify(id), res);
        ws.send(JSON.stringify({ id, method, params }));
      }),
  };
}

function assertAnswer(m: Record<string, unknown> | undefined, what: string): void {
  assert.ok(m, `no answer for ${what}`);
  if ('result' in m) return;
  assert.ok(isRpcErrorShape(m.error), `bad error shape ${JSON.stringify(m)} for ${what}`);
}

test(`wire fuzz: ${EPISODES * (REQUESTS_PER_EPISODE + JUNK_PER_EPISODE)} frames over a live websocket (seed ${SEED})`, async () => {
  const closedUrl = await closedPortUrl();
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0', '--log-level', 'warn'], { cwd: scratch });
  const cliPid = cli.child.pid!;
  let requests = 0;
  let junk = 0;
  const seenChildren = new Set<number>();

  for (let e = 0; e < EPISODES; e++) {
    const ep = await connect(cli.url);
    const initialized = e % 4 !== 3; // every 4th episode never initializes: gating under fuzz
    if (initialized) {
      assertAnswer(await ep.call('initialize', { clientName: 'wire-fuzz' }, 'init'), 'initialize');
      ep.ws.send(JSON.stringify({ method: 'initialized', params: {} }));
    }
    const frames = fc.sample(frameArb, { numRuns: REQUESTS_PER_EPISODE, seed: SEED + e }).map((f) => sanitize(f, scratch, closedUrl) as Frame);
    const junkFrames = fc.sample(junkArb, { numRuns: JUNK_PER_EPISODE, seed: SEED + 1000 + e });
    const out: Outgoing[] = [];
    frames.forEach((f, i) => {
      const id = i % 3 === 0 ? `s-${e}-${i}` : e * 100_000 + i;
      const data = JSON.stringify({ id, method: f.method, params: f.params });
      out.push({ data: i % 7 === 0 ? Buffer.from(data) : data, binary: i % 7 === 0, id });
      if (i < junkFrames.length && i % 3 === 1) out.push(junkFrames[i]);
    });
    for (let i = 0; i < junkFrames.length; i++) if (i % 3 !== 1 || i >= frames.length) out.push(junkFrames[i]);
    for (const o of out) ep.ws.send(o.data, { binary: o.binary });
    const ids = out.filter((o) => o.id !== undefined).map((o) => JSON.stringify(o.id));
    requests += ids.length;
    junk += out.length - ids.length;

    await waitFor(() => ids.every((k) => ep.answers.has(k)) || ep.ws.readyState !== WebSocket.OPEN, {
      what: `answers in episode ${e}`,
      detail: () => `${ids.filter((k) => ep.answers.has(k)).length}/${ids.length} answered`,
      timeout: 60_000,
    });
    assert.equal(ep.ws.readyState, WebSocket.OPEN, `episode ${e}: the server closed the connection`);
    for (const k of ids) assertAnswer(ep.answers.get(k), `id ${k} in episode ${e}`);
    for (const m of ep.idless) assert.ok(isRpcErrorShape(m.error), `id-less reply without a proper error: ${JSON.stringify(m)}`);
    // The connection still works after its share of junk.
    const st = await ep.call('environment/status', null, `final-${e}`);
    if (initialized) assert.deepEqual(st.result, { status: 'ready' });
    else assert.equal((st.error as { code: number }).code, -32600);
    for (const p of childPids(cliPid)) seenChildren.add(p);
    ep.ws.close();
  }

  // A client notification other than `initialized` closes that connection only.
  const victim = await connect(cli.url);
  victim.ws.send(JSON.stringify({ method: 'process/output', params: { junk: true } }));
  await victim.closed;

  // The server still answers; a deliberately long-lived child proves shutdown reaps children.
  const last = await connect(cli.url);
  assertAnswer(await last.call('initialize', { clientName: 'wire-fuzz' }, 1), 'initialize');
  last.ws.send(JSON.stringify({ method: 'initialized', params: {} }));
  assert.deepEqual((await last.call('environment/status', null, 2)).result, { status: 'ready' });
  const started = await last.call('process/start', { processId: 'keep', argv: ['/bin/sleep', '60'], cwd: scratch, env: {}, tty: false, arg0: null }, 3);
  assert.ok(started.result, JSON.stringify(started));
  for (const p of childPids(cliPid)) seenChildren.add(p);
  assert.ok(seenChildren.size > 0, 'no child process observed');
  last.ws.close();

  await cli.stop(); // SIGTERM: shutdown terminates every session's processes
  await waitFor(() => [...seenChildren].every((p) => !isAlive(p)), {
    what: 'children of the server to be gone',
    detail: () => `still alive: ${[...seenChildren].filter(isAlive).join(',')}`,
    timeout: 10_000,
  });
  assert.equal(cli.child.exitCode, 0, `server exit code ${cli.child.exitCode}; stderr: ${cli.stderr().slice(-2000)}`);
  assert.doesNotMatch(cli.stderr(), /TypeError|RangeError|fatal/, 'server logged a crash');
  console.log(`wire fuzz: ${requests} requests + ${junk} junk frames, ${seenChildren.size} child processes reaped`);
});
