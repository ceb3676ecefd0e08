// The server's method table against the protocol (src/protocol/types.ts RequestMap): tsc rejects
// a handler answering the wrong result type or a table missing a method (the @ts-expect-error
// lines below stop compiling if that checking is lost); at run time the table serves exactly the
// protocol's methods, and the sandbox gate's list (derived from the params types) matches what
// the handlers do: a managed sandbox on any other method is refused, on these it is enforced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { managedSandbox } from '../../../src/protocol/codex-sandbox';
import { RpcError } from '../../../src/protocol/errors';
import { REQUEST_METHODS, SANDBOX_METHODS } from '../../../src/protocol/methods';
import type { ParamsOf } from '../../../src/protocol/types';
import { ExecServer } from '../../../src/server/exec-server';
import { spec, type MethodTable } from '../../../src/server/methods/spec';
import { METHOD_TABLE, type ServerMethod } from '../../../src/server/router';
import { SANDBOX_AWARE } from '../../../src/server/sandbox/gate';
import { KNOWN_METHODS } from '../../../src/telemetry/methods';

// ---- compile-time checks (run by the type check of `npm test`; never executed)
export const typeChecks = () => {
  const ok: MethodTable<'process/terminate'> = { 'process/terminate': spec('exec', () => 'p', () => ({ running: true })) };
  // @ts-expect-error a handler answering another shape than ProcessTerminateResult does not fit
  const wrongResult: MethodTable<'process/terminate'> = { 'process/terminate': spec('exec', () => 'p', () => ({ running: 'yes' })) };
  // @ts-expect-error an async handler is checked too
  const wrongAsync: MethodTable<'environment/status'> = { 'environment/status': spec('environment status', () => null, async () => ({ status: 'busy' })) };
  // @ts-expect-error a table without an entry for one of its methods
  const missing: MethodTable<'fs/open' | 'fs/close'> = { 'fs/close': spec('filesystem', () => 'h', () => ({})) };
  return [ok, wrongResult, wrongAsync, missing];
};

test('method table: exactly the protocol methods but initialize (RequestMap, incl. fs/watchMissing and environmentConfig/read)', () => {
  const served = Object.keys(METHOD_TABLE).sort();
  const protocol = REQUEST_METHODS.filter((m) => m !== 'initialize').sort();
  assert.deepEqual(served, protocol);
  assert.ok(protocol.includes('fs/watchMissing') && protocol.includes('environmentConfig/read'));
});

test('method lists derived from the protocol: telemetry labels and the sandbox gate', () => {
  assert.deepEqual([...KNOWN_METHODS].sort(), [...REQUEST_METHODS, 'initialized'].sort());
  assert.deepEqual([...SANDBOX_AWARE].sort(), [...SANDBOX_METHODS].sort());
  for (const m of SANDBOX_METHODS) assert.ok(Object.prototype.hasOwnProperty.call(METHOD_TABLE, m), m);
});

test('sandbox gate: a managed sandbox is refused by every method outside SANDBOX_AWARE and enforced by every method in it', async () => {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'es-method-table-')));
  const server = new ExecServer();
  try {
    const file = path.join(dir, 'f.txt');
    writeFileSync(file, 'data');
    mkdirSync(path.join(dir, 'sub'));
    const u = (p: string) => pathToFileURL(p).href;
    // Valid params for every method (typed: a new method needs a sample here).
    const sample: { [M in ServerMethod]: ParamsOf<M> } = {
      'process/start': { processId: 'p1', argv: ['true'], cwd: u(dir), env: {}, tty: false },
      'process/read': { processId: 'p0' },
      'process/write': { processId: 'p0', chunk: '', writeId: 'w1' },
      'process/signal': { processId: 'p0', signal: 'interrupt' },
      'process/terminate': { processId: 'p0' },
      'process/resize': { processId: 'p0', rows: 10, cols: 10 },
      'process/closeStdin': { processId: 'p0' },
      'process/ack': { processId: 'p0', consumedBytes: 0 },
      'fs/readFile': { path: u(file) },
      'fs/writeFile': { path: u(path.join(dir, 'new.txt')), dataBase64: '' },
      'fs/createDirectory': { path: u(path.join(dir, 'made')) },
      'fs/getMetadata': { path: u(file) },
      'fs/canonicalize': { path: u(file) },
      'fs/readDirectory': { path: u(dir) },
      'fs/remove': { path: u(file) },
      'fs/copy': { sourcePath: u(file), destinationPath: u(path.join(dir, 'copy.txt')), recursive: false },
      'fs/walk': { path: u(dir), options: { maxDepth: 2, maxDirectories: 10, maxEntries: 10, followDirectorySymlinks: false } },
      'fs/open': { path: u(file), handleId: 'h1' },
      'fs/readBlock': { handleId: 'h0', offset: 0, len: 1 },
      'fs/writeBlock': { handleId: 'h0', offset: 0, chunk: 'eA==' },
      'fs/close': { handleId: 'h0' },
      'fs/rename': { sourcePath: u(file), destinationPath: u(path.join(dir, 'renamed.txt')) },
      'fs/watch': { watchId: 'w1', path: u(dir) },
      'fs/unwatch': { watchId: 'w0' },
      'fs/watchMissing': { watchId: 1, missing: [u(path.join(dir, 'absent'))] },
      'environment/info': {},
      'environment/status': {},
      'environmentConfig/read': { cwd: u(dir), configPaths: [u(path.join(dir, 'config.toml'))], requirementsPaths: [] },
      'http/request': { method: 'GET', url: 'http://127.0.0.1:1/', headers: [], requestId: 'r1', timeoutMs: 1 },
      'capabilityRoots/discoverV1': { roots: [{ id: 'r1', path: u(dir) }] },
      'capabilities/discoverV2': { cwd: u(dir) },
    };
    // Nothing readable or writable: an enforcing method refuses, a gate refusal names the gate.
    const sandbox = managedSandbox({ entries: [], cwd: u(dir) });
    const conn = server.connect({ notify() {} }, { label: 'method-table' });
    await conn.requestUntyped('initialize', { clientName: 'test' });
    conn.notification('initialized', {});
    const outcome = async (m: string) => {
      try {
        await conn.requestUntyped(m, { ...(sample as Record<string, object>)[m], sandbox, policyContext: { cwd: u(dir), workspaceRoots: [u(dir)] } });
        return 'ok';
      } catch (e) {
        assert.ok(e instanceof RpcError, `${m}: ${e}`);
        return `${e.code} ${e.message}`;
      }
    };
    for (const m of Object.keys(sample)) {
      const r = await outcome(m);
      const gated = /cannot enforce a sandbox/.test(r);
      if (!SANDBOX_AWARE.has(m)) assert.ok(gated && r.startsWith('-32600 '), `${m} with a managed sandbox: ${r}`);
      else {
        assert.ok(!gated, `${m} enforces the sandbox itself: ${r}`);
        // fs/* check the profile in-process: nothing is allowed. (process/start runs under bwrap or is refused.)
        if (m.startsWith('fs/')) assert.notEqual(r, 'ok', `${m} was carried out under a sandbox that allows nothing`);
      }
    }
  } finally {
    await server.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
});
