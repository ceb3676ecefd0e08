// Sandbox first: under the default policy a command that arrives with a managed sandbox that
// writes only inside the workspace (and temp dirs) with the network off runs without a
// question, under real bubblewrap; anything wider asks; a sandbox denial is reported with the
// command; execServer.approval.sandboxAgentCommands sandboxes commands that came without one.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { after, before, describe, it } from 'node:test';
import { RawAgent, removeDir, withAgent as withAgentAt, startEndpoint, startParams, tmpDir, uri, type EndpointFixture } from '../../support/agent-attack';
import { waitFor } from '../../support/wait';

let ws: string;
let outside: string;
before(() => {
  ws = tmpDir('agent-sbx-ws-');
  // Not under /tmp: Codex's sandbox may write the temp directories.
  outside = realpathSync(mkdtempSync(path.join(os.homedir(), '.agent-sbx-home-')));
  writeFileSync(path.join(outside, '.bashrc'), 'original\n');
});
after(() => {
  removeDir(ws);
  removeDir(outside);
});

/** Codex's workspace-write sandbox, verbatim shape (protocol §6b), plus optional extra entries. */
function codexSandbox(extra: unknown[] = [], network: 'restricted' | 'enabled' = 'restricted') {
  return managedSandbox({
    entries: [...workspaceWriteEntries({ protectedSubpaths: ['.git'] }), ...extra],
    cwd: uri(ws),
    network,
  });
}

/** An endpoint whose workspace is `ws` (unless `opts` names other roots) and a handshaken agent. */
const withEndpoint = (opts: Parameters<typeof startEndpoint>[0], body: (f: EndpointFixture, a: RawAgent) => Promise<void>) => withAgentAt({ roots: [ws], ...opts }, body);

/** Waits for the process to close; returns its output and exit facts (process/read). */
async function finish(a: RawAgent, id: string): Promise<{ out: string; exitCode: number | null; sandboxDenied: boolean }> {
  let out = '';
  let after = 0;
  for (let i = 0; i < 200; i++) {
    const r = (await a.send('process/read', { processId: id, afterSeq: after, waitMs: 200 })).result as {
      chunks: { seq: number; chunk: string }[];
      closed: boolean;
      exitCode: number | null;
      sandboxDenied: boolean;
    };
    for (const c of r.chunks) {
      out += Buffer.from(c.chunk, 'base64').toString();
      after = c.seq;
    }
    if (r.closed) return { out, exitCode: r.exitCode, sandboxDenied: r.sandboxDenied };
  }
  throw new Error(`process ${id} did not close`);
}

describe('agent gate: sandbox first', () => {
  it('default policy: a Codex workspace-write command runs without a question; its escape attempt is blocked and reported', async () => {
    process.env.AGENT_GATE_TEST_TOKEN = 'host-secret';
    try {
      await withEndpoint({ policy: 'askOutsideWorkspace', answer: () => 'Deny' }, async (f, a) => {
        const argv = ['/bin/bash', '-lc', `echo inside > ${ws}/made.txt; echo "token=[$AGENT_GATE_TEST_TOKEN]"; echo pwned >> ${outside}/.bashrc`];
        const r = await a.send('process/start', startParams('sbx', argv, ws, {
          sandbox: codexSandbox(),
          envPolicy: { inherit: 'all', ignoreDefaultExcludes: true, exclude: [], set: {}, includeOnly: [] },
        }));
        assert.ok(r.result, JSON.stringify(r));
        assert.equal(f.questions.length, 0, 'no question for a contained sandbox');
        const done = await finish(a, 'sbx');
        assert.equal(existsSync(path.join(ws, 'made.txt')), true, 'writes inside the workspace work');
        assert.match(done.out, /token=\[\]/, 'VS Code’s *TOKEN* variables are not handed to an unasked command');
        assert.notEqual(done.exitCode, 0);
        assert.equal(done.sandboxDenied, true);
        await waitFor(() => f.sandboxDenials.length > 0, { what: 'the sandbox denial to be reported' });
        assert.deepEqual(f.sandboxDenials, [argv], 'the denial is reported with the command');
        assert.equal(readFileSync(path.join(outside, '.bashrc'), 'utf8'), 'original\n');
      });
    } finally {
      delete process.env.AGENT_GATE_TEST_TOKEN;
    }
  });

  it('a sandbox that writes outside the workspace, or allows the network, asks', async () => {
    await withEndpoint({ policy: 'askOutsideWorkspace', answer: () => 'Deny' }, async (f, a) => {
      const wide = await a.send('process/start', startParams('wide', ['/bin/true'], ws, { sandbox: codexSandbox([{ path: { type: 'path', path: uri(outside) }, access: 'write' }]) }));
      assert.match(wide.error?.message ?? '', /not approved/);
      const net = await a.send('process/start', startParams('net', ['/bin/true'], ws, { sandbox: codexSandbox([], 'enabled') }));
      assert.match(net.error?.message ?? '', /not approved/);
      // A TMPDIR pointing outside makes `tmpdir` writable there: outside too.
      const tmp = await a.send('process/start', startParams('tmp', ['/bin/true'], ws, { sandbox: codexSandbox(), env: { TMPDIR: outside } }));
      assert.match(tmp.error?.message ?? '', /not approved/);
      assert.equal(f.questions.length, 3);
      assert.match(f.questions[0].detail, new RegExp(`Sandbox: writes only to .*${outside.replace(/[/.]/g, '\\$&')}`));
    });
  });

  it('alwaysAsk asks even for a contained sandbox', async () => {
    await withEndpoint({ policy: 'alwaysAsk', answer: () => 'Deny' }, async (f, a) => {
      const r = await a.send('process/start', startParams('sbx', ['/bin/true'], ws, { sandbox: codexSandbox() }));
      assert.match(r.error?.message ?? '', /not approved/);
      assert.equal(f.questions.length, 1);
    });
  });

  it('sandboxAgentCommands: a command sent without a sandbox gets the workspace-write one (no question, outside writes blocked)', async () => {
    await withEndpoint({ policy: 'askOutsideWorkspace', sandboxAll: true, answer: () => 'Deny' }, async (f, a) => {
      const r = await a.send('process/start', startParams('plain', ['/bin/sh', '-c', `echo ok > ${ws}/plain.txt; echo pwned >> ${outside}/.bashrc`], ws));
      assert.ok(r.result, JSON.stringify(r));
      assert.equal(f.questions.length, 0);
      const done = await finish(a, 'plain');
      assert.equal(done.sandboxDenied, true);
      assert.equal(existsSync(path.join(ws, 'plain.txt')), true);
    });
  });

  it('host unix sockets (an ssh-agent-like socket in /tmp) are unreachable from a command that ran without a question', async () => {
    const net = await import('node:net');
    const sockDir = tmpDir('ssh-agenttest-');
    const sockPath = path.join(sockDir, 'agent.1');
    let reached = 0;
    const srv = net.createServer((c) => {
      reached++;
      c.end();
    });
    await new Promise<void>((r) => srv.listen(sockPath, r));
    try {
      await withEndpoint({ policy: 'askOutsideWorkspace', answer: () => 'Deny' }, async (f, a) => {
        const py = `import socket\ns=socket.socket(socket.AF_UNIX)\ntry:\n  s.connect(${JSON.stringify(sockPath)}); print("CONNECTED")\nexcept Exception as e:\n  print("refused", type(e).__name__)`;
        const r = await a.send('process/start', startParams('sock', ['/usr/bin/python3', '-c', py], ws, { sandbox: codexSandbox() }));
        assert.ok(r.result, JSON.stringify(r));
        assert.equal(f.questions.length, 0);
        const done = await finish(a, 'sock');
        assert.match(done.out, /refused/, done.out);
        assert.equal(reached, 0, 'the socket never saw a connection');
      });
    } finally {
      srv.close();
      removeDir(sockDir);
    }
  });

  it('credential stores in the home directory are hidden from a command that ran without a question', async () => {
    mkdirSync(path.join(outside, '.ssh'), { recursive: true });
    writeFileSync(path.join(outside, '.ssh', 'id_rsa'), 'PRIVATE-KEY-MATERIAL');
    writeFileSync(path.join(outside, '.netrc'), 'machine x login y password NETRC-SECRET');
    writeFileSync(path.join(outside, 'notes.txt'), 'ordinary file');
    await withEndpoint({ policy: 'askOutsideWorkspace', homeDir: outside, answer: () => 'Deny' }, async (f, a) => {
      const cmd = `cat ${outside}/.ssh/id_rsa ${outside}/.netrc; ls ${outside}/.ssh; cat ${outside}/notes.txt`;
      const r = await a.send('process/start', startParams('creds', ['/bin/bash', '-c', cmd], ws, { sandbox: codexSandbox() }));
      assert.ok(r.result, JSON.stringify(r));
      assert.equal(f.questions.length, 0);
      const done = await finish(a, 'creds');
      assert.doesNotMatch(done.out, /PRIVATE-KEY-MATERIAL|NETRC-SECRET/, done.out);
      assert.match(done.out, /ordinary file/, 'the rest of the home directory stays readable');
    });
  });
});

describe('agent gate: sandbox first only when the workspace is fully protected', () => {
  it('attack: a workspace with more protected entries than the carve-out scan takes (4 100 .vscode folders, made by an earlier unasked run or a checkout) asks instead of running unasked with part of them writable', async () => {
    const big = tmpDir('agent-sbx-big-');
    try {
      for (let i = 0; i < 4_100; i++) mkdirSync(path.join(big, `d${i}`, '.vscode'), { recursive: true });
      mkdirSync(path.join(big, 'zz-vendor', 'sub', '.git'), { recursive: true });
      await withAgentAt({ roots: [big], policy: 'askOutsideWorkspace', answer: () => 'Deny' }, async (f, a) => {
        const sandbox = managedSandbox({ entries: workspaceWriteEntries({ protectedSubpaths: ['.git'] }), cwd: uri(big) });
        const r = await a.send('process/start', startParams('big', ['/bin/sh', '-c', 'echo "[core] fsmonitor = x" >> zz-vendor/sub/.git/config'], big, { sandbox }));
        assert.match(r.error?.message ?? '', /not approved/, 'it ran without a question');
        assert.equal(f.questions.length, 1);
        // Whichever bound it hits first (on a loaded machine the 2 s time bound may come before the count).
        assert.match(f.questions[0].message, /could not be fully checked for \.git\/\.vscode \((more than 4096 protected paths|scanning \S+ took more than)/);
      });
    } finally {
      removeDir(big);
    }
  });
});
