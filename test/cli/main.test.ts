// The built CLI (dist/cli.js): flags, refusal of non-loopback listen, websocket and stdio
// serving, clean shutdown that kills children. Run `npm run build` first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { connectCommand, connectWebSocket } from '../../src/client/connect';
import { ourServer, startWsServer } from '../support/reference';
import { cliPath, echoThrough, repoRoot, startServerProcess, startSleeper } from '../support/cli';
import { isAlive } from '../support/process';
import { waitFor } from '../support/wait';

if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` before the CLI tests`);

const run = (args: string[]) => spawnSync(process.execPath, [cliPath, ...args], { encoding: 'utf8', timeout: 30_000 });

test('cli: --help and --version', () => {
  const help = run(['--help']);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /--listen URL/);
  const version = run(['--version']);
  assert.equal(version.status, 0);
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
  assert.equal(version.stdout.trim(), `exec-server ${pkg.version}`);
});

test('cli: bad arguments exit 2 with a clear message', () => {
  for (const [args, re] of [
    [['--bogus'], /unknown argument: --bogus/],
    [['--listen'], /--listen requires a value/],
    [['--listen', 'http://127.0.0.1:1'], /unsupported --listen scheme http:/],
    [['--listen', 'ws://127.0.0.1'], /a port is required/],
    [['--max-in-flight', '0'], /positive integer/],
  ] as [string[], RegExp][]) {
    const r = run(args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.equal(r.stdout, '');
  }
});

test('cli: refuses to listen on a non-loopback address', () => {
  for (const addr of ['ws://0.0.0.0:0', 'ws://[::]:0', 'ws://192.0.2.10:0']) {
    const r = run(['--listen', addr]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /refusing to listen on non-loopback address/);
    assert.equal(r.stdout, '');
  }
});

test('cli: a port in use is a clear error with exit 1', async () => {
  const blocker = net.createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as net.AddressInfo).port;
  try {
    const r = run(['--listen', `ws://127.0.0.1:${port}`]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /cannot listen on .*EADDRINUSE/);
  } finally {
    blocker.close();
  }
});

test('cli: default listen prints exactly one ws:// URL line; /readyz; SIGTERM stops it and kills children', async (t) => {
  const server = await startServerProcess(process.execPath, [cliPath], { t }); // no --listen: the default
  const child = server.child;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = server.url;
  assert.match(url, /^ws:\/\/127\.0\.0\.1:\d+$/);
  const status = await new Promise<number>((resolve, reject) =>
    http.get(url.replace('ws://', 'http://') + '/readyz', (res) => resolve(res.statusCode ?? 0)).on('error', reject),
  );
  assert.equal(status, 200);
  const client = await connectWebSocket(url, { reconnect: false });
  const pid = await startSleeper(client);
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  await waitFor(() => !isAlive(pid), { what: `child ${pid} killed` });
  assert.equal(server.stdout(), `${url}\n`, 'stdout carries only the URL line');
  assert.match(server.stderr(), /shutting down \(SIGTERM\)/);
  await client.close();
});

test('cli: SIGINT also shuts down cleanly', async (t) => {
  const server = await startWsServer(ourServer, [], undefined, t);
  const exited = new Promise<number | null>((r) => server.child.once('exit', (code) => r(code)));
  server.child.kill('SIGINT');
  assert.equal(await exited, 0);
  assert.match(server.stderr(), /shutting down \(SIGINT\)/);
});

test('cli: stdio — a session over stdin/stdout; end of input ends it and kills its children', async () => {
  for (const listen of ['stdio', 'stdio://']) {
    const logs: string[] = [];
    const client = await connectCommand(process.execPath, [cliPath, '--listen', listen, '--log-level', 'debug'], {
      log: (_l, m) => logs.push(m),
    });
    const r = await echoThrough(client, 'via-stdio');
    assert.equal(r.code, 0);
    assert.equal(r.out, 'via-stdio\n');
    const pid = await startSleeper(client);
    await client.close();
    await waitFor(() => !isAlive(pid), { what: `child ${pid} killed after end of input` });
    await waitFor(() => logs.some((l) => /new session/.test(l)), { what: 'server stderr forwarded to the client log' });
  }
});
