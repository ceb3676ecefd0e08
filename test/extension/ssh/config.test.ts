// ~/.ssh/config hosts for Connect to Host: concrete Host patterns only, HostName/User/Port of
// their block, Include (relative to ~/.ssh, globs, ~, nested, loops), Match blocks, quoting.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { isConcreteHost, parseConfigLine, readSshConfigHosts } from '../../../src/extension/ssh/config';
import { tempDir } from '../../support/tmp';

function home(t: TestContext, files: Record<string, string>): string {
  const h = tempDir('ssh-config-', { t });
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(h, rel)), { recursive: true });
    writeFileSync(path.join(h, rel), text);
  }
  return h;
}

describe('ssh config hosts', () => {
  it('lists concrete Host patterns with their HostName/User/Port and skips wildcards and negations', (t) => {
    const h = home(t, {
      '.ssh/config': [
        '# comment',
        'Host *',
        '  User everyone',
        'Host devbox build-1 *.corp !bad ?x',
        '  HostName devbox.example.com',
        '  User alice',
        '  Port 2222',
        '  User second-is-ignored',
        'Host=quoted',
        '  HostName = "10.0.0.5"',
        'Host bad',
        'Match host foo',
        '  User matched',
        'Host last # trailing comment',
      ].join('\n'),
    });
    const r = readSshConfigHosts(undefined, { home: h });
    assert.deepEqual(
      r.hosts.map((x) => [x.alias, x.hostName, x.user, x.port]),
      [
        ['devbox', 'devbox.example.com', 'alice', '2222'],
        ['build-1', 'devbox.example.com', 'alice', '2222'],
        ['quoted', '10.0.0.5', undefined, undefined],
        ['bad', undefined, undefined, undefined],
        ['last', undefined, undefined, undefined],
      ],
    );
    assert.equal(r.hosts[0].line, 4);
    assert.deepEqual(r.problems, []);
  });

  it('follows Include: relative to ~/.ssh, ~ paths, globs in sorted order, nested, first definition wins', (t) => {
    const h = home(t, {
      '.ssh/config': 'Include conf.d/*.conf\nInclude ~/extra/hosts\nHost top\n  HostName top.example\nHost dup\n  User top-wins-not\n',
      '.ssh/conf.d/b.conf': 'Host from-b\n  User bob\nInclude nested/inner\n',
      '.ssh/conf.d/a.conf': 'Host from-a dup\n  User ann\n',
      '.ssh/conf.d/.hidden.conf': 'Host hidden\n',
      '.ssh/conf.d/not-matched.txt': 'Host skipped\n',
      '.ssh/nested/inner': 'Host deep\n  Port 2200\n',
      'extra/hosts': 'Host tilde\n',
    });
    const r = readSshConfigHosts(undefined, { home: h });
    assert.deepEqual(r.hosts.map((x) => x.alias), ['from-a', 'dup', 'from-b', 'deep', 'tilde', 'top']);
    assert.equal(r.hosts.find((x) => x.alias === 'dup')!.user, 'ann');
    assert.equal(r.hosts.find((x) => x.alias === 'deep')!.port, '2200');
    assert.match(r.hosts.find((x) => x.alias === 'deep')!.file, /nested\/inner$/);
  });

  it('an included file does not end the including Host block; its settings go to its own hosts', (t) => {
    const h = home(t, {
      '.ssh/config': 'Host outer\n  Include inc\n  HostName outer.example\n',
      '.ssh/inc': '  User from-include\n',
    });
    const r = readSshConfigHosts(undefined, { home: h });
    assert.deepEqual(r.hosts.map((x) => [x.alias, x.user, x.hostName]), [['outer', 'from-include', 'outer.example']]);
  });

  it('an Include loop and a missing include are reported, not fatal; a missing config is no hosts', (t) => {
    const h = home(t, { '.ssh/config': 'Include ~/.ssh/config\nInclude missing-file\nHost ok\n' });
    const r = readSshConfigHosts(undefined, { home: h });
    assert.deepEqual(r.hosts.map((x) => x.alias), ['ok']);
    assert.equal(r.problems.length, 2, r.problems.join('\n'));
    assert.match(r.problems.join('\n'), /loops/);
    assert.match(r.problems.join('\n'), /missing-file: ENOENT/);
    const empty = home(t, {});
    assert.deepEqual(readSshConfigHosts(undefined, { home: empty }), { hosts: [], problems: [] });
  });

  it('an explicit config file (execServer.ssh.configFile / ssh -F) is read instead', (t) => {
    const h = home(t, { 'elsewhere/cfg': 'Host only-here\n', '.ssh/config': 'Host not-this\n' });
    assert.deepEqual(readSshConfigHosts(path.join(h, 'elsewhere/cfg'), { home: h }).hosts.map((x) => x.alias), ['only-here']);
    assert.deepEqual(readSshConfigHosts('~/elsewhere/cfg', { home: h }).hosts.map((x) => x.alias), ['only-here']);
  });

  it('line and pattern rules', () => {
    assert.deepEqual(parseConfigLine('  HostName="a b"'), { keyword: 'hostname', args: ['a b'] });
    assert.deepEqual(parseConfigLine('IdentityFile ~/.ssh/id # note'), { keyword: 'identityfile', args: ['~/.ssh/id'] });
    assert.equal(parseConfigLine('   # only a comment'), undefined);
    for (const p of ['*', 'a*', 'a?c', '!x', '']) assert.equal(isConcreteHost(p), false, p);
    for (const p of ['a', 'a.b-c', '10.0.0.1']) assert.equal(isConcreteHost(p), true, p);
  });
});
