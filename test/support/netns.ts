// A machine of its own for the ssh tests: a network namespace (and UTS namespace: its own
// hostname) made by the test, reached from here through a veth pair the test owns. Inside it,
// 127.0.0.1 is the namespace's own loopback — as on every real remote host — so a connection
// meant for the host's 127.0.0.1:PORT that is opened on THIS machine instead (docs/security.md, "Network paths and proxies") finds
// nothing there, or a listener the test put there. The addresses (10.X.Y.1 here, 10.X.Y.2 in the
// namespace, a /30 picked at random and checked free) exist only on the pair; the namespace goes
// away, and the pair with it, when the last process in it ends: destroy() kills them all.
// Needs root (unshare --net, ip link); without it, throws saying so — never a silent pass.
// Imports only Node built-ins: the VS Code e2e suite uses it too.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { waitFor } from './wait';

export interface NetNamespace {
  /** The process holding the namespaces (nsenter --target). */
  holderPid: number;
  /** The namespace's address on the veth pair: what the ssh client connects to. */
  address: string;
  /** This machine's end of the pair. */
  hostAddress: string;
  hostname: string;
  /** The host-side veth interface. */
  link: string;
  /** argv prefix that runs a command inside the namespaces. */
  enter: string[];
  /** Kills every process in the namespace and the holder; the pair goes with the namespace. */
  destroy(): void;
}

/** Why this machine cannot make a namespaced host, or undefined when it can. */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'a host in its own network namespace needs root (unshare --net, ip link add … type veth): run the ssh tests as root, as CI does';
  for (const tool of ['unshare', 'nsenter', 'ip']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed (util-linux / iproute2): needed for the namespaced ssh host`;
  }
  return undefined;
}

const nsInode = (pid: number | 'self'): string | undefined => {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return undefined;
  }
};

/** Pids whose network namespace is `inode` (the holder, sshd, its sessions, detached servers). */
export function pidsInNamespace(inode: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    if (nsInode(Number(name)) === inode) pids.push(Number(name));
  }
  return pids;
}

function run(argv: string[]): void {
  const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr || r.error?.message}`);
}

/** A /30 in 10.0.0.0/8 that no interface of this machine uses. */
function freeSubnet(): [string, string, string] {
  const used = spawnSync('ip', ['-4', '-o', 'addr'], { encoding: 'utf8' }).stdout;
  const routes = spawnSync('ip', ['-4', 'route'], { encoding: 'utf8' }).stdout;
  for (let i = 0; i < 50; i++) {
    const b = 200 + Math.floor(Math.random() * 50);
    const c = Math.floor(Math.random() * 256);
    const d = Math.floor(Math.random() * 64) * 4;
    const prefix = `10.${b}.${c}.`;
    if (used.includes(prefix) || routes.includes(prefix)) continue;
    return [`${prefix}${d + 1}`, `${prefix}${d + 2}`, `${prefix}${d}`];
  }
  throw new Error('no free 10.x /30 for the namespaced host');
}

/**
 * Makes the namespaces. `lifetimeSec` bounds the holder (`timeout -s KILL`), so a test process
 * killed before destroy() leaves nothing beyond it; `detached` lets it outlive this process (a
 * window reload), to be ended with destroyNamespace(holderPid).
 */
export async function createNetNamespace(opts: { hostname?: string; lifetimeSec?: number; detached?: boolean } = {}): Promise<NetNamespace> {
  const why = netnsUnavailable();
  if (why) throw new Error(why);
  const hostname = opts.hostname ?? `exec-remote-${Math.random().toString(36).slice(2, 8)}`;
  const holder = spawn('unshare', ['--net', '--uts', '--', 'timeout', '-s', 'KILL', String(opts.lifetimeSec ?? 1800), 'sleep', '1000000'], {
    stdio: 'ignore',
    detached: opts.detached ?? false,
  });
  if (opts.detached) holder.unref();
  const holderPid = holder.pid!;
  const ours = nsInode('self');
  // unshare has made the namespace once the holder's differs from ours (then it execs timeout).
  const made = () => {
    const inode = nsInode(holderPid);
    if (inode && inode !== ours) return inode;
    if (holder.exitCode !== null) throw new Error(`unshare --net exited (${holder.exitCode}) before making the namespace`);
    return undefined;
  };
  const nsInodeValue = await waitFor(made, { timeout: 10_000, interval: 20, what: 'unshare --net to make a namespace' }).catch((e: unknown) => {
    holder.kill('SIGKILL');
    throw e;
  });
  const id = Math.random().toString(36).slice(2, 8);
  const link = `exh${id}`;
  const peer = `exn${id}`;
  const enter = ['nsenter', `--target=${holderPid}`, '--net', '--uts', '--'];
  const destroy = () => destroyNamespaceByInode(nsInodeValue, holderPid, link);
  try {
    const [hostAddress, address] = freeSubnet();
    run(['ip', 'link', 'add', link, 'type', 'veth', 'peer', 'name', peer, 'netns', String(holderPid)]);
    run(['ip', 'addr', 'add', `${hostAddress}/30`, 'dev', link]);
    run(['ip', 'link', 'set', link, 'up']);
    run([...enter, 'sh', '-c', `hostname ${hostname} && ip link set lo up && ip addr add ${address}/30 dev ${peer} && ip link set ${peer} up`]);
    return { holderPid, address, hostAddress, hostname, link, enter, destroy };
  } catch (e) {
    destroy();
    throw e;
  }
}

function destroyNamespaceByInode(inode: string, holderPid: number, link?: string): void {
  // Everything in it (sshd, its sessions, detached exec-servers), then the holder.
  for (let round = 0; round < 3; round++) {
    const pids = pidsInNamespace(inode);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
  try {
    process.kill(holderPid, 'SIGKILL');
  } catch {
    /* gone */
  }
  // The pair goes with the namespace; delete our end too in case something still holds it.
  if (link) spawnSync('ip', ['link', 'del', link], { stdio: 'ignore' });
}

/** Ends a namespace made with `detached` from another process (a reloaded window). */
export function destroyNamespace(holderPid: number, link?: string): void {
  const inode = nsInode(holderPid);
  if (inode && inode !== nsInode('self')) destroyNamespaceByInode(inode, holderPid, link);
  else if (link) spawnSync('ip', ['link', 'del', link], { stdio: 'ignore' });
}
