// The FileSystemProvider logic against a real in-process ExecServer and real files.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ExecServerClient } from '../../../src/client/client';
import { connectInProcess, connectWebSocket } from '../../../src/client/connect';
import { ErrorCodes, RpcError } from '../../../src/protocol/errors';
import { ExecServer } from '../../../src/server/exec-server';
import { serveConnection } from '../../../src/transports/serve';
import { listenWebSocket } from '../../../src/transports/websocket-server';
import type { ClientTelemetry } from '../../../src/telemetry/api';
import { ExecFileSystem, FileChangeType, FileType, mapFsError, type ChangeEvent, type FsErrorFactory } from '../../../src/extension/files/exec-file-system';
import { waitFor } from '../../support/wait';

/** Stands in for vscode.FileSystemError: the code is what VS Code looks at. */
class FakeFsError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
const errors: FsErrorFactory = {
  FileNotFound: (m) => new FakeFsError('FileNotFound', m),
  FileExists: (m) => new FakeFsError('FileExists', m),
  FileNotADirectory: (m) => new FakeFsError('FileNotADirectory', m),
  FileIsADirectory: (m) => new FakeFsError('FileIsADirectory', m),
  NoPermissions: (m) => new FakeFsError('NoPermissions', m),
  Unavailable: (m) => new FakeFsError('Unavailable', m),
  Unknown: (m) => new FakeFsError('Unknown', m),
};
const code = (c: string) => (e: unknown) => e instanceof FakeFsError && e.code === c;

let server: ExecServer;
let client: ExecServerClient;
let fsx: ExecFileSystem;
let dir: string;
const ENV = 'Local';

before(async () => {
  server = new ExecServer();
  client = await connectInProcess(server, { clientName: 'vscode-fs-test' });
  fsx = new ExecFileSystem(
    {
      getClient: async (env) => {
        if (env === ENV) return client;
        throw new Error(`connect ECONNREFUSED 127.0.0.1:1 (${env})`);
      },
    },
    errors,
    { streamThresholdBytes: 64 * 1024 },
  );
  dir = mkdtempSync(path.join(os.tmpdir(), 'vscode-fs-'));
});
after(async () => {
  await client.close();
  await server.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

const p = (...parts: string[]) => path.join(dir, ...parts);
const bytes = (s: string) => new TextEncoder().encode(s);

describe('exec file system', () => {
  it('stat and readDirectory report types, sizes and times', async () => {
    mkdirSync(p('d1'));
    writeFileSync(p('d1', 'f.txt'), 'hello');
    const st = await fsx.stat(ENV, p('d1', 'f.txt'));
    assert.equal(st.type, FileType.File);
    assert.equal(st.size, 5);
    assert.ok(st.mtime > 0);
    assert.equal((await fsx.stat(ENV, p('d1'))).type, FileType.Directory);
    mkdirSync(p('d1', 'sub'));
    assert.deepEqual((await fsx.readDirectory(ENV, p('d1'))).sort(), [
      ['f.txt', FileType.File],
      ['sub', FileType.Directory],
    ]);
    await assert.rejects(fsx.stat(ENV, p('missing')), code('FileNotFound'));
    await assert.rejects(fsx.readDirectory(ENV, p('missing')), code('FileNotFound'));
  });

  it('readFile reads small files directly and large ones as a stream, byte-exact', async () => {
    writeFileSync(p('small.bin'), Buffer.from([0, 1, 2, 255]));
    assert.deepEqual([...(await fsx.readFile(ENV, p('small.bin')))], [0, 1, 2, 255]);
    const big = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;
    writeFileSync(p('big.bin'), big);
    const got = await fsx.readFile(ENV, p('big.bin'));
    assert.equal(got.length, big.length);
    assert.ok(Buffer.from(got).equals(big));
    await assert.rejects(fsx.readFile(ENV, p('nope.txt')), code('FileNotFound'));
    await assert.rejects(fsx.readFile(ENV, dir), code('FileIsADirectory'));
  });

  it('one owner of whole-file reads: a 6-byte read is fs/getMetadata + fs/readFile, a large file is streamed in blocks, over a websocket and in process', async () => {
    const requests: string[] = [];
    const counting: ClientTelemetry = { call: (method) => (requests.push(method), { end() {} }) };
    const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => serveConnection(server, t) });
    const ws = await connectWebSocket(listener.url, { reconnect: false, telemetry: counting });
    const local = await connectInProcess(server, { clientName: 'vscode-fs-count', telemetry: counting });
    try {
      writeFileSync(p('six.txt'), 'abcdef');
      const big = Buffer.alloc(3 * 1024 * 1024 + 5, 7);
      writeFileSync(p('big-counted.bin'), big);
      for (const [link, client] of [['websocket', ws], ['in process', local]] as const) {
        const provider = new ExecFileSystem({ getClient: async () => client }, errors, { streamThresholdBytes: 64 * 1024 });
        requests.length = 0;
        assert.equal(Buffer.from(await provider.readFile(ENV, p('six.txt'))).toString(), 'abcdef');
        assert.deepEqual(requests, ['fs/getMetadata', 'fs/readFile'], `6-byte read over ${link}`);
        requests.length = 0;
        assert.ok(Buffer.from(await provider.readFile(ENV, p('big-counted.bin'))).equals(big), `large file over ${link}`);
        assert.equal(requests.filter((m) => m === 'fs/getMetadata').length, 1, `one stat for a large file over ${link}: ${requests.join(' ')}`);
        assert.ok(!requests.includes('fs/readFile'), `a large file is not read in one answer over ${link}`);
        assert.equal(requests[1], 'fs/open');
        assert.ok(requests.filter((m) => m === 'fs/readBlock').length >= 3, `read in blocks over ${link}`);
        assert.equal(requests[requests.length - 1], 'fs/close');
      }
    } finally {
      await ws.close();
      await local.close();
      await listener.close();
    }
  });

  it('writeFile honours create/overwrite like VS Code expects', async () => {
    const f = p('w.txt');
    await assert.rejects(fsx.writeFile(ENV, f, bytes('x'), { create: false, overwrite: true }), code('FileNotFound'));
    assert.equal(existsSync(f), false);
    await fsx.writeFile(ENV, f, bytes('one'), { create: true, overwrite: false });
    assert.equal(readFileSync(f, 'utf8'), 'one');
    await assert.rejects(fsx.writeFile(ENV, f, bytes('two'), { create: true, overwrite: false }), code('FileExists'));
    assert.equal(readFileSync(f, 'utf8'), 'one');
    await fsx.writeFile(ENV, f, bytes('three'), { create: false, overwrite: true });
    assert.equal(readFileSync(f, 'utf8'), 'three');
    await assert.rejects(fsx.writeFile(ENV, p('no-parent', 'x.txt'), bytes('x'), { create: true, overwrite: true }), code('FileNotFound'));
    await assert.rejects(fsx.writeFile(ENV, p('w.txt', 'x.txt'), bytes('x'), { create: true, overwrite: true }), code('FileNotADirectory'));
    await assert.rejects(fsx.writeFile(ENV, dir, bytes('x'), { create: true, overwrite: true }), code('FileIsADirectory'));
  });

  it('createDirectory, delete (recursive) and their errors', async () => {
    await fsx.createDirectory(ENV, p('made'));
    assert.ok(existsSync(p('made')));
    await assert.rejects(fsx.createDirectory(ENV, p('made')), code('FileExists'));
    await assert.rejects(fsx.createDirectory(ENV, p('nope', 'deeper')), code('FileNotFound'));
    writeFileSync(p('made', 'f'), 'x');
    await fsx.delete(ENV, p('made'), { recursive: true });
    assert.equal(existsSync(p('made')), false);
    await assert.rejects(fsx.delete(ENV, p('made'), { recursive: true }), code('FileNotFound'));
  });

  it('rename and copy with and without overwrite', async () => {
    writeFileSync(p('a.txt'), 'A');
    writeFileSync(p('b.txt'), 'B');
    await assert.rejects(fsx.rename(ENV, p('a.txt'), ENV, p('b.txt'), { overwrite: false }), code('FileExists'));
    assert.equal(readFileSync(p('b.txt'), 'utf8'), 'B');
    await fsx.rename(ENV, p('a.txt'), ENV, p('c.txt'), { overwrite: false });
    assert.equal(existsSync(p('a.txt')), false);
    assert.equal(readFileSync(p('c.txt'), 'utf8'), 'A');
    await fsx.rename(ENV, p('c.txt'), ENV, p('b.txt'), { overwrite: true });
    assert.equal(readFileSync(p('b.txt'), 'utf8'), 'A');
    await assert.rejects(fsx.rename(ENV, p('gone.txt'), ENV, p('x.txt'), { overwrite: true }), code('FileNotFound'));

    mkdirSync(p('tree', 'deep'), { recursive: true });
    writeFileSync(p('tree', 'deep', 'leaf'), 'L');
    await fsx.copy(ENV, p('tree'), ENV, p('tree2'), { overwrite: false });
    assert.equal(readFileSync(p('tree2', 'deep', 'leaf'), 'utf8'), 'L');
    await assert.rejects(fsx.copy(ENV, p('tree'), ENV, p('tree2'), { overwrite: false }), code('FileExists'));
    writeFileSync(p('tree', 'deep', 'leaf'), 'L2');
    await fsx.copy(ENV, p('tree'), ENV, p('tree2'), { overwrite: true });
    assert.equal(readFileSync(p('tree2', 'deep', 'leaf'), 'utf8'), 'L2');
  });

  it('permission errors map to NoPermissions', async () => {
    if (process.getuid?.() === 0) {
      // root ignores file modes; the kernel still refuses writes to another process's environ.
      await assert.rejects(fsx.writeFile(ENV, '/proc/1/environ', bytes('x'), { create: false, overwrite: true }), code('NoPermissions'));
      return;
    }
    mkdirSync(p('locked'));
    writeFileSync(p('locked', 'secret'), 's');
    chmodSync(p('locked', 'secret'), 0o000);
    try {
      await assert.rejects(fsx.readFile(ENV, p('locked', 'secret')), code('NoPermissions'));
    } finally {
      chmodSync(p('locked', 'secret'), 0o600);
    }
  });

  it('an unreachable environment or a dropped connection is Unavailable', async () => {
    await assert.rejects(fsx.stat('Elsewhere', '/'), code('Unavailable'));
    const e = mapFsError(new RpcError(ErrorCodes.ConnectionClosed, 'connection closed: socket ended'), '/x', errors) as FakeFsError;
    assert.equal(e.code, 'Unavailable');
    assert.equal((mapFsError(new RpcError(ErrorCodes.NotFound, 'No such file or directory (os error 2)'), '/x', errors) as FakeFsError).code, 'FileNotFound');
    assert.equal((mapFsError(new RpcError(ErrorCodes.InvalidRequest, 'Permission denied (os error 13)'), '/x', errors) as FakeFsError).code, 'NoPermissions');
    assert.equal((mapFsError(new RpcError(ErrorCodes.InternalError, 'File exists (os error 17)'), '/x', errors) as FakeFsError).code, 'FileExists');
    assert.equal((mapFsError(new Error('something odd'), '/x', errors) as FakeFsError).code, 'Unknown');
  });

  it('watch reports created, changed and deleted files', async () => {
    mkdirSync(p('watched'));
    const seen: ChangeEvent[] = [];
    const w = fsx.watch(ENV, p('watched'), true, (evs) => seen.push(...evs));
    try {
      const target = p('watched', 'new.txt');
      // The watch is set up asynchronously: poke until an event for the file arrives.
      await waitFor(() => (writeFileSync(target, String(Date.now())), seen.some((e) => e.path === target)), { what: 'an event for the new file', interval: 100 });
      assert.ok(seen.some((e) => e.path === target && (e.type === FileChangeType.Created || e.type === FileChangeType.Changed)));
      rmSync(target);
      await waitFor(() => seen.some((e) => e.path === target && e.type === FileChangeType.Deleted), { what: 'the delete event' });
      assert.ok(seen.every((e) => e.environment === ENV));
    } finally {
      w.dispose();
    }
  });
});
