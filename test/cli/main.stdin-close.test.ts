// The CLI's --exit-on-stdin-close and --linux-sandbox-pid-namespace flags (src/cli/main.ts), as
// real processes: bad values exit 2 as the reference's do; a websocket server with
// --exit-on-stdin-close exits 0 once its stdin pipe is closed (or at once on /dev/null) and its
// children go with it, one without the flag keeps serving. The reference (every version) accepts
// --exit-on-stdin-close only with --remote/--environment-id (a registration mode ours has not):
// there it is observed against a registration endpoint that never answers; with a websocket
// listener it refuses the flag (exit 2) where ours honours it. A missing reference binary skips
// only its half.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, openSync, closeSync } from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import { test, type TestContext } from 'node:test';
import { connectWebSocket } from '../../src/client/connect';
import { cliPath, echoThrough, exitOf, startCli, startSleeper } from '../support/cli';
import { isAlive } from '../support/process';
import { referenceEnv, referenceOrSkip, referenceVersions } from '../support/reference';
import { waitFor } from '../support/wait';

if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` before the CLI tests`);

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const ours = (args: string[]) => spawnSync(process.execPath, [cliPath, ...args], { encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });

test('cli: --linux-sandbox-pid-namespace and --exit-on-stdin-close refuse bad use with exit 2, as the reference', async (t) => {
  const cases: { args: string[]; ours: RegExp; reference?: RegExp }[] = [
    { args: ['--linux-sandbox-pid-namespace', 'bogus'], ours: /invalid --linux-sandbox-pid-namespace "bogus": expected isolate or inherit/, reference: /invalid value 'bogus'.*expected 'isolate' or 'inherit'/ },
    { args: ['--linux-sandbox-pid-namespace', 'ISOLATE'], ours: /expected isolate or inherit/, reference: /invalid value 'ISOLATE'/ },
    { args: ['--linux-sandbox-pid-namespace='], ours: /--linux-sandbox-pid-namespace requires a value/, reference: /invalid value ''/ },
    { args: ['--linux-sandbox-pid-namespace'], ours: /--linux-sandbox-pid-namespace requires a value/, reference: /a value is required/ },
    { args: ['--linux-sandbox-pid-namespace', 'inherit', '--linux-sandbox-pid-namespace', 'isolate'], ours: /can be given only once/, reference: /cannot be used multiple times/ },
    { args: ['--exit-on-stdin-close=true'], ours: /--exit-on-stdin-close takes no value/, reference: /unexpected value 'true'/ },
    // The reference wants --remote for it; ours wants a websocket listener (stdio already ends with its input).
    { args: ['--listen', 'stdio', '--exit-on-stdin-close'], ours: /--exit-on-stdin-close needs a websocket listener/, reference: /--remote <URL>/ },
    { args: ['--detach', '--exit-on-stdin-close'], ours: /cannot be used with --detach/ },
    { args: ['--detach', '--linux-sandbox-pid-namespace', 'inherit'], ours: /cannot be used with --detach/ },
  ];
  const withListen = (args: string[]) => (args.includes('--listen') ? args : ['--listen', 'ws://127.0.0.1:0', ...args]);
  for (const c of cases) {
    const r = ours(withListen(c.args));
    assert.equal(r.status, 2, `ours ${c.args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, c.ours, c.args.join(' '));
    assert.equal(r.stdout, '');
  }
  const help = ours(['--help']).stdout;
  assert.match(help, /--exit-on-stdin-close/);
  assert.match(help, /--linux-sandbox-pid-namespace MODE/);
  for (const version of referenceVersions()) {
    const bin = referenceOrSkip(version, t);
    if (!bin) continue;
    for (const c of cases.filter((x) => x.reference)) {
      const r: ReturnType<typeof ours> = spawnSync(bin, ['exec-server', ...withListen(c.args)], { encoding: 'utf8', timeout: 30_000, env: referenceEnv(version), stdio: ['ignore', 'pipe', 'pipe'] });
      assert.equal(r.status, 2, `reference ${version} ${c.args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, c.reference!, `reference ${version} ${c.args.join(' ')}`);
    }
    // Where ours differs: the reference has --exit-on-stdin-close for its --remote registration only.
    const ws = spawnSync(bin, ['exec-server', '--listen', 'ws://127.0.0.1:0', '--exit-on-stdin-close'], { encoding: 'utf8', timeout: 30_000, env: referenceEnv(version), stdio: ['ignore', 'pipe', 'pipe'] });
    assert.equal(ws.status, 2, `reference ${version}: ${ws.stderr}`);
    assert.match(ws.stderr, /required arguments were not provided:[\s\S]*--environment-id[\s\S]*--remote/);
  }
});

test('cli: --exit-on-stdin-close — the stdin pipe closed: exit 0, its children killed; /dev/null: exits at once; without the flag a closed stdin changes nothing', async (t) => {
  const server = await startCli(['--exit-on-stdin-close'], { t, stdin: 'pipe' });
  const exited = exitOf(server.child);
  const client = await connectWebSocket(server.url, { reconnect: false });
  t.after(() => client.close().catch(() => {}));
  const pid = await startSleeper(client);
  server.child.stdin!.write('ignored\n'); // read and dropped
  await client.startProcess({ argv: ['true'], cwd: os.tmpdir(), env: ENV }).then((h) => h.exited);
  assert.equal(server.child.exitCode, null, 'input on stdin does not stop it');
  server.child.stdin!.end();
  assert.equal(await exited, 0);
  await waitFor(() => !isAlive(pid), { what: `child ${pid} killed` });
  assert.match(server.stderr(), /shutting down \(end of standard input \(--exit-on-stdin-close\)\)/);

  // stdin already at its end: the URL line, then exit 0 (the reference exits 0 at once too).
  const devnull = await startCli(['--exit-on-stdin-close'], { t });
  assert.equal(await exitOf(devnull.child), 0);
  assert.equal(devnull.stdout(), `${devnull.url}\n`);

  // No flag: stdin's end is not a reason to stop (the default behaviour is unchanged).
  const plain = await startCli([], { t, stdin: 'pipe' });
  plain.child.stdin!.end();
  const c2 = await connectWebSocket(plain.url, { reconnect: false });
  t.after(() => c2.close().catch(() => {}));
  const r = await echoThrough(c2, 'still-serving');
  assert.equal(r.code, 0);
  assert.equal(r.out, 'still-serving\n');
  assert.equal(plain.child.exitCode, null);
});

test('reference: --exit-on-stdin-close (with --remote) exits 0 once its stdin pipe closes, at once on /dev/null; CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE=true as the flag', async (t) => {
  for (const version of referenceVersions()) {
    const bin = referenceOrSkip(version, t);
    if (!bin) continue;
    // A registration endpoint that takes the request and never answers: the reference waits there.
    const registrations: string[] = [];
    const endpoint = http.createServer((req) => void registrations.push(`${req.method} ${req.url}`));
    await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
    t.after(() => endpoint.closeAllConnections());
    t.after(() => endpoint.close());
    const base = `http://127.0.0.1:${(endpoint.address() as import('node:net').AddressInfo).port}`;
    // Any API key gets it past its login check to the registration request.
    const env = { ...referenceEnv(version), CODEX_API_KEY: 'sk-not-a-key' };
    const args = ['exec-server', '--remote', base, '--environment-id', 'env1', '--exit-on-stdin-close'];
    // viaEnv: CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE=true instead of the flag (what ours reads too).
    const start = (stdin: 'pipe' | number, viaEnv = false) => {
      const child = spawn(bin, viaEnv ? args.slice(0, -1) : args, { stdio: [stdin, 'ignore', 'pipe'], env: viaEnv ? { ...env, CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE: 'true' } : env });
      t.after(() => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')));
      let err = '';
      child.stderr!.on('data', (d) => (err += d));
      return { child, exited: exitOf(child), stderr: () => err };
    };
    const piped = start('pipe');
    await waitFor(() => registrations.length > 0 || piped.child.exitCode !== null, { what: `reference ${version}: its registration request`, detail: piped.stderr });
    assert.deepEqual(registrations, ['POST /cloud/environment/env1/register'], piped.stderr());
    assert.equal(piped.child.exitCode, null);
    piped.child.stdin!.end();
    assert.equal(await piped.exited, 0, `reference ${version}: ${piped.stderr()}`);
    const fd = openSync('/dev/null', 'r');
    const devnull = start(fd);
    closeSync(fd);
    assert.equal(await devnull.exited, 0, `reference ${version} on /dev/null: ${devnull.stderr()}`);
    const seen = registrations.length;
    const viaEnv = start('pipe', true);
    await waitFor(() => registrations.length > seen || viaEnv.child.exitCode !== null, { what: `reference ${version}: its registration request (env)`, detail: viaEnv.stderr });
    assert.equal(viaEnv.child.exitCode, null, viaEnv.stderr());
    viaEnv.child.stdin!.end();
    assert.equal(await viaEnv.exited, 0, `reference ${version} with CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE=true: ${viaEnv.stderr()}`);
  }
});
