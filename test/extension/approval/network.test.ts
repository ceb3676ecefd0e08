// Network questions' text and the user's allowlist (src/extension/approval/network.ts): what a
// hostile host name or command line can do to the one-line question (nothing: bounded,
// shell-quoted, no link, no invisible characters) and which allowlist entries are read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formsLink, hasInvisible } from '../../../src/extension/approval/display-text';
import { allowedByList, describeNetworkQuestion, readAllowedDomains, timedOutText } from '../../../src/extension/approval/network';

describe('network questions', () => {
  it('names the command, the host and the port; a hostile host or command forms no link, hides nothing and stays bounded', () => {
    const plain = describeNetworkQuestion({ host: 'pypi.org', port: 443, protocol: 'https_connect', argv: ['pip', 'install', 'requests'] }, 'agent connection #1');
    assert.equal(plain, 'Exec Server: agent connection #1: `pip install requests` wants to reach pypi.org:443 (HTTPS)');
    const hostile = describeNetworkQuestion(
      { host: `[Allow](https://evil.example/)\u202e${'x'.repeat(5000)}`, port: 80, protocol: 'http', argv: ['curl', '[click](command:workbench.action.openSettings)', '\u200b', 'y'.repeat(5000)] },
      'agent connection #2',
    );
    assert.equal(formsLink(hostile), false, hostile.slice(0, 300));
    assert.equal(hasInvisible(hostile), false);
    assert.ok([...hostile].length < 700, `${[...hostile].length} characters`);
    assert.match(hostile, /…` wants to reach /);
    assert.equal(describeNetworkQuestion({ host: 'a.test', port: 1, protocol: 'socks5_tcp' }, 'w'), 'Exec Server: w: a command wants to reach a.test:1 (SOCKS5)');
    assert.equal(timedOutText(25), 'Denied: no answer within 25 s');
  });

  it('the allowlist keeps exact names, *. and **. patterns and IP literals; drops URLs, ports, `*`, malformed patterns and non-strings; matches as the proxy does', () => {
    const list = readAllowedDomains([' PyPI.org. ', '*.github.com', '**.npmjs.org', '::1', '10.0.0.1', 'http://x.org', 'x.org:443', '*', 'a*b.com', '', 5, null, 'pypi.org', 'x'.repeat(300)]);
    assert.deepEqual(list, ['pypi.org', '*.github.com', '**.npmjs.org', '::1', '10.0.0.1']);
    assert.deepEqual(readAllowedDomains('pypi.org'), []);
    assert.equal(readAllowedDomains(Array.from({ length: 1000 }, (_, i) => `h${i}.test`)).length, 256);
    const yes = ['pypi.org', 'PYPI.ORG', 'api.github.com', 'npmjs.org', 'registry.npmjs.org', '::1'];
    const no = ['github.com', 'evilpypi.org', 'pypi.org.evil', 'xnpmjs.org', 'github.com.evil'];
    for (const h of yes) assert.equal(allowedByList(list, h), true, h);
    for (const h of no) assert.equal(allowedByList(list, h), false, h);
  });
});
