// The argv of every container CLI call (podman, docker, kubectl exec / cp / inspect / ps): argv
// arrays only, `--` before the container where the CLI takes one, names checked so nothing a
// container's creator chose can become an option or shell code. The `--` placement is checked
// against the real docker client (installed here without an engine: it parses the argv, then
// fails to reach a daemon) and the real podman, which these names reach as data.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { checkTarget, cpArgv, environmentNameFor, execArgv, inspectArgv, listArgv, targetOfCommand, type ContainerTarget } from '../../../src/extension/containers/target';

const podman = (container: string, context?: string): ContainerTarget => ({ cli: 'podman', program: 'podman', container, ...(context ? { context } : {}) });
const docker = (container: string, context?: string): ContainerTarget => ({ cli: 'docker', program: 'docker', container, ...(context ? { context } : {}) });
const pod = (o: Partial<Extract<ContainerTarget, { cli: 'kubectl' }>> = {}): ContainerTarget => ({ cli: 'kubectl', program: 'kubectl', namespace: 'dev-ns', pod: 'api-7d9f-x2', container: 'app', ...o });
const EXEC = ['exec-server', '--listen', 'stdio://'];
const which = (c: string) => spawnSync('sh', ['-c', `command -v ${c}`], { encoding: 'utf8' }).stdout.trim();

describe('container argv', () => {
  it('podman / docker exec: -i, `--`, the container, then the command; no TTY, no shell', () => {
    assert.deepEqual(execArgv(podman('web'), EXEC), ['exec', '-i', '--', 'web', 'exec-server', '--listen', 'stdio://']);
    assert.deepEqual(execArgv(docker('my-db_1.x'), EXEC), ['exec', '-i', '--', 'my-db_1.x', ...EXEC]);
    assert.deepEqual(execArgv(podman('web', 'remote-box'), EXEC).slice(0, 2), ['--connection=remote-box', 'exec']);
    assert.deepEqual(execArgv(docker('web', 'colima'), EXEC).slice(0, 2), ['--context=colima', 'exec']);
  });

  it('kubectl exec: -i, --namespace=, the pod, --container=, `--`, the command', () => {
    assert.deepEqual(execArgv(pod(), EXEC), ['exec', '-i', '--namespace=dev-ns', 'api-7d9f-x2', '--container=app', '--', ...EXEC]);
    assert.deepEqual(execArgv(pod({ container: undefined, context: 'kind-dev' }), EXEC), ['--context=kind-dev', 'exec', '-i', '--namespace=dev-ns', 'api-7d9f-x2', '--', ...EXEC]);
  });

  it('names with spaces and dashes stay one argv word each; the command words are passed as they are', () => {
    const argv = execArgv(podman('my container - 2'), ['sh', '-c', 'echo "$1"', 'sh', 'a b; rm -rf /']);
    assert.deepEqual(argv, ['exec', '-i', '--', 'my container - 2', 'sh', '-c', 'echo "$1"', 'sh', 'a b; rm -rf /']);
    assert.deepEqual(execArgv(docker('a-b--c'), ['true']), ['exec', '-i', '--', 'a-b--c', 'true']);
  });

  it('refuses what could become an option or break a line: a leading "-", control characters, bad Kubernetes names', () => {
    for (const bad of ['-uroot', '--privileged', '-w/tmp', 'a\nb', 'x\u001b[2J', '', 'nul\u0000']) {
      assert.throws(() => execArgv(podman(bad), EXEC), /container name/, JSON.stringify(bad));
      assert.throws(() => execArgv(docker(bad), EXEC), /container name/, JSON.stringify(bad));
    }
    for (const bad of ['-n', 'Upper', 'a b', 'x;id', '$(id)', 'a_b', '.x', 'x'.repeat(254)]) {
      assert.throws(() => execArgv(pod({ pod: bad }), EXEC), /pod name/, JSON.stringify(bad));
      assert.throws(() => execArgv(pod({ namespace: bad }), EXEC), /namespace/, JSON.stringify(bad));
      assert.throws(() => execArgv(pod({ container: bad }), EXEC), /container name/, JSON.stringify(bad));
    }
    assert.throws(() => execArgv(podman('web', '--url=ssh://evil'), EXEC), /context/);
    assert.throws(() => execArgv(pod({ context: '-s' }), EXEC), /context/);
    assert.throws(() => execArgv(podman('web'), []), /empty/);
  });

  it('cp, inspect and ps: the same rules', () => {
    assert.deepEqual(cpArgv(podman('my ctr'), '/tmp/stage', '/root/.exec-server/x'), ['cp', '--', '/tmp/stage/.', 'my ctr:/root/.exec-server/x']);
    assert.deepEqual(cpArgv(pod(), '/tmp/s/.', '/home/app/.exec-server/x'), ['cp', '--namespace=dev-ns', '--container=app', '--', '/tmp/s/.', 'api-7d9f-x2:/home/app/.exec-server/x']);
    assert.throws(() => cpArgv(podman('web'), '/tmp/s', 'relative'), /absolute/);
    assert.deepEqual(inspectArgv(docker('web')), ['inspect', '--type=container', '--format=json', '--', 'web']);
    assert.deepEqual(inspectArgv(pod()), ['get', 'pod', '--namespace=dev-ns', '--output=json', '--', 'api-7d9f-x2']);
    assert.deepEqual(listArgv('podman'), ['ps', '--no-trunc', '--format=json']);
    assert.deepEqual(listArgv('docker', 'ctx'), ['--context=ctx', 'ps', '--no-trunc', '--format={{json .}}']);
    assert.deepEqual(listArgv('kubectl', 'prod'), ['--context=prod', 'get', 'pods', '--all-namespaces', '--output=json']);
    assert.deepEqual(listArgv('kubectl', undefined, 'team-a'), ['get', 'pods', '--namespace=team-a', '--output=json']);
  });

  it('a saved environment reads back as its target; other commands are not taken for one', () => {
    for (const t of [podman('my container'), docker('web', 'ctx'), pod(), { cli: 'kubectl' as const, program: 'kubectl', namespace: 'n', pod: 'p', context: 'k' }]) {
      const argv = execArgv(t, EXEC);
      assert.deepEqual(targetOfCommand(t.program, argv), { target: t, command: EXEC });
    }
    assert.equal(targetOfCommand('/usr/bin/podman', ['exec', '-i', 'web', 'x'])?.target, undefined, 'no `--`: not ours');
    assert.equal(targetOfCommand('ssh', ['exec', '-i', '--', 'web', 'x']), undefined);
    assert.equal(targetOfCommand('podman', ['exec', '-i', '--', '-uroot', 'x']), undefined, 'a refused name is not read back');
    assert.equal(targetOfCommand('/opt/bin/docker', execArgv(docker('w'), EXEC))?.target.program, '/opt/bin/docker');
  });

  it('environment names fit the settings rules', () => {
    assert.equal(environmentNameFor(podman('web')), 'podman-web');
    assert.equal(environmentNameFor(docker('my container - 2')), 'docker-my-container-2');
    assert.equal(environmentNameFor(pod()), 'pod-dev-ns-api-7d9f-x2-app');
    assert.ok(environmentNameFor(podman('x'.repeat(200))).length <= 64);
  });

  it('the real docker client reads our argv as we mean it: the name after `--` is the container, even one starting with "-"', { skip: !which('docker') && 'no docker client' }, () => {
    const env = { ...process.env, DOCKER_HOST: 'unix:///nonexistent/docker.sock', DOCKER_CONFIG: '/nonexistent' };
    const run = (argv: string[]) => spawnSync('docker', argv, { encoding: 'utf8', env, timeout: 20_000 });
    // Our shape: the client parsed it and went for the daemon.
    const ours = run(execArgv(docker('my container - 2'), EXEC));
    assert.match(ours.stderr, /Cannot connect to the Docker daemon/, ours.stderr);
    const dashed = run(['exec', '-i', '--', '-uroot', 'true']);
    assert.match(dashed.stderr, /Cannot connect to the Docker daemon/, `with "--" a dash name is a name: ${dashed.stderr}`);
    // Without `--` the same name is an option (-u root) and the command becomes the container: why the `--` is there.
    const naive = run(['exec', '-i', '-uroot', 'true']);
    assert.match(naive.stderr, /requires at least 2 arguments/, naive.stderr);
    const list = run(listArgv('docker'));
    assert.match(list.stderr, /Cannot connect to the Docker daemon/, `the listing's argv parses too: ${list.stderr}`);
    assert.ok(checkTarget(docker('ok')));
  });

  it('the real podman gets a name with spaces as one name', { skip: !which('podman') && 'no podman' }, () => {
    const r = spawnSync('podman', execArgv(podman('no such; container $(id)'), ['true']), { encoding: 'utf8', timeout: 60_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /no container with name or ID "no such; container \$\(id\)" found/, r.stderr);
  });
});
