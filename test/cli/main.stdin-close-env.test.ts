// The CLI's CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE (src/cli/main.ts, src/cli/detach.ts), as real
// processes: the reference's environment form of --exit-on-stdin-close. Measured on the reference
// (0.169.0, 0.171.0): exactly `true` or `false`, read only when the flag is absent; `1`, `0`, `yes`,
// `TRUE`, empty are refused with exit 2 in clap's words. Ours reads it the same way; `true` gives a
// websocket server that exits 0 once its stdin pipe closes, its children killed; `false` changes
// nothing. The reference half checks the same values are refused or taken (its `true` with a
// websocket listener is refused as its flag is there, so the closing itself is observed for ours).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test, type TestContext } from 'node:test';
import { connectWebSocket } from '../../src/client/connect';
import { cliPath, echoThrough, exitOf, startCli, startSleeper } from '../support/cli';
import { isAlive } from '../support/process';
import { referenceEnv, referenceOrSkip, referenceVersions } from '../support/reference';
import { waitFor } from '../support/wait';

if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` before the CLI tests`);

const VAR = 'CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE';
const withVar = (base: NodeJS.ProcessEnv, v: string | undefined): NodeJS.ProcessEnv => {
  const env = { ...base };
  delete env[VAR];
  if (v !== undefined) env[VAR] = v;
  return env;
};
// Only the refusals are run to their end; a taken value starts a server, stopped after 3 s by spawnSync's timeout.
const run = (command: string, args: string[], env: NodeJS.ProcessEnv) =>
  spawnSync(command, args, { encoding: 'utf8', timeout: 3_000, killSignal: 'SIGKILL', env, stdio: ['ignore', 'pipe', 'pipe'] });
const ours = (args: string[], v: string | undefined) => run(process.execPath, [cliPath, ...args], withVar(process.env, v));

// value → the reference's refusal (clap), ours carries the same words and the variable's name.
const REFUSED: [string, RegExp][] = [
  ['1', /invalid value '1' for '--exit-on-stdin-close'[\s\S]*possible values: true, false/],
  ['0', /invalid value '0' for '--exit-on-stdin-close'[\s\S]*possible values: true, false/],
  ['yes', /invalid value 'yes' for '--exit-on-stdin-close'/],
  ['TRUE', /invalid value 'TRUE' for '--exit-on-stdin-close'/],
  [' true', /invalid value ' true' for '--exit-on-stdin-close'/],
  ['', /a value is required for '--exit-on-stdin-close' but none was supplied/],
];
const WS = ['--listen', 'ws://127.0.0.1:0'];

test(`cli: ${VAR} other than true/false is refused with exit 2 in the reference's words; the flag given, it is not read`, async (t) => {
  for (const [v, words] of REFUSED) {
    const r = ours(WS, v);
    assert.equal(r.status, 2, `ours ${JSON.stringify(v)}: ${r.stderr}`);
    assert.match(r.stderr, words);
    assert.match(r.stderr, new RegExp(VAR));
    assert.equal(r.stdout, '');
  }
  // true where the flag is refused: refused the same way, naming the variable.
  for (const args of [['--listen', 'stdio'], ['--detach']]) {
    const r = ours(args, 'true');
    assert.equal(r.status, 2, `ours ${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`${VAR}=true: --exit-on-stdin-close`));
  }
  // false (and, with the flag, even a bad value) is taken: the server starts and prints its URL.
  assert.match(ours(WS, 'false').stdout, /^ws:\/\/127\.0\.0\.1:\d+\n$/);
  assert.equal(ours(['--listen', 'stdio'], 'false').status, 0, 'stdio with false: ends at the end of its input, code 0');
  for (const version of referenceVersions()) {
    const bin = referenceOrSkip(version, t);
    if (!bin) continue;
    const ref = (args: string[], v: string | undefined) => run(bin, ['exec-server', ...args], withVar(referenceEnv(version), v));
    for (const [v, words] of REFUSED) {
      const r = ref(WS, v);
      assert.equal(r.status, 2, `reference ${version} ${JSON.stringify(v)}: ${r.stderr}`);
      assert.match(r.stderr, words, `reference ${version} ${JSON.stringify(v)}`);
    }
    assert.match(ref(WS, 'false').stdout, /^ws:\/\/127\.0\.0\.1:\d+\n$/, `reference ${version} with false serves`);
    assert.equal(ref(['--listen', 'stdio'], 'false').status, 0);
    // The flag on the command line: a bad value is not read (what fails is the flag's own --remote requirement).
    const flagged = ref([...WS, '--exit-on-stdin-close'], '1');
    assert.equal(flagged.status, 2);
    assert.doesNotMatch(flagged.stderr, /invalid value/);
    // true is the flag: refused with a websocket listener, as the flag is there (ours honours both).
    const truthy = ref(WS, 'true');
    assert.equal(truthy.status, 2);
    assert.match(truthy.stderr, /required arguments were not provided:[\s\S]*--remote/);
  }
  const flagged = ours([...WS, '--exit-on-stdin-close'], '1');
  assert.match(flagged.stdout, /^ws:\/\/127\.0\.0\.1:\d+\n$/, `ours: the flag given, ${VAR}=1 is not read: ${flagged.stderr}`);
});

test(`cli: ${VAR}=true — the stdin pipe closed: exit 0, its children killed; false: a closed stdin changes nothing`, async (t) => {
  const server = await startCli([], { t, stdin: 'pipe', env: withVar(process.env, 'true') });
  const exited = exitOf(server.child);
  const client = await connectWebSocket(server.url, { reconnect: false });
  t.after(() => client.close().catch(() => {}));
  const pid = await startSleeper(client);
  server.child.stdin!.end();
  assert.equal(await exited, 0, server.stderr());
  await waitFor(() => !isAlive(pid), { what: `child ${pid} killed` });
  assert.match(server.stderr(), /shutting down \(end of standard input/);

  const plain = await startCli([], { t, stdin: 'pipe', env: withVar(process.env, 'false') });
  plain.child.stdin!.end();
  const c2 = await connectWebSocket(plain.url, { reconnect: false });
  t.after(() => c2.close().catch(() => {}));
  const r2 = await echoThrough(c2, 'still-serving');
  assert.equal(r2.code, 0);
  assert.equal(r2.out, 'still-serving\n');
  assert.equal(plain.child.exitCode, null);
});
