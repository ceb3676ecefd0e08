// The agent gate's pieces in isolation: how agent text is shown (checked against real bash),
// how requests are classified (real files and symlinks), grants, and what reaches the log.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { redactForLog } from '../../../src/extension/agent/gate';
import { ConnectionState, covers } from '../../../src/extension/agent/grants';
import { realPathOf } from '../../../src/extension/agent/paths';
import { METHODS } from '../../../src/server/router';
import { classify, gatedMethods, type AgentContext } from '../../../src/extension/agent/request';
import type { ApprovalPolicy } from '../../../src/extension/approval/policy';
import { commandLine, formsLink, shellQuote } from '../../../src/extension/approval/display-text';
import { removeDir, tmpDir, uri } from '../../support/agent-attack';

let ws: string;
let out: string;
before(() => {
  ws = tmpDir('agent-cls-ws-');
  out = tmpDir('agent-cls-out-');
  mkdirSync(path.join(ws, '.git'));
  writeFileSync(path.join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  mkdirSync(path.join(out, 'payload', '.vscode'), { recursive: true });
});
after(() => {
  removeDir(ws);
  removeDir(out);
});

function ctx(policy: ApprovalPolicy, state = new ConnectionState()): AgentContext {
  return { policy, workspaceRoots: [ws], tmpRoots: [], protectedRoots: [], sandboxAll: false, homeDir: out, state };
}

describe('agent text as shown', () => {
  const nasty = [
    '[npm test](https://evil.example "npm test")',
    "it's [a](command:x) and ](file:///etc/passwd)",
    'rtl \u202Eexe.txt zero\u200Bwidth \u2066iso\u2069 nl\nend \x1b[31mred',
    'back\\slash $HOME `id` "dq" $(zap) $(rm -rf ~)',
    '$\u202E(zap)',
    '$(zap)\u200B[x](https://y)',
    '',
    '😀 emoji and ä',
  ];

  it('is shell-exact: bash turns the shown command line back into the same argv', () => {
    for (const a of nasty) {
      // $'\u202e' gives UTF-8 only in a UTF-8 locale (as a VS Code user's shell has); a clean
      // CI environment may have no LANG at all.
      const back = execFileSync('/bin/bash', ['-c', `printf '%s\\0' ${shellQuote(a)}`], { env: { ...process.env, LC_ALL: 'C.UTF-8' } }).toString();
      assert.equal(back, `${a}\0`, JSON.stringify(a));
    }
  });

  it('never forms a link and shows invisible characters as escapes', () => {
    for (const a of nasty) {
      const s = commandLine(['/bin/sh', '-c', a]);
      assert.equal(formsLink(s), false, s);
      assert.doesNotMatch(s, /[\u202E\u200B\u2066\u2069\x1b\n]/u, s);
      assert.doesNotMatch(s, /\$\(/, 'no $(icon) shape');
    }
    assert.equal(shellQuote('plain-arg_1.txt'), 'plain-arg_1.txt');
    assert.equal(shellQuote('a b'), "'a b'");
  });
});

describe('agent request classification', () => {
  it('every method of the engine has a rule in the gate (a new one is refused until it gets one: this test says so)', () => {
    const missing = Object.keys(METHODS).filter((m) => !gatedMethods().includes(m));
    assert.deepEqual(missing, [], 'engine methods without an agent-gate rule (add them to src/extension/agent/request.ts)');
  });

  it('unknown methods are refused; metadata and the handshake pass', async () => {
    assert.equal((await classify('fs/brandNew', {}, ctx('neverAsk'))).kind, 'deny');
    assert.equal((await classify('__proto__', {}, ctx('neverAsk'))).kind, 'deny');
    assert.equal((await classify('initialize', { clientName: 'x' }, ctx('alwaysAsk'))).kind, 'allow');
    assert.equal((await classify('fs/getMetadata', { path: uri('/etc/passwd') }, ctx('alwaysAsk'))).kind, 'allow');
  });

  it('reads of .git/ inside the workspace need no question; writes there always ask', async () => {
    assert.equal((await classify('fs/readFile', { path: uri(path.join(ws, '.git', 'HEAD')) }, ctx('askOutsideWorkspace'))).kind, 'allow');
    const w = await classify('fs/writeFile', { path: uri(path.join(ws, '.git', 'config')), dataBase64: '' }, ctx('neverAsk'));
    assert.equal(w.kind, 'ask');
    assert.equal(w.kind === 'ask' && w.needs[0].grantable, false, 'a protected path is never granted for the session');
  });

  it('a copy or move that carries a .vscode/ folder into the workspace asks', async () => {
    const v = await classify('fs/copy', { sourcePath: uri(path.join(out, 'payload')), destinationPath: uri(path.join(ws, 'x')), recursive: true }, ctx('neverAsk'));
    assert.equal(v.kind, 'ask');
  });

  it('a file with other hard links is outside (writing it changes the other names too)', async () => {
    const { linkSync } = await import('node:fs');
    writeFileSync(path.join(out, 'shared.txt'), 'x');
    linkSync(path.join(out, 'shared.txt'), path.join(ws, 'hard.txt'));
    const v = await classify('fs/writeFile', { path: uri(path.join(ws, 'hard.txt')), dataBase64: '' }, ctx('askOutsideWorkspace'));
    assert.equal(v.kind, 'ask');
    assert.match(v.kind === 'ask' ? v.what.summary : '', /other hard links/);
  });

  it('a path through a symlink chain is judged where it really leads', async () => {
    const hop = path.join(ws, 'hop');
    symlinkSync(path.join(ws, 'hop2'), hop);
    symlinkSync(out, path.join(ws, 'hop2'));
    assert.equal(await realPathOf(path.join(hop, 'new', 'file')), path.join(out, 'new', 'file'));
    const v = await classify('fs/createDirectory', { path: uri(path.join(hop, 'new')) }, ctx('askOutsideWorkspace'));
    assert.equal(v.kind, 'ask');
  });

  it('grants: a write grant covers reads below it, a read grant never covers writes, http grants are per origin', () => {
    const w = { type: 'write' as const, prefix: '/a' };
    assert.equal(covers(w, { type: 'read', path: '/a/b', prefix: '/a', grantable: true }), true);
    assert.equal(covers({ type: 'read', prefix: '/a' }, { type: 'write', path: '/a/b', prefix: '/a', grantable: true }), false);
    assert.equal(covers(w, { type: 'write', path: '/ab', prefix: '/', grantable: true }), false);
    assert.equal(covers({ type: 'http', origin: 'https://a.example' }, { type: 'http', origin: 'https://a.example.evil', grantable: true }), false);
  });

  it('Allow for Session on a program does not cover other environment settings', async () => {
    const state = new ConnectionState();
    const first = await classify('process/start', { processId: '1', argv: ['/usr/bin/git', 'status'], cwd: uri(ws), env: {}, tty: false }, ctx('alwaysAsk', state));
    assert.equal(first.kind, 'ask');
    if (first.kind === 'ask') state.grant(first.needs);
    const same = await classify('process/start', { processId: '2', argv: ['/usr/bin/git', 'log'], cwd: uri(ws), env: {}, tty: false }, ctx('alwaysAsk', state));
    assert.equal(same.kind, 'allow');
    const hidden = await classify('process/start', { processId: '3', argv: ['/usr/bin/git', 'status'], cwd: uri(ws), env: { GIT_CONFIG_COUNT: '1' }, tty: false }, ctx('alwaysAsk', state));
    assert.equal(hidden.kind, 'ask', 'new environment variables are a new question');
  });
});

describe('approval log', () => {
  it('holds the request but no bulk data, secrets or session ids', () => {
    const line = redactForLog('process/start', {
      argv: ['/bin/sh', '-c', 'x'.repeat(3000)],
      env: { GITHUB_TOKEN: 'ghp_secret', PATH: '/bin' },
      envPolicy: { set: { AWS_SECRET_ACCESS_KEY: 'aws_secret' } },
    });
    assert.ok(line.includes('x'.repeat(3000)), 'the full argv');
    assert.ok(line.includes('/bin'));
    assert.equal(line.includes('ghp_secret') || line.includes('aws_secret'), false);
    const w = redactForLog('fs/writeFile', { path: '/a', dataBase64: Buffer.from('secret data').toString('base64') });
    assert.equal(w.includes(Buffer.from('secret data').toString('base64')), false);
    assert.match(w, /<11 bytes>/);
    const i = redactForLog('initialize', { clientName: 'c', resumeSessionId: '0b7e5f5c-3c1d-4e7a-9a4b-1f2e3d4c5b6a' });
    assert.equal(i.includes('0b7e5f5c'), false);
    const h = redactForLog('http/request', { url: 'https://x', headers: [{ name: 'Authorization', value: 'Bearer abc' }] });
    assert.equal(h.includes('Bearer abc'), false);
  });
});
