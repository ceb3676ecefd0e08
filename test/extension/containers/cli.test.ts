// The container CLI runner and its errors: a CLI's stderr reaches a notification only as its
// last lines, cut, without control characters or link syntax; a missing CLI is named; the
// `cli` setting accepts auto, podman, docker or a path to either and nothing else.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundedStderr, ContainerCliError, engineCandidates, runCli, runCliOk } from '../../../src/extension/containers/cli';
import { chooseContainerEnvironmentName, execArgv, type ContainerTarget } from '../../../src/extension/containers/target';

describe('container CLI runner', () => {
  it("stderr in a message: the last 3 lines, 300 characters each, no escapes, no links", () => {
    const err = ['noise 1', 'noise 2', '\u001b[31mError:\u001b[0m see [docs](command:workbench.action.terminal.sendSequence?%7B%7D)', 'x'.repeat(1000), 'last\u0007 line'].join('\n');
    const s = boundedStderr(err);
    assert.ok(!s.includes('noise 1') && !s.includes('noise 2'), s);
    assert.ok(!s.includes('](') && s.includes('] ('), `no link syntax: ${s}`);
    assert.ok(!/[\u0000-\u0008\u001b]/.test(s), `no control characters: ${JSON.stringify(s)}`);
    assert.ok(s.length < 700, `bounded: ${s.length}`);
    const e = new ContainerCliError('podman', 'listing failed [a](command:x)', err);
    assert.match(e.message, /^listing failed \[a\] \(command:x\) \(podman: Error: see/);
  });

  it('a CLI that is not installed is named; a failing one quotes its stderr', async () => {
    await assert.rejects(runCli('/nonexistent/podman', ['ps']), /\/nonexistent\/podman is not installed/);
    await assert.rejects(runCliOk('sh', ['-c', 'echo "Error: no such container web" >&2; exit 125'], 'inspecting web'), /inspecting web failed \(sh exited 125\) \(sh: Error: no such container web\)/);
  });

  it('the cli setting: auto tries podman then docker; a path names its kind; anything else is refused', () => {
    assert.deepEqual(engineCandidates('auto').map((c) => c.cli), ['podman', 'docker']);
    assert.deepEqual(engineCandidates('/opt/bin/docker'), [{ cli: 'docker', program: '/opt/bin/docker' }]);
    assert.throws(() => engineCandidates('/usr/bin/sh'), /give "auto", "podman", "docker"/);
  });

  it('the saved name: free → taken; the same definition → existing; the same container with another executor → updated; another → -2', () => {
    const t: ContainerTarget = { cli: 'podman', program: 'podman', container: 'web' };
    const a = { command: 'podman', args: execArgv(t, ['/root/.exec-server/bin/exec-server', '--listen', 'stdio://']) };
    assert.deepEqual(chooseContainerEnvironmentName('podman-web', a, []), { name: 'podman-web', existing: false });
    const saved = [{ name: 'podman-web', kind: 'command', ...a }];
    assert.deepEqual(chooseContainerEnvironmentName('podman-web', a, saved), { name: 'podman-web', existing: true });
    const b = { command: 'podman', args: execArgv(t, ['/usr/bin/codex', 'exec-server', '--listen', 'stdio://']) };
    assert.deepEqual(chooseContainerEnvironmentName('podman-web', b, saved), { name: 'podman-web', existing: false });
    const other = { command: 'podman', args: execArgv({ ...t, container: 'web2' }, ['x']) };
    assert.deepEqual(chooseContainerEnvironmentName('podman-web', other, saved), { name: 'podman-web-2', existing: false });
  });
});
