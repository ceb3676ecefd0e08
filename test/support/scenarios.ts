// Client-level scenarios run against several servers: our engine in-process, over a real
// websocket, our built CLI (stdio + websocket) and the reference binary (test/interop).
// Each scenario uses only the public ExecClient surface (plus client.request for error codes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ErrorCodes, RpcError } from '../../src/protocol/errors';
import type { ExecServerClient } from '../../src/client/client';
import type { ProcessHandle } from '../../src/client/api';
import { waitFor } from './wait';

export interface Target {
  client: ExecServerClient;
  close(): Promise<void>;
}

export interface Collected {
  stdout: string;
  stderr: string;
  pty: string;
  seqs: number[];
  exitCode: number;
  closeError?: string;
}

/** Collects everything a handle emits until it closes (bounded). */
export async function collect(h: ProcessHandle, timeoutMs = 60_000): Promise<Collected> {
  const c: Collected = { stdout: '', stderr: '', pty: '', seqs: [], exitCode: NaN };
  h.onOutput((e) => {
    c[e.stream] += Buffer.from(e.data).toString('utf8');
    c.seqs.push(e.seq);
  });
  h.onClose((e) => (c.closeError = e.error));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    h.closed,
    new Promise((_, rej) => (timer = setTimeout(() => rej(new Error(`process ${h.processId} did not close in ${timeoutMs} ms`)), timeoutMs))),
  ]).finally(() => clearTimeout(timer));
  c.exitCode = h.exitCode ?? NaN;
  return c;
}

async function rpcError(p: Promise<unknown>): Promise<RpcError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof RpcError, `expected RpcError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected the call to fail');
}

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' };

/** Registers the scenarios as node:test tests named `<label>: ...`. */
export function defineClientScenarios(label: string, connect: () => Promise<Target>): void {
  const scenario = (name: string, fn: (t: Target, dir: string) => Promise<void>) =>
    test(`${label}: ${name}`, async () => {
      const target = await connect();
      const dir = mkdtempSync(path.join(os.tmpdir(), 'exec-client-'));
      try {
        await fn(target, dir);
      } finally {
        await target.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

  scenario('initialize gives a session id; feature detection matches the initialize result', async ({ client }) => {
    assert.match(client.sessionId, /^[0-9a-f-]{36}$/);
    const hasExt = Array.isArray(client.initializeResult?.extensions);
    assert.equal(client.supports('process/resize'), hasExt && client.initializeResult!.extensions!.includes('process/resize'));
    const info = await client.environmentInfo();
    assert.equal(typeof info.shell.path, 'string');
  });

  scenario('output arrives in seq order, exactly once, with the exit code', async ({ client }, dir) => {
    const h = await client.startProcess({
      argv: ['sh', '-c', 'i=1; while [ $i -le 300 ]; do echo line$i; i=$((i+1)); done; echo done >&2; exit 7'],
      cwd: dir,
      env: ENV,
    });
    const c = await collect(h);
    const expected = Array.from({ length: 300 }, (_, i) => `line${i + 1}`).join('\n') + '\n';
    assert.equal(c.stdout, expected);
    assert.equal(c.stderr, 'done\n');
    assert.equal(c.exitCode, 7);
    assert.equal(await h.exited, 7);
    for (let i = 1; i < c.seqs.length; i++) assert.ok(c.seqs[i] > c.seqs[i - 1], 'seqs increase');
    assert.equal(c.closeError, undefined);
  });

  scenario('the child gets exactly the given environment and cwd', async ({ client }, dir) => {
    const h = await client.startProcess({ argv: ['sh', '-c', 'echo "$FOO|$HOME|$(pwd)"'], cwd: dir, env: { ...ENV, FOO: 'bar baz' } });
    const c = await collect(h);
    assert.equal(c.stdout.trim(), `bar baz||${dir}`);
  });

  scenario('writes reach a pipeStdin process in order; stdinClosed without pipeStdin', async ({ client }, dir) => {
    const cat = await client.startProcess({ argv: ['cat'], cwd: dir, env: ENV, pipeStdin: true });
    let out = '';
    cat.onOutput((e) => (out += Buffer.from(e.data).toString()));
    for (let i = 0; i < 20; i++) assert.equal(await cat.write(`w${i}\n`), 'accepted');
    const expected = Array.from({ length: 20 }, (_, i) => `w${i}\n`).join('');
    await waitFor(() => out === expected, { what: 'cat echo', detail: () => `have ${JSON.stringify(out)}`, timeout: 30_000 });
    if (client.supports('process/closeStdin')) {
      assert.equal(await cat.closeStdin(), true);
      assert.equal(await cat.exited, 0); // EOF → cat exits normally
    } else {
      assert.equal(await cat.closeStdin(), false);
      assert.equal(await cat.terminate(), true);
      await cat.exited;
    }
    await cat.closed;

    const noStdin = await client.startProcess({ argv: ['sleep', '30'], cwd: dir, env: ENV });
    // 'starting' until the server has the child; then a write to a process without stdin is refused.
    const status = await waitFor(async () => {
      const s = await noStdin.write('x');
      return s !== 'starting' && s;
    }, { what: 'write to leave the starting state', interval: 20 });
    assert.equal(status, 'stdinClosed');
    await noStdin.terminate();
    await noStdin.closed;
  });

  scenario('terminate kills a running process (non-zero exit); terminating again answers false', async ({ client }, dir) => {
    const h = await client.startProcess({ argv: ['sleep', '60'], cwd: dir, env: ENV });
    const c = collect(h);
    assert.equal(await h.terminate(), true);
    const exitCode = await h.exited;
    assert.notEqual(exitCode, 0);
    await c;
    assert.equal(await h.terminate(), false);
  });

  scenario('interrupt delivers SIGINT to a shell trap', async ({ client }, dir) => {
    const h = await client.startProcess({
      argv: ['sh', '-c', 'trap "echo got-int; exit 9" INT; echo ready; while :; do sleep 0.05; done'],
      cwd: dir,
      env: ENV,
    });
    let out = '';
    h.onOutput((e) => (out += Buffer.from(e.data).toString()));
    await waitFor(() => out.includes('ready'), { what: 'ready', timeout: 30_000 });
    await h.interrupt();
    assert.equal(await h.exited, 9);
    await h.closed;
    assert.match(out, /got-int/);
  });

  scenario('tty processes see a terminal and report the pty stream; resize follows feature detection', async ({ client }, dir) => {
    const h = await client.startProcess({
      // The short sleep before exit: node-pty can drop the last bytes of a PTY whose child exits
      // right after writing (seen with node-pty 1.1 directly); this scenario is about the client.
      argv: ['sh', '-c', 'if [ -t 0 ]; then echo is-a-tty; fi; read line; echo "got:$line"; sleep 0.2'],
      cwd: dir,
      env: { ...ENV, TERM: 'dumb' },
      tty: true,
    });
    let out = '';
    h.onOutput((e) => {
      assert.equal(e.stream, 'pty');
      out += Buffer.from(e.data).toString();
    });
    await waitFor(() => out.includes('is-a-tty'), { what: 'tty line', timeout: 30_000 });
    assert.equal(await h.resize(30, 100), client.supports('process/resize'));
    assert.equal(await h.write('hello\r'), 'accepted');
    assert.equal(await h.exited, 0);
    await h.closed;
    assert.match(out, /got:hello/);
  });

  scenario('fs round trip with spaces, unicode and URL-special characters in paths', async ({ client }, dir) => {
    const sub = path.join(dir, 'a b', 'ü#%?x');
    await client.fs.createDirectory(sub, true);
    const file = path.join(sub, 'data 100%.bin');
    const bytes = Buffer.from(Array.from({ length: 256 * 4 }, (_, i) => i % 256));
    await client.fs.writeFile(file, bytes);
    assert.deepEqual(Buffer.from(await client.fs.readFile(file)), bytes);
    const st = await client.fs.stat(file);
    assert.equal(st.isFile, true);
    assert.equal(st.size, bytes.length);
    const entries = await client.fs.readDirectory(sub);
    assert.deepEqual(entries.map((e) => [e.fileName, e.isFile]), [['data 100%.bin', true]]);
    assert.equal(await client.fs.canonicalize(file), file);
    const copy = path.join(dir, 'copy.bin');
    await client.fs.copy(file, copy, false);
    assert.deepEqual(Buffer.from(await client.fs.readFile(copy)), bytes);
    const walk = await client.fs.walk(dir, { maxDepth: 8, maxDirectories: 100, maxEntries: 100, followDirectorySymlinks: false });
    assert.ok(walk.entries.some((e) => e.path === file && e.kind === 'file'), JSON.stringify(walk.entries));
    const moved = path.join(dir, 'moved.bin');
    await client.fs.rename(copy, moved);
    assert.deepEqual(Buffer.from(await client.fs.readFile(moved)), bytes);
    assert.equal((await rpcError(client.fs.stat(copy))).code, ErrorCodes.NotFound);
    await client.fs.remove(path.join(dir, 'a b'), { recursive: true });
    assert.equal((await rpcError(client.fs.readFile(file))).code, ErrorCodes.NotFound);
  });

  scenario('createReadStream streams a large file block by block and always closes its handle', async ({ client }, dir) => {
    const file = path.join(dir, 'big.bin');
    const data = Buffer.alloc(3 * 1024 * 1024 + 123);
    for (let i = 0; i < data.length; i += 4096) data[i] = (i / 4096) % 251;
    await client.fs.writeFile(file, data);
    const parts: Buffer[] = [];
    for await (const chunk of client.fs.createReadStream(file, { blockSize: 1024 * 1024 })) parts.push(Buffer.from(chunk));
    assert.equal(parts.length, 4);
    assert.ok(Buffer.concat(parts).equals(data));
    // Small blocks: many read-ahead requests in flight at once, delivered in file order.
    const small: Buffer[] = [];
    for await (const chunk of client.fs.createReadStream(file, { blockSize: 64 * 1024 })) small.push(Buffer.from(chunk));
    assert.equal(small.length, Math.ceil(data.length / (64 * 1024)));
    assert.ok(Buffer.concat(small).equals(data), 'read-ahead stream delivers every byte in order');
    // A file of exactly two blocks: the end is found by the empty or eof block, not by a loss.
    const exact = path.join(dir, 'exact.bin');
    await client.fs.writeFile(exact, data.subarray(0, 2 * 4096));
    const exactParts: Buffer[] = [];
    for await (const chunk of client.fs.createReadStream(exact, { blockSize: 4096 })) exactParts.push(Buffer.from(chunk));
    assert.ok(Buffer.concat(exactParts).equals(data.subarray(0, 2 * 4096)));
    // 140 streams abandoned after one block: the servers allow 128 open handles, so a leak would fail here.
    for (let i = 0; i < 140; i++) {
      for await (const _ of client.fs.createReadStream(file, { blockSize: 16 })) break;
    }
    const empty = path.join(dir, 'empty');
    await client.fs.writeFile(empty, new Uint8Array());
    const none: Uint8Array[] = [];
    for await (const c of client.fs.createReadStream(empty)) none.push(c);
    assert.equal(none.length, 0);
    const missing = client.fs.createReadStream(path.join(dir, 'nope'))[Symbol.asyncIterator]().next();
    assert.equal((await rpcError(missing)).code, ErrorCodes.NotFound);
  });

  scenario('error codes: empty argv, duplicate id, missing binary, unknown method, unknown process', async ({ client }, dir) => {
    const start = (processId: string, argv: string[]) =>
      client.request('process/start', { processId, argv, cwd: new URL(`file://${dir}`).href, env: ENV, tty: false });
    const empty = await rpcError(start('e1', []));
    assert.equal(empty.code, ErrorCodes.InvalidParams);
    assert.equal(empty.message, 'argv must not be empty');
    await start('dup', ['sleep', '30']);
    const dup = await rpcError(start('dup', ['true']));
    assert.equal(dup.code, ErrorCodes.InvalidRequest);
    assert.equal(dup.message, 'process dup already exists');
    await client.request('process/terminate', { processId: 'dup' });
    const missing = await rpcError(start('m1', ['/nonexistent/binary-xyz']));
    assert.equal(missing.code, ErrorCodes.InternalError);
    const unknown = await rpcError(client.request('no/such' as 'environment/status', {} as never));
    assert.equal(unknown.code, ErrorCodes.MethodNotFound);
    assert.equal(unknown.message, 'exec-server stub does not implement `no/such` yet');
    assert.deepEqual(await client.request('process/terminate', { processId: 'never-started' }), { running: false });
    assert.equal((await client.request('process/write', { processId: 'never-started', chunk: '', writeId: 'w' })).status, 'unknownProcess');
  });

  scenario('watch works where supported and rejects clearly (-32601) elsewhere', async ({ client }, dir) => {
    if (!client.supports('fs/watch')) {
      const e = await rpcError(client.fs.watch(dir, false, () => {}));
      assert.equal(e.code, ErrorCodes.MethodNotFound);
      assert.match(e.message, /not supported/);
      return;
    }
    const seen: string[] = [];
    const w = await client.fs.watch(dir, false, (changes) => seen.push(...changes.map((c) => c.path)));
    const f = path.join(dir, 'watched.txt');
    await client.fs.writeFile(f, Buffer.from('x'));
    await waitFor(() => seen.includes(f), { what: `change event for ${f}`, detail: () => `seen ${JSON.stringify(seen)}`, timeout: 30_000 });
    w.dispose();
  });
}
