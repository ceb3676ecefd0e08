// Where Local can run (src/extension/environments/local-platform.ts): Linux and macOS; on
// Windows (and any other OS) a plain-words refusal that points to the remote environments,
// which the connector returns instead of starting the engine and the extension shows at activation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { localUnsupported } from '../../../src/extension/environments/local-platform';

describe('Local environment platforms', () => {
  it('Linux and macOS run Local; Windows is refused in plain words naming what still works', () => {
    assert.equal(localUnsupported('linux'), undefined);
    assert.equal(localUnsupported('darwin'), undefined);
    const win = localUnsupported('win32');
    assert.match(win ?? '', /^Local terminals are not supported on Windows yet/);
    assert.match(win!, /Remote environments work from this machine: use Connect to Host…, or Add Environment/);
    assert.doesNotMatch(win!, /https?:|\[|\]\(/, 'no links or markdown in a notification');
    assert.match(localUnsupported('freebsd') ?? '', /not supported on FreeBSD yet/);
    assert.equal(localUnsupported(), process.platform === 'linux' || process.platform === 'darwin' ? undefined : localUnsupported(process.platform));
  });

});
