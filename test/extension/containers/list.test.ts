// The container listings as the CLIs print them. podman's sample is real output of podman 4.3.1
// (`podman ps --no-trunc --format json`, Debian 12, a container from `--rootfs /:O`); docker's
// are the `docker ps --format '{{json .}}'` shape (one object per line, every field a
// string, Names comma-separated, Labels "k=v,k=v"), written down from the docker CLI's
// formatter (no docker engine runs here); kubectl's is `kubectl get pods -o json` of a
// two-container pod. Names a creator chose that could not go on a command line are left out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseContainerList, parsePodList, parseRunning } from '../../../src/extension/containers/list';

const PODMAN = `[
  {
    "AutoRemove": false,
    "Command": [
      "sleep",
      "600"
    ],
    "CreatedAt": "3 seconds ago",
    "Exited": false,
    "ExitedAt": -62135596800,
    "ExitCode": 0,
    "Id": "a283e1cf1e233d7c992941ce9511688c5d9454fb94b5870de87592eae0c326a9",
    "Image": "",
    "ImageID": "",
    "IsInfra": false,
    "Labels": null,
    "Mounts": [],
    "Names": [
      "es-probe-1"
    ],
    "Namespaces": {

    },
    "Networks": [],
    "Pid": 12944,
    "Pod": "",
    "PodName": "",
    "Ports": null,
    "Size": null,
    "StartedAt": 1796154923,
    "State": "running",
    "Status": "Up 2 seconds ago",
    "Created": 1796154921
  },
  {
    "Id": "b1", "Image": "docker.io/library/node:22", "Names": ["my web"], "State": "running", "Status": "Up 1 hour",
    "Labels": {"com.docker.compose.project": "shop", "evil": "[x](command:workbench.action.terminal.sendSequence)"}
  },
  { "Id": "c1", "Image": "x", "Names": ["-uroot"], "State": "running" }
]
`;

const DOCKER =
  '{"Command":"\\"docker-entrypoint.s…\\"","CreatedAt":"2026-12-01 19:00:00 +0000 UTC","ID":"3f4e8a1b2c3d","Image":"node:22-bookworm","Labels":"com.docker.compose.project=shop,com.docker.compose.service=web","LocalVolumes":"0","Mounts":"","Names":"shop-web-1","Networks":"shop_default","Ports":"0.0.0.0:3000->3000/tcp","RunningFor":"5 minutes ago","Size":"0B","State":"running","Status":"Up 5 minutes"}\n' +
  '{"Command":"\\"sleep infinity\\"","CreatedAt":"2026-12-01 19:01:00 +0000 UTC","ID":"9a8b7c6d5e4f","Image":"debian:12","Labels":"","LocalVolumes":"0","Mounts":"","Names":"dev box,other/link","Networks":"bridge","Ports":"","RunningFor":"4 minutes ago","Size":"0B","State":"running","Status":"Up 4 minutes"}\n';

const PODS = JSON.stringify({
  apiVersion: 'v1',
  kind: 'List',
  items: [
    {
      metadata: { name: 'api-7d9f-x2', namespace: 'dev' },
      spec: { containers: [{ name: 'app', image: 'node:22' }, { name: 'sidecar', image: 'envoy:1' }] },
      status: { phase: 'Running', containerStatuses: [{ name: 'app', ready: true, state: { running: { startedAt: 'x' } } }, { name: 'sidecar', ready: false, state: { waiting: { reason: 'CrashLoopBackOff' } } }] },
    },
    { metadata: { name: 'Bad_Pod', namespace: 'dev' }, spec: { containers: [{ name: 'a', image: 'x' }] }, status: { phase: 'Running' } },
  ],
});

describe('container listings', () => {
  it('podman ps --format json (real 4.3.1 output): names, images, state; a dash name is left out with a problem', () => {
    const { items, problems } = parseContainerList('podman', PODMAN);
    assert.deepEqual(items.map((c) => [c.name, c.image, c.state, c.id.slice(0, 6)]), [
      ['es-probe-1', '', 'running', 'a283e1'],
      ['my web', 'docker.io/library/node:22', 'running', 'b1'],
    ]);
    assert.equal(items[1].labels['com.docker.compose.project'], 'shop');
    assert.equal(problems.length, 1);
    assert.match(problems[0], /"-uroot" starts with "-"/);
  });

  it('docker ps --format json: one object per line, Names comma-separated (the first is the name), Labels k=v', () => {
    const { items, problems } = parseContainerList('docker', DOCKER);
    assert.deepEqual(problems, []);
    assert.deepEqual(items.map((c) => [c.name, c.image, c.state, c.status]), [
      ['shop-web-1', 'node:22-bookworm', 'running', 'Up 5 minutes'],
      ['dev box', 'debian:12', 'running', 'Up 4 minutes'],
    ]);
    assert.deepEqual(items[0].labels, { 'com.docker.compose.project': 'shop', 'com.docker.compose.service': 'web' });
  });

  it('empty output is no containers; garbage is an error naming the CLI', () => {
    assert.deepEqual(parseContainerList('docker', '\n').items, []);
    assert.deepEqual(parseContainerList('podman', '[]\n').items, []);
    assert.throws(() => parseContainerList('docker', 'Cannot connect\n'), /docker ps printed a line that is not JSON/);
    assert.throws(() => parseContainerList('podman', '[oops'), /podman ps printed no JSON/);
  });

  it('kubectl get pods -o json: one row per container, running or not; a pod name Kubernetes would refuse is left out', () => {
    const { items, problems } = parsePodList(PODS);
    assert.deepEqual(items.map((p) => [p.namespace, p.pod, p.container, p.running]), [
      ['dev', 'api-7d9f-x2', 'app', true],
      ['dev', 'api-7d9f-x2', 'sidecar', false],
    ]);
    assert.equal(problems.length, 1);
    assert.throws(() => parsePodList('error: You must be logged in'), /kubectl get pods printed no JSON/);
  });

  it('inspect: running, stopped, paused (podman/docker), a pod container state', () => {
    assert.deepEqual(parseRunning('podman', JSON.stringify([{ State: { Status: 'running', Running: true, Paused: false } }])), { running: true, status: 'running' });
    assert.deepEqual(parseRunning('docker', JSON.stringify([{ State: { Status: 'exited', Running: false, ExitCode: 137 } }])), { running: false, status: 'exited' });
    assert.deepEqual(parseRunning('docker', JSON.stringify([{ State: { Status: 'paused', Running: true, Paused: true } }])), { running: false, status: 'paused' });
    const p = JSON.parse(PODS).items[0];
    assert.deepEqual(parseRunning('kubectl', JSON.stringify(p), 'app'), { running: true, status: 'running' });
    assert.deepEqual(parseRunning('kubectl', JSON.stringify(p), 'sidecar'), { running: false, status: 'waiting' });
    assert.equal(parseRunning('podman', 'not json'), undefined);
  });
});
