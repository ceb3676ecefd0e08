// Test containers of the real podman (Debian's, installed by scripts/tools/install.mjs): made from
// this machine's root file system (`--rootfs /:O`, an overlay: writes stay in the container), so
// no image is pulled and the container has this machine's Node. These machines need Debian's
// runc, cgroupfs and explicit ulimits to create one; the product never passes these flags (an
// exec/cp/inspect/stop/start of the container works without them).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const PODMAN = '/usr/bin/podman';
export const havePodman = () => existsSync(PODMAN) && (existsSync('/usr/sbin/runc') || existsSync('/usr/bin/runc'));
const RUNC = existsSync('/usr/sbin/runc') ? '/usr/sbin/runc' : '/usr/bin/runc';

function podman(args: string[], timeout = 120_000): string {
  const r = spawnSync(PODMAN, args, { encoding: 'utf8', timeout });
  if (r.status !== 0) throw new Error(`podman ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}`);
  return r.stdout;
}

/** Starts a container running `sleep infinity` with its own hostname (and pid namespace); returns its name. */
export function startTestContainer(name: string, opts: { hostname?: string; env?: Record<string, string> } = {}): string {
  spawnSync(PODMAN, ['rm', '-f', '-t', '0', name], { encoding: 'utf8', timeout: 60_000 });
  podman([
    `--runtime=${RUNC}`,
    '--cgroup-manager=cgroupfs',
    'run', '-d', '--name', name, '--hostname', opts.hostname ?? name.replace(/[^a-z0-9-]/gi, '-').slice(0, 60),
    '--network=none', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1000:1000',
    ...Object.entries(opts.env ?? {}).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
    // sleep by its path: a test may give the container a PATH without it.
    '--rootfs', '/:O', existsSync('/usr/bin/sleep') ? '/usr/bin/sleep' : '/bin/sleep', 'infinity',
  ]);
  return name;
}

export const stopContainer = (name: string) => podman(['stop', '-t', '0', name]);
export const startContainer = (name: string) => podman(['start', name]);
export const removeContainer = (name: string) => void spawnSync(PODMAN, ['rm', '-f', '-t', '0', name], { encoding: 'utf8', timeout: 60_000 });
/** `podman exec NAME argv…` (test side), its stdout. */
export const execIn = (name: string, argv: string[]) => podman(['exec', name, ...argv]);

/**
 * The part of an exec-server client runThrough uses: structural, because the VS Code e2e suite
 * (compiled with rootDir test/, apart from src/) imports this file and cannot import src/ types.
 */
interface ProcessClient {
  startProcess(o: { argv: string[]; cwd: string; tty: boolean }): Promise<{ onOutput(f: (e: { data: Uint8Array }) => void): unknown; exited: Promise<number>; closed: Promise<void> }>;
}

/** Runs `argv` through an exec-server client (in `/`, no TTY) to its end; its output. */
export async function runThrough(client: ProcessClient, argv: string[]): Promise<string> {
  const p = await client.startProcess({ argv, cwd: '/', tty: false });
  let out = '';
  p.onOutput((e) => (out += Buffer.from(e.data).toString()));
  await p.exited;
  await p.closed;
  return out;
}
