// Environment lifecycle: the built-in Local environment, adding the project's CLI as a remote
// environment, running on it, surviving a restart of the remote server, and removing it.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { afterAll, test } from './framework';
import { RemoteServer } from './remote-server';
import { assert, assertEqual, expectReject, productApi, uniqueName, waitFor, within } from './util';

export const LOCAL = 'Local';
export const remote = { name: '', server: new RemoteServer() };

/** Name of the remote environment; fails clearly when its setup test did not pass. */
export function remoteName(): string {
  if (!remote.name) throw new Error('the remote environment was not set up (see the "remote: addEnvironment" test)');
  return remote.name;
}

function envState(api: Awaited<ReturnType<typeof productApi>>, name: string) {
  return api.getEnvironments().find((e) => e.name === name);
}

/** The parent pid of a process started in `env`: proves which server started it. */
export async function parentPid(env: string): Promise<number> {
  const api = await productApi();
  const r = await api.run(env, ['/bin/sh', '-c', 'echo $PPID']);
  assertEqual(r.exitCode, 0, 'exit code of echo $PPID');
  return Number(r.stdout.trim());
}

export function registerExtensionTests(): void {
  test('extension: activates and exports an API with a version and the Local environment', async () => {
    const api = await productApi();
    assert(typeof api.version === 'string' && /^\d+\.\d+\.\d+/.test(api.version), `API version is semver (got ${api.version})`);
    const ext = vscode.extensions.getExtension('exec-server.exec-server')!;
    assertEqual(api.version, ext.packageJSON.version, 'API version equals the extension version');
    const names = api.getEnvironments().map((e) => e.name);
    assert(names.includes(LOCAL), `getEnvironments() lists ${LOCAL} (got ${JSON.stringify(names)})`);
    // Every contributed command (= the command table, test/extension/common/ui/command-ids.package.test.ts) has a handler.
    const registered = await vscode.commands.getCommands(true);
    const contributed = (ext.packageJSON.contributes.commands as { command: string }[]).map((c) => c.command);
    assert(contributed.length >= 17, `package.json contributes the commands (got ${contributed.length})`);
    for (const c of contributed) assert(registered.includes(c), `command ${c} is registered`);
  });

  test('extension: the installed product holds its bundle and node-pty, and no test code', async () => {
    const ext = vscode.extensions.getExtension('exec-server.exec-server')!;
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else files.push(path.relative(ext.extensionPath, p));
      }
    };
    walk(ext.extensionPath);
    for (const f of ['dist/extension.js', `node_modules/node-pty/prebuilds/${process.platform}-${process.arch}/pty.node`]) {
      assert(files.includes(f), `the installed extension contains ${f}`);
    }
    const testish = files.filter((f) => /(^|\/)(test|tests|e2e|suite|runner-ext)\/|\.test\.|\.spec\./.test(f) || /^(src|out)\//.test(f));
    assertEqual(testish, [], 'test or source files in the installed product extension');
    assert(!readFileSync(path.join(ext.extensionPath, 'dist/extension.js'), 'utf8').includes('registerWithMocha'), 'the product bundle does not contain the e2e suite');
  });

  test('extension: commands given an unknown environment fail with an error naming it', async () => {
    for (const [command, args] of [
      ['execServer.newTerminal', { environment: 'no-such-env' }],
      ['execServer.runCommand', { environment: 'no-such-env', command: 'true' }],
      ['execServer.connect', { environment: 'no-such-env' }],
    ] as const) {
      const err = await expectReject(command, () => Promise.resolve(vscode.commands.executeCommand(command, args)));
      assert(/unknown environment/i.test(err.message) && err.message.includes('no-such-env'), `${command}: clear error (got "${err.message}")`);
    }
  });
}

export function registerRemoteSetupTest(): void {
  test('remote: addEnvironment (url + token) + connect to the project CLI server makes it a connected environment', async () => {
    const url = await remote.server.start(0);
    const name = uniqueName('e2e-remote');
    await vscode.commands.executeCommand('execServer.addEnvironment', { name, url, token: remote.server.token });
    await vscode.commands.executeCommand('execServer.connect', { environment: name });
    const api = await productApi();
    const env = await waitFor(`environment ${name} connected`, () => {
      const e = envState(api, name);
      return e && (e.state === undefined || e.state === 'connected') ? e : undefined;
    });
    assert(env, 'environment listed');
    assertEqual(await parentPid(name), remote.server.pid, 'processes of the remote environment are children of the CLI server');
    remote.name = name;
  }, 90_000, { setup: true });
  test('remote: connecting with a wrong token fails with an error naming the token problem', async () => {
    remoteName();
    const name = uniqueName('e2e-badtoken');
    await vscode.commands.executeCommand('execServer.addEnvironment', { name, url: remote.server.url, token: 'wrong-token' });
    try {
      const err = await expectReject('connect with a wrong token', () =>
        Promise.resolve(vscode.commands.executeCommand('execServer.connect', { environment: name })));
      assert(/token|401|unauthori/i.test(err.message), `error mentions the token (got "${err.message}")`);
      const api = await productApi();
      assert(envState(api, name)?.state !== 'connected', 'the environment is not connected');
    } finally {
      await vscode.commands.executeCommand('execServer.removeEnvironment', { name }).then(undefined, () => {});
    }
  });
  afterAll(async () => {
    if (remote.name) await vscode.commands.executeCommand('execServer.removeEnvironment', { name: remote.name }).then(undefined, () => {});
  });
}

export function registerRemoteLifecycleTests(): void {
  test('remote: the environment reconnects after its server restarts on the same port', async () => {
    const name = remoteName();
    const port = remote.server.port;
    const oldPid = remote.server.pid;
    await remote.server.stop();
    await remote.server.start(port);
    assertEqual(remote.server.port, port, 'restarted server port');
    const api = await productApi();
    // Each attempt is bounded: a request sent while the client is still recovering may hang.
    const pid = await waitFor('a process to run on the restarted server', () => within(parentPid(name), 10_000), 60_000, 1_000);
    assert(pid !== oldPid, 'the process ran on the new server, not the old one');
    assertEqual(pid, remote.server.pid, 'processes are children of the restarted CLI server');
    assert(['connected', undefined].includes(envState(api, name)?.state as string | undefined), 'state is connected again');
  }, 120_000);

  test('remote: disconnect then removeEnvironment drops it from getEnvironments()', async () => {
    const name = remoteName();
    const api = await productApi();
    await vscode.commands.executeCommand('execServer.disconnect', { environment: name });
    await waitFor(`${name} no longer connected`, () => envState(api, name)?.state !== 'connected');
    await vscode.commands.executeCommand('execServer.removeEnvironment', { name });
    await waitFor(`${name} removed`, () => !envState(api, name));
    remote.name = '';
    const names = api.getEnvironments().map((e) => e.name);
    assert(names.includes(LOCAL), 'Local stays listed');
  });
}
