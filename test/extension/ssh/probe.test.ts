// The probe's output parser and the executor choice, in plain Node (the live probe runs in
// ssh-host.test.ts): a login banner around the markers is ignored, a host that did not run the
// script is an error, and the order is exec-server on PATH → the installed CLI → codex.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { isOutdated } from '../../../src/extension/ssh/install';
import { chooseExecutor, parseProbeOutput, PROBE_SCRIPT } from '../../../src/extension/ssh/probe';

describe('ssh probe', () => {
  it('the script runs under a plain sh and its output parses (markers, key=value, tools)', () => {
    const r = spawnSync('sh', ['-s'], { input: PROBE_SCRIPT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent-home' } });
    assert.equal(r.status, 0, r.stderr);
    const f = parseProbeOutput(`Welcome to the host!\nlast login: …\n${r.stdout}trailing banner\n`);
    assert.equal(f.os, 'Linux');
    assert.ok(f.arch.length > 0);
    assert.equal(f.home, '/nonexistent-home');
    assert.equal(f.node !== undefined, true, 'node is on this PATH');
    assert.match(f.nodeVersion ?? '', /^v\d+\./);
    assert.equal(f.installed, undefined);
  });

  it('no markers: the host did not run the script', () => {
    assert.throws(() => parseProbeOutput('This account is currently not available.\n'), /did not run the probe script/);
  });

  it('executor order: exec-server on PATH, then the installed CLI, then codex exec-server (only if it has that subcommand)', () => {
    const base = parseProbeOutput('__exec_server_probe_begin__\nos=Linux\narch=x86_64\nhome=/h\n__exec_server_probe_end__\n');
    assert.equal(chooseExecutor(base), undefined);
    assert.equal(chooseExecutor({ ...base, codex: '/bin/codex', codexExecServer: false }), undefined, 'an old codex without exec-server is not an executor');
    assert.deepEqual(chooseExecutor({ ...base, codex: '/bin/codex', codexExecServer: true })?.remoteCommand, '/bin/codex exec-server --listen stdio://');
    const installed = { ...base, codex: '/bin/codex', codexExecServer: true, installed: "/h/it's/.exec-server/bin/exec-server" };
    assert.equal(chooseExecutor(installed)?.kind, 'installed');
    assert.equal(chooseExecutor(installed)?.remoteCommand, `'/h/it'\\''s/.exec-server/bin/exec-server' --listen stdio://`, 'quoted for the login shell');
    assert.equal(chooseExecutor({ ...installed, execServer: '/usr/local/bin/exec-server' })?.kind, 'exec-server');
  });

  it('an installed CLI older than the extension is outdated (an update is offered); the same or newer is not', () => {
    assert.equal(isOutdated('exec-server 0.0.9', '0.1.0'), true);
    assert.equal(isOutdated('exec-server 0.1.0', '0.1.0'), false);
    assert.equal(isOutdated('exec-server 0.10.0', '0.9.3'), false, 'numeric, not lexical');
    assert.equal(isOutdated('exec-server 1.0.0', '0.1.0'), false, 'a newer one (another window) is kept');
    assert.equal(isOutdated('', '0.1.0'), true, 'an unreadable --version counts as outdated');
    assert.equal(isOutdated(undefined, '0.1.0'), true);
  });
});
