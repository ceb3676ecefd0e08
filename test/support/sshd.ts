// A real OpenSSH server for the ssh tests (Debian openssh-server, installed by the install
// stage): started in the foreground (-D) on 127.0.0.1 and a free port, with a throwaway host
// key and user keys in a temp dir, and an ssh client config (`ssh -F`) whose aliases are the
// scenarios — so the user's ~/.ssh is never read or touched. Each scenario's key carries
// `environment="HOME=…,PATH=…"` in authorized_keys (PermitUserEnvironment), which is how a
// test gives the "host" a temp HOME or a PATH without node/compiler on the same machine.
// With `netns` the server runs on a host of its own (./netns.ts): its own network namespace and
// hostname, reached through a veth pair, its 127.0.0.1 not ours — what every real remote host is.
// Imports only Node built-ins: the VS Code e2e suite uses it too.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createNetNamespace, destroyNamespace, type NetNamespace } from './netns';
import { isAlive } from './process';
import { waitFor } from './wait';

export const SSHD = process.env.EXEC_SERVER_SSHD ?? '/usr/sbin/sshd';

export interface Scenario {
  /** The Host alias in the client config. */
  alias: string;
  /** Variables the login gets (authorized_keys environment=); HOME and PATH override the account's. */
  env?: Record<string, string>;
  /** A forced command (authorized_keys command=): runs instead of what the client asks, which it gets as $SSH_ORIGINAL_COMMAND. */
  command?: string;
  /** Log in with a key the server does not accept. */
  badKey?: boolean;
  /** Use a known_hosts file that does not hold the server's key (StrictHostKeyChecking yes). */
  unknownHostKey?: boolean;
  /** Point at a port nothing listens on. */
  closedPort?: number;
  /** The scenario's key is encrypted with this passphrase (ssh asks for it). */
  passphrase?: string;
  /** Log in with the account's password (startSshd's `password`), no key. */
  passwordLogin?: boolean;
}

export interface TestSshd {
  dir: string;
  /** The address the client config names (127.0.0.1, or the namespace's address). */
  host: string;
  port: number;
  /** The host's own namespaces (with `netns`). */
  netns?: NetNamespace;
  /** The client config for `ssh -F`. */
  configFile: string;
  /** The OS user the logins run as. */
  user: string;
  /** sshd's pid (with outliveSec: the pid of its `timeout`, which passes signals on). */
  pid: number;
  /** The server's log so far (for failure messages). */
  log(): string;
  stop(): Promise<void>;
}

/** A port free on 127.0.0.1 just now (the kernel picks it; closed again before use). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function keygen(file: string, passphrase = ''): string {
  const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', passphrase, '-C', 'exec-server-test', '-f', file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ssh-keygen failed: ${r.stderr || r.error?.message}`);
  return readFileSync(`${file}.pub`, 'utf8').trim();
}

/** authorized_keys option value: "…" with " and \ escaped. */
const optQuote = (s: string) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/** Starts sshd; throws (naming the install stage) if openssh-server is missing. */
export async function startSshd(
  scenarios: Scenario[],
  opts: {
    parent?: string;
    /** More sshd_config lines (e.g. AllowTcpForwarding no). */
    extraConfig?: string[];
    /**
     * The server outlives this process (a window reload ends the extension host that started
     * it) for at most this many seconds: its own process group under `timeout -s KILL`, its log
     * in a file. End it with stop() or stopDetachedSshd(pid, dir).
     */
    outliveSec?: number;
    /** Run on a host of its own: a network + UTS namespace made now (needs root; ./netns.ts). */
    netns?: boolean | { hostname?: string };
    /**
     * A password-only server: PasswordAuthentication yes, no keys. The account's password is this
     * one for this sshd alone: it runs in a mount namespace of its own where /etc/shadow is a copy
     * with the account's hash replaced (needs root). `env`: the logins' HOME/PATH (SetEnv; a
     * password login has no authorized_keys line to carry them).
     */
    password?: {
      password: string;
      env?: Record<string, string>;
      /**
       * Keyboard-interactive through PAM instead (KbdInteractiveAuthentication yes, UsePAM yes,
       * PasswordAuthentication no): the machine's own /etc/pam.d/sshd stack asks, pam_unix checks
       * the copied /etc/shadow.
       */
      pam?: boolean;
    };
  } = {},
): Promise<TestSshd> {
  if (!existsSync(SSHD)) throw new Error(`${SSHD} not found: the ssh tests need Debian's openssh-server (node scripts/tools/install.mjs openssh-server)`);
  const dir = mkdtempSync(path.join(opts.parent ?? os.tmpdir(), 'exec-sshd-'));
  const ns = opts.netns
    ? await createNetNamespace({ hostname: typeof opts.netns === 'object' ? opts.netns.hostname : undefined, lifetimeSec: (opts.outliveSec ?? 1800) + 60, detached: !!opts.outliveSec })
    : undefined;
  // For a reloaded window's stopDetachedSshd.
  if (ns) writeFileSync(path.join(dir, 'netns.json'), JSON.stringify({ holderPid: ns.holderPid, link: ns.link }));
  const listenHost = ns ? ns.address : '127.0.0.1';
  // sshd refuses to start without its privilege separation directory (the package's service makes it).
  if (!existsSync('/run/sshd') && process.getuid?.() === 0) mkdirSync('/run/sshd', { mode: 0o755, recursive: true });
  const user = os.userInfo().username;
  const hostPub = keygen(path.join(dir, 'host_key'));
  // A host of its own has all its ports: sshd's usual one.
  const port = ns ? 22 : await freePort();
  const authorized: string[] = [];
  const hosts: string[] = [];
  const known = path.join(dir, 'known_hosts');
  writeFileSync(known, `${port === 22 ? listenHost : `[${listenHost}]:${port}`} ${hostPub.split(' ').slice(0, 2).join(' ')}\n`);
  for (const s of scenarios) {
    const key = path.join(dir, `key-${s.alias}`);
    const pub = keygen(key, s.passphrase);
    const envOpts = [...Object.entries(s.env ?? {}).map(([k, v]) => `environment=${optQuote(`${k}=${v}`)}`), ...(s.command ? [`command=${optQuote(s.command)}`] : [])];
    if (!s.badKey) authorized.push(`${envOpts.length ? `${envOpts.join(',')} ` : ''}${pub}`);
    const kh = s.unknownHostKey ? path.join(dir, `known_hosts-${s.alias}`) : known;
    if (s.unknownHostKey) writeFileSync(kh, '');
    hosts.push(
      [
        `Host ${s.alias}`,
        `  HostName ${listenHost}`,
        `  Port ${s.closedPort ?? port}`,
        `  User ${user}`,
        ...(s.passwordLogin ? [`  PubkeyAuthentication no`, `  PreferredAuthentications password,keyboard-interactive`] : [`  IdentityFile ${key}`]),
        `  IdentitiesOnly yes`,
        `  IdentityAgent none`,
        `  UserKnownHostsFile ${kh}`,
        `  GlobalKnownHostsFile /dev/null`,
        `  StrictHostKeyChecking yes`,
        `  LogLevel ERROR`,
      ].join('\n'),
    );
  }
  const authFile = path.join(dir, 'authorized_keys');
  writeFileSync(authFile, authorized.join('\n') + '\n');
  chmodSync(authFile, 0o600);
  const configFile = path.join(dir, 'ssh_config');
  writeFileSync(configFile, hosts.join('\n\n') + '\n');
  const sshdConfig = path.join(dir, 'sshd_config');
  writeFileSync(
    sshdConfig,
    [
      `ListenAddress ${listenHost}`,
      `Port ${port}`,
      `HostKey ${path.join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${authFile}`,
      `PidFile ${path.join(dir, 'sshd.pid')}`,
      `PubkeyAuthentication ${opts.password ? 'no' : 'yes'}`,
      `PasswordAuthentication ${opts.password && !opts.password.pam ? 'yes' : 'no'}`,
      `KbdInteractiveAuthentication ${opts.password?.pam ? 'yes' : 'no'}`,
      `UsePAM ${opts.password?.pam ? 'yes' : 'no'}`,
      // The temp dir is not root-owned 0755 all the way up.
      `StrictModes no`,
      `PermitRootLogin ${opts.password ? 'yes' : 'prohibit-password'}`,
      ...Object.entries(opts.password?.env ?? {}).map(([k, v]) => `SetEnv ${optQuote(`${k}=${v}`)}`),
      `PermitUserEnvironment yes`,
      `LogLevel VERBOSE`,
      `MaxStartups 100`,
      `MaxSessions 100`,
      ...(opts.extraConfig ?? []),
    ].join('\n') + '\n',
  );
  let log = '';
  const logFile = path.join(dir, 'sshd.log');
  let child: ChildProcess;
  // A password of this server's own: /etc/shadow, as this sshd alone sees it, is a copy with the
  // account's hash replaced (a mount namespace; the machine's own file is never written).
  const shadowMount: string[] = [];
  if (opts.password) {
    if (process.getuid?.() !== 0) throw new Error('a password-only test sshd needs root (unshare --mount to give the account a password of its own)');
    const hash = spawnSync('openssl', ['passwd', '-6', '-stdin'], { input: opts.password.password, encoding: 'utf8' });
    if (hash.status !== 0) throw new Error(`openssl passwd failed: ${hash.stderr || hash.error?.message}`);
    const lines = readFileSync('/etc/shadow', 'utf8').split('\n').filter((l) => l && !l.startsWith(`${user}:`));
    const shadow = path.join(dir, 'shadow');
    writeFileSync(shadow, [`${user}:${hash.stdout.trim()}:20000:0:99999:7:::`, ...lines].join('\n') + '\n', { mode: 0o600 });
    shadowMount.push('unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount --bind "$0" /etc/shadow && exec "$@"', shadow);
  }
  const sshdArgv = [...(ns?.enter ?? []), ...shadowMount, SSHD, '-D', '-e', '-f', sshdConfig];
  if (opts.outliveSec) {
    const fd = openSync(logFile, 'a');
    child = spawn('timeout', ['-s', 'KILL', String(opts.outliveSec), ...sshdArgv], { stdio: ['ignore', 'ignore', fd], detached: true });
    closeSync(fd);
    child.unref();
  } else {
    child = spawn(sshdArgv[0], sshdArgv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  }
  const currentLog = () => (opts.outliveSec ? (existsSync(logFile) ? readFileSync(logFile, 'utf8') : log) : log);
  const killAtExit = () => {
    child.kill('SIGKILL');
    ns?.destroy();
  };
  if (!opts.outliveSec) process.on('exit', killAtExit);
  await new Promise<void>((resolve, reject) => {
    let exited = '';
    child.once('exit', (code, sig) => (exited = String(code ?? sig)));
    const deadline = Date.now() + 20_000;
    const poll = setInterval(() => {
      const now = currentLog();
      if (now.includes(`Server listening on ${listenHost} port`)) {
        clearInterval(poll);
        resolve();
      } else if (exited || Date.now() > deadline) {
        clearInterval(poll);
        ns?.destroy();
        reject(new Error(exited ? `sshd exited (${exited}) before listening: ${now}` : `sshd did not start listening within 20 s: ${now}`));
      }
    }, 50);
  });
  let stopped: Promise<void> | undefined;
  return {
    dir,
    host: listenHost,
    port,
    netns: ns,
    configFile,
    user,
    pid: child.pid!,
    log: currentLog,
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        process.off('exit', killAtExit);
        const done = () => {
          ns?.destroy();
          rmSync(dir, { recursive: true, force: true });
          resolve();
        };
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', done);
        child.kill('SIGTERM');
      });
      return stopped;
    },
  };
}

/** Ends a server started with outliveSec from another process (a reloaded window): SIGTERM, then its folder. */
export async function stopDetachedSshd(pid: number, dir: string): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
  await waitFor(() => !isAlive(pid), { timeout: 5_000, interval: 100, what: `sshd ${pid} to exit` }).catch(() => undefined); // then its folder regardless
  try {
    const ns = JSON.parse(readFileSync(path.join(dir, 'netns.json'), 'utf8')) as { holderPid: number; link: string };
    destroyNamespace(ns.holderPid, ns.link);
  } catch {
    /* not a namespaced host */
  }
  rmSync(dir, { recursive: true, force: true });
}

/** A directory of symlinks to the named programs (a PATH that holds only these). */
export function binDir(dir: string, programs: Record<string, string>): string {
  mkdirSync(dir, { recursive: true });
  for (const [name, target] of Object.entries(programs)) {
    const p = path.join(dir, name);
    rmSync(p, { force: true });
    if (target.startsWith('#!')) writeFileSync(p, target, { mode: 0o755 });
    else spawnSync('ln', ['-s', target, p]);
  }
  return dir;
}

/** Absolute path of `cmd` on this machine's PATH (or throws). */
export function whichOrThrow(cmd: string): string {
  for (const d of (process.env.PATH ?? '').split(':')) {
    const p = path.join(d || '.', cmd);
    if (existsSync(p)) return p;
  }
  throw new Error(`${cmd} is not on PATH`);
}
