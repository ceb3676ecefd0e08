// Router fuzzing: 100 000 generated and mutated request frames (plus client notifications),
// in two shards (router.fuzz-0/-1.test.ts, the even and the odd batches: the same frames as one
// run, in two files that fit the per-file timeout on a loaded 2-core machine), thrown directly at ServerConnection.requestUntyped / notification of a real ExecServer
// (real processes, real files in a scratch dir). Asserts: nothing throws synchronously,
// every request settles with a JSON-serializable result or an RpcError with an integer code,
// no handler crashes into an internal TypeError, nothing outlives shutdown, and the server
// still answers afterwards. Seeded: a failure prints the seed and the offending frame.
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { ExecServer } from '../../src/server/exec-server';
import type { NotificationSink, ServerConnection } from '../../src/server/api';
import { frameArb, sanitize, type Frame } from '../support/fuzz-frames';
import { closedPortUrl, isRpcErrorShape, withTimeout } from '../support/fuzz';
import { childPids } from '../support/process';
import { waitFor } from '../support/wait';

const TOTAL_FRAMES = 100_000;
const BATCH = 500;
export const SEED = Number(process.env.FUZZ_SEED ?? 20261129);

interface Stats {
  results: Map<string, number>;
  errors: Map<string, number>;
  codes: Map<number, number>;
  notifications: number;
}

function bump<K>(m: Map<K, number>, k: K): void {
  m.set(k, (m.get(k) ?? 0) + 1);
}

/** Runs the batches `shard`, `shard + shards`, … of the 100 000 frames (batch b is seeded SEED + b). */
export async function routerFuzz(shard: number, shards: number): Promise<void> {
  const scratch = realpathSync(mkdtempSync(path.join(tmpdir(), 'exec-fuzz-')));
  const originalCwd = process.cwd();
  process.chdir(scratch); // belt and braces: nothing relative can land in the repo
  const internalErrors: string[] = [];
  const server = new ExecServer({
    detachedSessionTtlMs: 500,
    exitedProcessRetentionMs: 500,
    log: (level, message) => {
      if (level === 'error') internalErrors.push(message);
    },
  });
  const stats: Stats = { results: new Map(), errors: new Map(), codes: new Map(), notifications: 0 };
  const sink: NotificationSink = {
    notify: (_m, params) => {
      stats.notifications++;
      JSON.stringify(params); // notifications must be serializable too
    },
  };
  const closedUrl = await closedPortUrl();

  // A pool: fully initialized connections get most traffic; the others exercise gating.
  const open = async (stage: 'none' | 'initialize' | 'ready'): Promise<ServerConnection> => {
    const c = server.connect(sink, { terminateOnClose: true, label: `fuzz-${stage}` });
    if (stage !== 'none') await c.requestUntyped('initialize', { clientName: 'fuzz' });
    if (stage === 'ready') assert.equal(c.notification('initialized', {}), true);
    return c;
  };
  const pool = [await open('ready'), await open('ready'), await open('ready'), await open('initialize'), await open('none')];
  const pick = (i: number) => pool[i % 10 < 7 ? i % 3 : i % 10 < 9 ? 3 : 4];

  let sent = 0;
  try {
    for (let batch = shard; batch * BATCH < TOTAL_FRAMES; batch += shards) {
      const frames: Frame[] = fc.sample(frameArb, { numRuns: BATCH, seed: SEED + batch });
      const work = frames.map(async (raw, i) => {
        const frame = sanitize(raw, scratch, closedUrl) as Frame;
        const describe = () => `seed ${SEED + batch} #${i}: ${safeJson(frame)}`;
        if (i % 25 === 0) {
          // Client notifications: only `initialized` is accepted; anything else must return false (never throw).
          const throwaway = await open('initialize');
          const ok = throwaway.notification(frame.method, frame.params);
          assert.equal(ok, frame.method === 'initialized', describe());
          throwaway.close();
          return;
        }
        const conn = pick(i);
        let p: Promise<unknown>;
        try {
          p = conn.requestUntyped(frame.method, frame.params);
        } catch (e) {
          assert.fail(`requestUntyped threw synchronously (${String(e)}) for ${describe()}`);
        }
        try {
          const result = await withTimeout(p, 20_000, describe);
          assert.doesNotThrow(() => JSON.stringify(result), describe());
          bump(stats.results, frame.method);
        } catch (e) {
          if (e instanceof Error && e.message.startsWith('no answer within')) throw e;
          assert.ok(isRpcErrorShape(e), `rejection without an integer code: ${String(e)} for ${describe()}`);
          bump(stats.errors, frame.method);
          bump(stats.codes, e.code);
        }
      });
      await Promise.all(work);
      sent += frames.length;
    }

    // Not vacuous: the fuzz reached real handlers and made them succeed as well as fail.
    for (const m of ['process/start', 'fs/writeFile', 'fs/readFile', 'fs/getMetadata', 'environment/status']) {
      assert.ok((stats.results.get(m) ?? 0) > 0, `${m} never succeeded: ${JSON.stringify([...stats.results])}`);
    }
    for (const code of [-32600, -32601, -32602]) assert.ok((stats.codes.get(code) ?? 0) > 0, `no ${code} seen`);
    // Distinct crash signatures (first line, ids stripped): a TypeError & co means a handler
    // trusted unvalidated input; the frame is answered -32603 but the input should be a -326xx.
    const crashes = [...new Set(internalErrors.filter((m) => /TypeError|RangeError|ReferenceError|Cannot read prop/.test(m))
      .map((m) => m.split('\n')[0].replace(/^fuzz-\w+: /, '')))];
    assert.deepEqual(crashes, [], 'handlers crashed on fuzzed input (internal errors)');

    // Still answering after the storm.
    const after = await open('ready');
    assert.deepEqual(await after.requestUntyped('environment/status', null), { status: 'ready' });
    const meta = (await after.requestUntyped('fs/getMetadata', { path: scratch })) as { isDirectory: boolean };
    assert.equal(meta.isDirectory, true);
    pool.push(after);
  } finally {
    for (const c of pool) c.close();
    await server.shutdown();
    process.chdir(originalCwd);
    // Processes started by fuzz inputs are gone once the server has shut down.
    await waitFor(() => childPids(process.pid).length === 0, { what: 'children to exit', detail: () => `still running: ${childPids(process.pid).join(',')}`, timeout: 10_000 });
    rmSync(scratch, { recursive: true, force: true });
  }
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  console.log(`router fuzz shard ${shard}/${shards}: ${sent} frames, ${total(stats.results)} results, ${total(stats.errors)} errors ` +
    `(${[...stats.codes].map(([c, n]) => `${c}:${n}`).join(' ')}), ${stats.notifications} notifications, ` +
    `${internalErrors.length} internal -32603 logs`);
}

function safeJson(v: unknown): string {
  try {
    const s = JSON.stringify(v);
    return s.length > 400 ? `${s.slice(0, 400)}…` : s;
  } catch {
    return String(v);
  }
}
