// Linux backend: a resolved managed profile → the argv that runs a command under
// bubblewrap. Pure (the filesystem is asked through an FsProbe), so every argument is
// unit-tested. See ./backend.ts for how a spawn request is wrapped and why the command
// runs under `env --ignore-signal` / `env --default-signal`.
import path from 'node:path';
import { MINIMAL_READ_PATHS, accessFor, decidingRule, type ManagedSandboxProfile } from './profile';
import { realFs, resolvePath, type FsProbe } from './resolve';
import { INNER_MOUNTS, holderMounts, type EnterNamespace } from './prepared-namespace';

/** The descriptor bwrap reads the seccomp program from (opened by the `sh` in front of it). */
export const SECCOMP_FD = '3';

/**
 * Run by `bash -p` as the sandbox's first program: closes every descriptor above 2, then execs
 * the rest. A descriptor the server inherited without close-on-exec (or the seccomp program's)
 * would otherwise reach the command, and a directory fd opened outside the mount namespace
 * still reaches the host's files (/proc/self/fd/N/..), whatever the mounts say. bwrap passes
 * descriptors through untouched. `-p` (privileged mode) makes bash ignore BASH_ENV, exported
 * functions, SHELLOPTS/BASHOPTS and GLOBIGNORE, and `--norc` stops Debian's bash from sourcing
 * ~/.bashrc when stdin is a socket (Node's pipes are socketpairs) or SSH_CLIENT is set, so
 * nothing from the client's environment or home runs while the descriptors are still open
 * (closing a descriptor that is not open is silent).
 */
export const CLOSE_FDS_SCRIPT = 'for f in /proc/self/fd/*; do f=${f##*/}; if [[ $f -gt 2 ]]; then exec {f}>&-; fi; done; exec "$@"';

/**
 * The line the sandbox's first program writes before anything of the command runs: bubblewrap's
 * setup is done (./setup-retry.ts). It goes to the descriptor that program gets as its first
 * argument: 2 as wrapArgv builds it (a PTY's terminal, where the line is taken out of the one
 * stream; stderr elsewhere), READY_FD for a pipe child, a pipe of its own there, so that stderr
 * becomes readable when the command writes it, not before, as stdout does (their order as read).
 */
export const SANDBOX_READY = 'exec-server: sandbox ready';
/** The descriptor a pipe child's first program writes SANDBOX_READY to (./setup-retry.ts). */
export const READY_FD = 9;
/**
 * Put in front of the first program's script: says the sandbox is set up on the descriptor in
 * "$1" (builtins: no process), then drops that argument; the descriptor loop that follows closes
 * it. When the line cannot be written, the command does not run: it would run unannounced, and a
 * run the engine did not see start could be started again.
 */
export const READY_PREFIX = `printf '%s\\n' '${SANDBOX_READY}' >&"$1" || exit 1; shift; `;
/** How often ./setup-retry.ts starts bubblewrap when its setup fails before the command runs. */
export const SETUP_TRIES = 5;

/**
 * The first program of a proxied sandbox (managed network proxy, ../network): closes every
 * descriptor above 2 but the executor's IPC channel (4), starts the relay
 * (../network/relay-source.ts) under `env -i` with that channel (NODE_CHANNEL_FD), reads the two
 * ports it listens on inside the sandbox's network namespace (its listening sockets are the
 * executor's by then), closes the channel, drops Node's channel variables from the command's
 * environment (a Node program would otherwise look for a channel at fd 4), sets the proxy
 * variables to those ports and execs the command. Arguments: env, node, relay source, HTTP
 * variable names, SOCKS variable names, the SOCKS URL scheme (`http` without SOCKS5).
 */
export const PROXIED_SCRIPT = [
  "IFS=$' \\t\\n'",
  'for f in /proc/self/fd/*; do f=${f##*/}; if [[ $f -gt 2 && $f -ne 4 ]]; then exec {f}>&-; fi; done',
  'e=$1 n=$2 s=$3 hk=$4 sk=$5 ss=$6; shift 6',
  'exec {r}< <(exec "$e" -i ELECTRON_RUN_AS_NODE=1 NODE_CHANNEL_FD=4 NODE_CHANNEL_SERIALIZATION_MODE=json "$n" -e "$s" </dev/null 2>/dev/null)',
  'read -r hp sp <&$r || { echo "exec-server: the network proxy relay did not start" >&2; exit 101; }',
  'if [[ $hp = error ]]; then printf "exec-server: %s\\n" "$sp" >&2; exit 101; fi',
  'exec {r}<&- 4>&-',
  'unset NODE_CHANNEL_FD NODE_CHANNEL_SERIALIZATION_MODE',
  'for k in $hk; do export "$k=http://127.0.0.1:$hp"; done',
  'if [[ $ss = http ]]; then u=http://127.0.0.1:$hp; else u=$ss://127.0.0.1:$sp; fi',
  'for k in $sk; do export "$k=$u"; done',
  'exec "$@"',
].join('\n');

export interface ProxiedSandbox {
  /** The node (or Electron, run as node) binary that runs the relay. */
  node: string;
  relaySource: string;
  httpKeys: string[];
  socksKeys: string[];
  socksScheme: 'socks5h' | 'http';
  /** Transparent TCP (../network/transparent.ts): this file is bound over /etc/resolv.conf. */
  resolvConf?: string;
}

/**
 * The sandbox's pid namespace (the CLI's --linux-sandbox-pid-namespace, as the reference's):
 * `isolate` (the default) gives it its own (--unshare-pid, a fresh /proc: it sees and signals
 * only its own processes, and everything in it dies with its pid 1); `inherit` leaves it in
 * the server's, as the reference does: no --unshare-pid, and /proc is the host's, read-only
 * (bwrap cannot mount a procfs of its own there). The command can then see and signal every
 * process of the same uid, and a process that left the sandbox's group outlives terminate.
 */
export type PidNamespaceMode = 'isolate' | 'inherit';
export const PID_NAMESPACE_MODES: readonly PidNamespaceMode[] = ['isolate', 'inherit'];

/** Signals a terminal sends to its foreground group; see wrapArgv for why they matter. */
export const TTY_SIGNALS = 'INT,QUIT,TSTP';

export interface BwrapTools {
  /** bubblewrap executable. */
  bwrap: string;
  /** coreutils `env` (≥ 8.31 for --default-signal); must be visible inside the sandbox too. */
  env: string;
  /** bash, only for `arg0` (bwrap 0.8 has no --argv0; `exec -a` sets it). */
  bash: string;
  /** POSIX sh that opens the seccomp program as fd 3 for bwrap (reads no startup files). */
  sh: string;
  /** The server's private directory holding the files below; hidden from sandboxes that could write it. */
  privateDir: string;
  /** An empty file with mode 000, bound over files whose access is `none`. */
  denyFile: string;
  /** Seccomp programs (./seccomp.ts) for restricted / enabled / proxied network; absent: no filter. */
  seccomp?: { restricted: string; enabled: string; proxied: string };
  /** util-linux nsenter, to enter a prepared mount namespace (./prepared-namespace.ts); absent: never. */
  nsenter?: string;
}

/** Paths a sandbox may never re-bind: the fresh /proc and /dev are what isolate it. */
function isVirtual(p: string): boolean {
  return p === '/proc' || p.startsWith('/proc/') || p === '/dev' || p.startsWith('/dev/');
}

function depth(p: string): number {
  return p === '/' ? 0 : p.split('/').length - 1;
}

/**
 * The filesystem and namespace arguments for `profile` (already symlink-resolved by
 * resolveProfile). Mounts are applied in order, so rules go from the shallowest path to the
 * deepest: a writable root is bound before the read-only `.git` inside it, which wins.
 */
export function bwrapArgs(
  profile: ManagedSandboxProfile,
  cwd: string,
  tools: Pick<BwrapTools, 'denyFile' | 'privateDir' | 'seccomp'>,
  probe: FsProbe = realFs,
  pidNamespace: PidNamespaceMode = 'isolate',
): string[] {
  const args: string[] = [];
  if (profile.fullWrite) args.push('--bind', '/', '/');
  else if (profile.fullRead) args.push('--ro-bind', '/', '/');
  else {
    // Nothing readable by default: the sandbox root is an empty tmpfs. The system's program
    // directories are still bound read-only (not /etc, not /home) so the wrapper and the
    // command can start at all; the profile's own rules follow and may narrow them.
    for (const p of MINIMAL_READ_PATHS) {
      if (p === '/etc' || p === '/opt') continue;
      const k = probe.kind(p);
      if (k === 'directory') args.push('--ro-bind', p, p);
      else if (k === 'symlink') args.push('--symlink', probe.readlink(p), p); // /bin → usr/bin on merged-/usr systems
    }
  }
  // Inherit: the host's /proc, read-only (the fd-closing wrapper needs /proc/self/fd whatever the rules say).
  args.push('--dev', '/dev', ...(pidNamespace === 'inherit' ? ['--ro-bind', '/proc', '/proc'] : ['--proc', '/proc']));

  const paths = [...new Set(profile.rules.map((r) => r.path))]
    .filter((p) => p !== '/' && !isVirtual(p))
    .sort((a, b) => depth(a) - depth(b) || (a < b ? -1 : a > b ? 1 : 0));
  // Made read-only last: a more specific rule below a hidden directory (e.g. a writable
  // project under a `none` home) needs its mount point created in the tmpfs first.
  const remountRo: string[] = [];
  const scanned = new Set(profile.rules.filter((r) => r.scanned).map((r) => r.path));
  for (const p of paths) {
    const access = accessFor(profile, p);
    if (access === 'write') args.push('--bind', p, p);
    // A carve-out the engine's scan found (./carve-outs.ts) may vanish before bwrap runs.
    else if (access === 'read') args.push(scanned.has(p) ? '--ro-bind-try' : '--ro-bind', p, p);
    else if (probe.kind(p) === 'directory') {
      // An empty, read-only, mode-000 directory: listing and creating fail with EACCES. With
      // something re-exposed below it, search (x) only, so that path can be reached.
      const exposesChild = paths.some((q) => q !== p && q.startsWith(p + '/') && accessFor(profile, q) !== 'none');
      args.push('--perms', exposesChild ? '0111' : '0000', '--tmpfs', p);
      remountRo.push(p);
    } else {
      args.push('--ro-bind', tools.denyFile, p);
    }
  }

  // The server's own files (seccomp programs, deny file) must not be rewritten by a sandbox
  // that could write there (e.g. /tmp writable): the next sandbox would load them.
  if (accessFor(profile, tools.privateDir) === 'write') args.push('--tmpfs', tools.privateDir);
  for (const p of remountRo) args.push('--remount-ro', p);

  args.push('--unshare-user', ...(pidNamespace === 'inherit' ? [] : ['--unshare-pid']), '--unshare-ipc');
  if (profile.network === 'restricted') args.push('--unshare-net');
  // Real root keeps every capability inside the user namespace unless told otherwise.
  args.push('--cap-drop', 'ALL', '--die-with-parent', '--chdir', path.resolve(cwd));
  if (tools.seccomp) args.push('--seccomp', SECCOMP_FD);
  return args;
}

/**
 * The full host argv for `argv` under the profile:
 *   [sh -c 'exec 3<"$0" && exec "$@"' <seccomp program>] env --ignore-signal=INT,QUIT,TSTP bwrap <args> --
 *     bash --norc -p -c <READY_PREFIX CLOSE_FDS_SCRIPT> exec-server-close-fds 2 env --default-signal=INT,QUIT,TSTP [bash --norc -c 'exec -a …'] argv…
 * Each program execs the next: the process the engine spawns becomes bubblewrap, whose
 * --die-with-parent ties the sandbox to the server itself. A setup that fails is retried by the
 * engine (./setup-retry.ts), not by a process of its own here: such a host-side wrapper (setpriv +
 * bash, 2026-12-06) cost 3.5 ms per start on a quiet machine, 20-55 ms at load 7 (CHANGELOG).
 * Why the two `env`s: there is no --new-session (see ./backend.ts), so bwrap itself is in
 * the process group that interrupt signals and, on a PTY, in the terminal's foreground
 * group that Ctrl-C reaches. bwrap dies on SIGINT, which would kill the sandbox and lose the
 * exit code; ignoring it keeps bwrap alive. Ignored dispositions survive exec, so the command
 * gets the defaults back just before it starts (a shell's `trap … INT` then works as usual).
 * The leading `sh` is how a PTY child (node-pty passes no extra descriptors) hands bwrap the
 * seccomp program; a non-interactive POSIX sh reads no startup files and no $ENV, so the
 * client's environment cannot make it run anything outside the sandbox.
 */
export function wrapArgv(
  profile: ManagedSandboxProfile,
  req: { argv: string[]; cwd: string; arg0?: string; proxied?: ProxiedSandbox },
  tools: BwrapTools,
  probe: FsProbe = realFs,
  pidNamespace: PidNamespaceMode = 'isolate',
  /** A prepared namespace for these mounts, if one is ready (./prepared-namespace.ts preparedNamespace). */
  enter?: (holderMounts: string[]) => EnterNamespace | undefined,
): string[] {
  const proxied = req.proxied;
  // The first program says when the sandbox is set up (READY_PREFIX, on stderr: see SANDBOX_READY).
  const first = proxied
    ? [tools.bash, '--norc', '-p', '-c', READY_PREFIX + PROXIED_SCRIPT, 'exec-server-relay', '2', tools.env, proxied.node, proxied.relaySource, proxied.httpKeys.join(' '), proxied.socksKeys.join(' '), proxied.socksScheme]
    : [tools.bash, '--norc', '-p', '-c', READY_PREFIX + CLOSE_FDS_SCRIPT, 'exec-server-close-fds', '2'];
  const inner = [...first, tools.env, `--default-signal=${TTY_SIGNALS}`];
  // --norc: see CLOSE_FDS_SCRIPT (~/.bashrc would otherwise run before the command).
  if (req.arg0 !== undefined && req.arg0 !== req.argv[0]) inner.push(tools.bash, '--norc', '-c', 'exec -a "$0" -- "$@"', req.arg0);
  // Proxied: the network namespace is unshared whatever the profile's `network` says, and the
  // relay's node binary (and the directory it loads from) is made readable when it is not.
  const netProfile = proxied ? { ...profile, network: 'restricted' as const } : profile;
  const extra = proxied && accessFor(profile, path.dirname(proxied.node)) === 'none' ? ['--ro-bind', path.dirname(proxied.node), path.dirname(proxied.node)] : [];
  if (proxied?.resolvConf) extra.push(...resolvConfMounts(netProfile, proxied.resolvConf, probe));
  const args = bwrapArgs(netProfile, req.cwd, tools, probe, pidNamespace);
  // The extra binds go before the namespace flags (bwrapArgs ends with them), after the mounts.
  const at = args.indexOf('--unshare-user');
  args.splice(at, 0, ...extra);
  // Mounts built once (./prepared-namespace.ts): entered, then only the per-start part is run.
  const holder = enter && pidNamespace === 'isolate' ? holderMounts(args.slice(0, at + extra.length)) : undefined;
  const ns = holder && enter?.(holder);
  const bwrap = ns
    ? [ns.nsenter, `--user=${ns.user}`, `--mount=${ns.mount}`, '--preserve-credentials', '--', tools.bwrap, ...INNER_MOUNTS, ...args.slice(at + extra.length)]
    : [tools.bwrap, ...args];
  const outer = [tools.env, `--ignore-signal=${TTY_SIGNALS}`, ...bwrap, '--', ...inner, ...req.argv];
  if (!tools.seccomp) return outer;
  const program = proxied ? tools.seccomp.proxied : profile.network === 'restricted' ? tools.seccomp.restricted : tools.seccomp.enabled;
  return [tools.sh, '-c', `exec ${SECCOMP_FD}<"$0" && exec "$@"`, program, ...outer];
}

/**
 * The mounts that put `file` (transparent TCP's resolv.conf) where the sandbox's /etc/resolv.conf
 * leads. bwrap binds onto where a destination's symlinks lead, and creates a missing file there
 * only in a directory it may write: a host whose /etc/resolv.conf is a dangling link
 * (systemd-resolved's `../run/systemd/resolve/stub-resolv.conf` with resolved stopped, a
 * container without that directory) failed every transparent start with "Can't create file at
 * /etc/resolv.conf" (test/server/sandbox/bwrap.resolv-conf.test.ts). So when the link's target
 * does not exist:
 * - in the sandbox's own empty root (no rule decides there): bound at the target, its
 *   directories made there by bwrap;
 * - below a directory the sandbox reads and no rule reaches into: that directory becomes a
 *   tmpfs holding its own entries again (each bound read-only from the host, links re-made),
 *   plus the missing directories and the file, then made read-only: the same view, and the file;
 * - otherwise not bound (the sandbox resolves as the host does: nothing answers on 127.0.0.1).
 */
export function resolvConfMounts(profile: ManagedSandboxProfile, file: string, probe: FsProbe = realFs): string[] {
  const target = resolvePath('/etc/resolv.conf', probe);
  if (target.exists) return ['--ro-bind', file, '/etc/resolv.conf'];
  if (!profile.fullRead && !profile.fullWrite && decidingRule(profile, target.path) === undefined) return ['--ro-bind', file, target.path];
  let dir = path.dirname(target.path);
  while (dir !== '/' && probe.kind(dir) !== 'directory') dir = path.dirname(dir);
  const reachesInto = profile.rules.some((r) => r.path.startsWith(`${dir}/`));
  if (dir === '/' || isVirtual(dir) || !probe.list || reachesInto || accessFor(profile, dir) !== 'read') return [];
  const out = ['--tmpfs', dir];
  for (const name of probe.list(dir)) {
    const p = path.join(dir, name);
    const kind = probe.kind(p);
    if (kind === 'symlink') out.push('--symlink', probe.readlink(p), p);
    else if (kind !== 'missing') out.push('--ro-bind-try', p, p);
  }
  out.push('--ro-bind', file, target.path, '--remount-ro', dir);
  return out;
}
