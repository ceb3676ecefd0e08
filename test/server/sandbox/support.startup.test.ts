// The built CLI (dist/cli.js) over stdio: the sandbox probe runs once at startup and is
// logged; environment/info capabilities say what is enforced; with an unusable bubblewrap
// (EXEC_SERVER_BWRAP pointing at a missing file) a managed process/start is refused with
// -32600 naming the cause and nothing runs. Run `npm run build` first.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { cliPath } from '../../support/reference';
import { tmpDir, uri } from '../../support/server';

if (!fs.existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` before this test`);

/** Sends JSON lines to a fresh `exec-server --listen stdio`, returns the responses by id and its stderr. */
function session(env: Record<string, string>, requests: object[]): Promise<{ byId: Map<number, any>; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath, '--listen', 'stdio'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
    let out = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const byId = new Map<number, any>();
      for (const line of out.split('\n').filter(Boolean)) {
        const m = JSON.parse(line);
        if (m.id !== undefined) byId.set(m.id, m);
      }
      if (requests.every((r) => byId.has((r as { id: number }).id))) {
        child.stdin.end();
        child.once('close', () => resolve({ byId, stderr }));
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    const timer = setTimeout(() => (child.kill(), reject(new Error(`timeout; stderr: ${stderr}; out: ${out}`))), 20_000);
    child.once('close', () => clearTimeout(timer));
    child.stdin.write(JSON.stringify({ id: 0, method: 'initialize', params: { clientName: 't' } }) + '\n');
    child.stdin.write(JSON.stringify({ method: 'initialized', params: {} }) + '\n');
    for (const r of requests) child.stdin.write(JSON.stringify(r) + '\n');
  });
}

const readOnly = (dir: string) => ({
  permissions: { type: 'managed', file_system: { type: 'restricted', entries: [{ path: { type: 'special', value: { kind: 'root' } }, access: 'read' }] }, network: 'restricted' },
  cwd: uri(dir),
  workspaceRoots: [uri(dir)],
  windowsSandboxLevel: 'disabled',
});

test('sandbox startup: usable bwrap is logged and advertised; a managed process runs confined', async () => {
  const dir = tmpDir();
  const { byId, stderr } = await session({}, [
    { id: 1, method: 'environment/info', params: null },
    { id: 2, method: 'process/start', params: { processId: 'p', argv: ['true'], cwd: uri(dir), env: {}, tty: false, sandbox: readOnly(dir) } },
  ]);
  assert.match(stderr, /managed sandboxes: enforced with \S*bwrap/);
  assert.equal(byId.get(0).result.environmentInfo.capabilities.managedSandboxProcesses, true);
  assert.deepEqual(
    [byId.get(1).result.capabilities.managedSandboxProcesses, byId.get(1).result.capabilities.managedSandboxFs, byId.get(1).result.capabilities.managedSandboxSeccomp],
    [true, true, true],
  );
  assert.deepEqual(byId.get(2).result, { processId: 'p', sandboxType: 'linuxSeccomp' });
  fs.rmSync(dir, { recursive: true, force: true });
});

test('sandbox startup: missing bwrap → logged at startup, advertised false, -32600 naming the cause, nothing runs', async () => {
  const dir = tmpDir();
  const marker = path.join(dir, 'ran-unconfined');
  const { byId, stderr } = await session({ EXEC_SERVER_BWRAP: path.join(dir, 'no-bwrap-here') }, [
    { id: 1, method: 'environment/info', params: null },
    {
      id: 2,
      method: 'process/start',
      params: { processId: 'p', argv: ['/bin/sh', '-c', `touch ${marker}`], cwd: uri(dir), env: {}, tty: false, sandbox: readOnly(dir) },
    },
    { id: 3, method: 'process/start', params: { processId: 'q', argv: ['true'], cwd: uri(dir), env: {}, tty: false, sandbox: null } },
  ]);
  assert.match(stderr, /WARN exec-server: managed sandboxes: unavailable: bubblewrap not found at .*no-bwrap-here/);
  assert.equal(byId.get(1).result.capabilities.managedSandboxProcesses, false);
  assert.equal(byId.get(2).error.code, -32600);
  assert.match(byId.get(2).error.message, /bubblewrap not found at .*no-bwrap-here .*install the Debian package `bubblewrap`/);
  assert.deepEqual(byId.get(3).result, { processId: 'q', sandboxType: 'none' });
  assert.equal(fs.existsSync(marker), false);
  fs.rmSync(dir, { recursive: true, force: true });
});
