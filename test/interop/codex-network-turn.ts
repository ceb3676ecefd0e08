// Shared by codex-network*.test.ts (one file per reference version: a file must finish within the
// runner's 120 s). A real Codex agent turn with a network allowlist (docs/security.md, "Managed network"): the unmodified `codex app-server`
// with the stand-in model, workspace-write with network access and Codex's managed network proxy
// turned on (`[features.network_proxy]`, REFERENCE-CAPABILITIES §1.1 form b) allowing `localhost`
// and denying `vm`. Through the reference exec-server and through ours, for every reference
// version (0.169 and 0.171: that version's Codex against that version's exec-server, and the same
// Codex against ours), the turn must be the same: each command sandboxed with a proxy launch, no
// approval asked, the allowed loopback-served name reachable through the proxy, a name not on the
// list and a denied one refused with the reference's 403, and a program that ignores the proxy
// variables gets nowhere. Names resolve through /etc/hosts (localhost, runsc, vm → 127.0.0.1 on
// the test machines; the reference uses the system resolver), never a real lookup.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { startCodexAppServer } from '../support/codex/codex-app-server';
import { startMockModel } from '../support/codex/mock-model';
import { startWsRecorder } from '../support/codex/ws-recorder';
import { cliPath, ourServer, referenceBinary, referenceServerOf, startWsServer, type ServerCommand } from '../support/reference';
import { describe, test } from 'node:test';

if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` before the interop tests`);

const cacheDir = process.env.EXEC_SERVER_CACHE ?? path.join(os.homedir(), '.cache', 'exec-server');

export function hostsMapToLoopback(names: string[]): boolean {
  try {
    const lines = readFileSync('/etc/hosts', 'utf8').split('\n').map((l) => l.replace(/#.*/, '').trim().split(/\s+/));
    return names.every((n) => lines.some((f) => f[0] === '127.0.0.1' && f.slice(1).includes(n)));
  } catch {
    return false;
  }
}

export interface NetOutcome {
  sandboxes: string[];
  proxyLaunches: number;
  sandboxTypes: string[];
  allowed: boolean;
  notListed: string;
  denied: string;
  direct: string;
  originSaw: string[];
  approvals: string[];
  turnStatus: string;
  /** Launches that asked for transparent TCP (Codex 0.171's `transparent_tcp = true`). */
  transparentLaunches: number;
  /** With transparent TCP: curl ignoring the proxy, to a name only the sandbox's resolver answers. */
  unlisted?: string;
}

const CONFIG = [
  '[sandbox_workspace_write]',
  'network_access = true',
  '',
  '[features.network_proxy]',
  'enabled = true',
  'domains = { "localhost" = "allow", "vm" = "deny" }',
].join('\n');

export async function networkTurn(server: ServerCommand, codexVersion: string, transparent = false): Promise<NetOutcome> {
  const base = path.join(cacheDir, `codex-net-${randomBytes(4).toString('hex')}`);
  const ws = path.join(base, 'work');
  mkdirSync(ws, { recursive: true });
  const cleanups: (() => Promise<void>)[] = [];
  const originSaw: string[] = [];
  const secret = `body-${randomBytes(4).toString('hex')}`;
  try {
    const origin = http.createServer((req, res) => {
      originSaw.push(req.url ?? '');
      res.end(`${secret} ${req.url}\n`);
    });
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
    cleanups.unshift(() => new Promise((r) => origin.close(() => r())));
    const port = (origin.address() as AddressInfo).port;
    const cmds: Record<string, string> = {
      allowed: `curl -s http://localhost:${port}/allowed`,
      notListed: `curl -s -i http://runsc:${port}/not-listed | head -1`,
      denied: `curl -s -i http://vm:${port}/denied | head -1`,
      direct: `curl -s --noproxy '*' http://127.0.0.1:${port}/direct; echo "curl rc=$?"; (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo TCP-REACHED || echo tcp-refused`,
    };
    // Reset while connecting or once reading, whichever the load makes it: one outcome. bash's
    // /dev/tcp, not curl: bash's blocking connect names the error (a reset that comes before
    // curl's non-blocking connect is looked at reads "Couldn't connect to server", as a refusal would).
    if (transparent) cmds.unlisted = `o=$( (exec 3<>/dev/tcp/unlisted.test/${port} && printf 'GET /transparent HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3) 2>&1 ); case "$o" in *"reset by peer"*) echo RESET;; *) echo "not reset: $o";; esac`;
    const token = randomBytes(16).toString('hex');
    const srv = await startWsServer(server, ['--ws-auth', 'capability-token', '--ws-token-sha256', createHash('sha256').update(token).digest('hex')]);
    cleanups.unshift(() => srv.stop());
    const rec = await startWsRecorder(srv.url);
    cleanups.unshift(() => rec.stop());
    const model = await startMockModel({
      script: Object.entries(cmds).map(([k, c]) => ({ exec_command: c, callId: `c_${k}` })),
      finalText: 'all done',
    });
    cleanups.unshift(() => model.stop());
    const codex = await startCodexAppServer({
      codexBinary: referenceBinary(codexVersion),
      modelBaseUrl: model.baseUrl,
      execServerUrl: rec.url,
      token,
      workspace: ws,
      sandboxMode: 'workspace-write',
      extraConfig: transparent ? `${CONFIG}\ntransparent_tcp = true` : CONFIG,
    });
    cleanups.unshift(() => codex.stop());
    const threadId = await codex.startThread();
    const turn = await codex.runTurn(threadId, 'run the scripted steps', 120_000);
    const out = (k: string) => model.toolOutputs().get(`c_${k}`)?.output ?? '<no output>';
    const starts = rec.calls('process/start').filter((c) => Object.values(cmds).some((cmd) => c.params.argv?.[2] === cmd));
    const ctx = `[${server.name}, codex ${codexVersion}]`;
    assert.equal(turn.status, 'completed', `${ctx} ${JSON.stringify(turn.error)}`);
    assert.equal(model.remaining(), 0, `${ctx} script not used up`);
    const firstLine = (s: string) => (/HTTP\/1\.1 \d+[^\r\n]*/.exec(s)?.[0] ?? s.split('\n')[0]).trim();
    return {
      sandboxes: starts.map((c) => c.params.sandbox?.permissions?.type ?? 'none'),
      proxyLaunches: starts.filter((c) => c.params.networkProxy?.proxy?.enabled === true).length,
      sandboxTypes: starts.map((c) => c.result?.sandboxType ?? `error ${c.error?.message}`),
      allowed: out('allowed').includes(`${secret} /allowed`),
      notListed: firstLine(out('notListed')),
      denied: firstLine(out('denied')),
      direct: /TCP-REACHED/.test(out('direct')) || out('direct').includes(secret) ? 'reached' : 'refused',
      originSaw: [...originSaw].sort(),
      approvals: turn.approvals.map((a) => a.method),
      turnStatus: turn.status,
      transparentLaunches: starts.filter((c) => c.params.networkProxy?.proxy?.transparentTcp === true).length,
      ...(transparent ? { unlisted: out('unlisted').trim().split('\n').at(-1) } : {}),
    };
  } finally {
    for (const c of cleanups) await c().catch(() => {});
    rmSync(base, { recursive: true, force: true });
  }
}

const namesOk = hostsMapToLoopback(['localhost', 'runsc', 'vm']);

/** The agent turn through `version`'s reference exec-server and through ours, with that version's Codex. */
export function describeNetworkTurn(version: string, transparent = false): void {
  const n = transparent ? 5 : 4;
  describe(`codex ${version} agent turn with a network allowlist (managed proxy${transparent ? ', transparent TCP' : ''})`, { timeout: 300_000, skip: namesOk ? false : '/etc/hosts does not map localhost, runsc and vm to 127.0.0.1' }, () => {
    const outcomes = new Map<string, NetOutcome>();
    const reference = referenceServerOf(version);
    for (const server of [reference, ourServer]) {
      test(`through ${server.name}`, async () => {
        const o = await networkTurn(server, version, transparent);
        outcomes.set(server.name, o);
        if (process.env.CODEX_AGENT_TEST_DUMP) console.log(server.name, version, JSON.stringify(o));
        assert.deepEqual(o.sandboxes, Array(n).fill('managed'), 'every command sandboxed');
        assert.equal(o.proxyLaunches, n, 'every command with an executor-local proxy launch');
        assert.equal(o.transparentLaunches, transparent ? n : 0, 'Codex asks for transparent TCP exactly when configured to');
        assert.deepEqual(o.sandboxTypes, Array(n).fill('linuxSeccomp'));
        assert.deepEqual(o.approvals, [], 'no approval asked');
        assert.equal(o.allowed, true, 'the allowed name is reachable through the proxy');
        assert.equal(o.notListed, 'HTTP/1.1 403 Forbidden');
        assert.equal(o.denied, 'HTTP/1.1 403 Forbidden');
        assert.equal(o.direct, 'refused', 'a program ignoring the proxy variables got through');
        assert.deepEqual(o.originSaw, ['/allowed'], 'the origin saw only the allowed request');
        // Carried into the policy (not on the list: reset), where without transparent TCP it has no route.
        if (transparent) assert.equal(o.unlisted, 'RESET');
      });
    }
    test(`ours has the same outcome as ${reference.name}`, () => {
      const r = outcomes.get(reference.name);
      const o = outcomes.get(ourServer.name);
      assert.ok(r && o, 'both turns ran');
      assert.deepEqual(o, r);
    });
  });
}
