// Add Environment's reading of what the user types: command lines split like /bin/sh splits
// them (checked against the real sh), host:port read as ws://, bad input refused with a reason;
// environment/info's file:// paths as plain paths; the status words for environments.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { infoPath, joinCommandLine, parseWhere, splitCommandLine } from '../../../src/extension/environments/input';
import { shownState, statusText } from '../../../src/extension/environments/status-text';

/** How /bin/sh splits `line` into words (printf prints each argument NUL-terminated). */
function shWords(line: string): string[] {
  const r = spawnSync('sh', ['-c', `printf '%s\\0' ${line}`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\0').slice(0, -1);
}

describe('Add Environment input', () => {
  const lines = [
    'ssh devbox exec-server --listen stdio',
    'sh -c "exec-server --listen stdio://"',
    `sh -c 'cd /srv && exec "my server" --x'`,
    'a\\ b "c\\"d" \'e"f\' g\\\\h',
    '  spaced   out\t words  ',
    'mixed"quo"ted\'parts\'here',
    '"" empty \'\' args',
    'ssh -o "ProxyCommand=ssh -W %h:%p jump" host exec-server --listen stdio',
  ];
  for (const line of lines) {
    it(`splits ${JSON.stringify(line)} as sh does`, () => {
      assert.deepEqual(splitCommandLine(line), shWords(line));
    });
  }

  it('joinCommandLine quotes words back so that sh and splitCommandLine read the same argv', () => {
    const argv = ['sh', '-c', `echo "it's" $HOME`, '', 'a b', 'plain-arg=1'];
    const line = joinCommandLine(argv);
    assert.deepEqual(splitCommandLine(line), argv);
    assert.deepEqual(shWords(line), argv);
  });

  it('refuses unterminated quotes and a trailing backslash', () => {
    assert.throws(() => splitCommandLine('sh -c "oops'), /unterminated double quote/);
    assert.throws(() => splitCommandLine("sh -c 'oops"), /unterminated single quote/);
    assert.throws(() => splitCommandLine('sh \\'), /backslash/);
    assert.throws(() => parseWhere('sh -c "oops'), /Cannot read the command: unterminated double quote/);
  });

  it('reads host:port (no scheme) as a websocket URL, not as a command', () => {
    assert.deepEqual(parseWhere('127.0.0.1:8765'), { kind: 'websocket', url: 'ws://127.0.0.1:8765' });
    assert.deepEqual(parseWhere(' devbox.lan:9000 '), { kind: 'websocket', url: 'ws://devbox.lan:9000' });
    assert.deepEqual(parseWhere('[::1]:8765'), { kind: 'websocket', url: 'ws://[::1]:8765' });
    assert.deepEqual(parseWhere('localhost:1/path'), { kind: 'websocket', url: 'ws://localhost:1/path' });
    assert.throws(() => parseWhere('127.0.0.1:70000'), /out of range/);
  });

  it('keeps ws:// and wss:// URLs and refuses other schemes with the reason', () => {
    assert.deepEqual(parseWhere('wss://box:443/x'), { kind: 'websocket', url: 'wss://box:443/x' });
    assert.throws(() => parseWhere('http://box:80'), /Only ws:\/\/ and wss:\/\/ URLs are supported \(got http:\/\/\)/);
    assert.throws(() => parseWhere('ws://'), /not a valid URL/);
    assert.throws(() => parseWhere('   '), /Enter a websocket URL/);
  });

  it('reads anything else as a command line', () => {
    assert.deepEqual(parseWhere('exec-server --listen stdio'), { kind: 'command', command: 'exec-server', args: ['--listen', 'stdio'] });
    assert.deepEqual(parseWhere('sh -c "a b"'), { kind: 'command', command: 'sh', args: ['-c', 'a b'] });
    // One word with a colon but not a port: a command (e.g. a path), not a URL.
    assert.deepEqual(parseWhere('/opt/bin:x'), { kind: 'command', command: '/opt/bin:x', args: [] });
    assert.throws(() => parseWhere('""'), /The command is empty/);
  });

  it('turns environment/info paths (file:// URIs, as the reference reports them) into absolute paths', () => {
    assert.equal(infoPath('file:///root'), '/root');
    assert.equal(infoPath('file:///home/a%20b'), '/home/a b');
    assert.equal(infoPath('/srv'), '/srv');
    assert.equal(infoPath('relative'), undefined);
    assert.equal(infoPath('http://x/y'), undefined);
    assert.equal(infoPath(undefined), undefined);
  });
});

describe('status words', () => {
  it('Local is "ready" before and after it is used (one word, not ready/connected), "failed" only when it failed; other states are shown as they are', () => {
    assert.equal(shownState('local', 'disconnected'), 'ready');
    assert.equal(shownState('local', 'connecting'), 'ready');
    assert.equal(shownState('local', 'connected'), 'ready');
    assert.equal(shownState('local', 'failed'), 'failed');
    for (const s of ['connecting', 'connected', 'reconnecting', 'disconnected', 'failed'] as const) assert.equal(shownState('command', s), s);
  });

  it('the status bar says which environment is connected or failing, never a bare count', () => {
    const local = { name: 'Local', kind: 'local' as const, state: 'disconnected' as const };
    assert.equal(statusText({ envs: [local] }), '$(server-process) Exec Server: Local');
    assert.equal(statusText({ envs: [local, { name: 'devbox', kind: 'websocket', state: 'connected' }] }), '$(vm-active) Exec Server: devbox');
    assert.equal(
      statusText({ envs: [local, { name: 'a', kind: 'websocket', state: 'connected' }, { name: 'b', kind: 'command', state: 'connected' }], endpointPort: 4000 }),
      '$(vm-active) Exec Server: 2 connected $(broadcast) agent :4000',
    );
    assert.equal(statusText({ envs: [local, { name: 'devbox', kind: 'websocket', state: 'failed' }] }), '$(warning) Exec Server: devbox failed');
    assert.equal(statusText({ envs: [local, { name: 'devbox', kind: 'websocket', state: 'reconnecting' }] }), '$(sync~spin) Exec Server: devbox reconnecting…');
  });
});
