// Where Connect to Host goes and how the system `ssh` is called: a typed `user@host[:port]`
// (or a ~/.ssh/config alias) read strictly — nothing that ssh could take for an option —, the
// ssh argv (BatchMode: never a password or host-key prompt nobody can answer; `--` before the
// destination), running ssh to completion, and ssh's failures turned into a kind the UI can
// name (authentication, unknown host key, no route, …). Free of `vscode`.
import { HeadTail, noLinks, runChild, type ChildResult } from '../common';
import { withAskpassEnv, type AskpassProvider } from './askpass';

export interface SshTarget {
  /** A ~/.ssh/config alias or a host name / address as typed. */
  host: string;
  user?: string;
  port?: number;
}

/** How ssh is run: the binary, and `-F file` instead of ~/.ssh/config (tests, the setting). */
export interface SshOptions {
  sshPath?: string;
  configFile?: string;
  /** ssh's password / passphrase / keyboard-interactive questions go to the user (./askpass.ts); without it BatchMode=yes. */
  askpass?: AskpassProvider;
}

const USER = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const HOST = /^[A-Za-z0-9_]([A-Za-z0-9._-]*[A-Za-z0-9_])?$/;
const V6 = /^[0-9A-Fa-f:.]+(%[A-Za-z0-9._-]+)?$/;

/**
 * Reads `host`, `user@host`, `host:port`, `user@host:port`, `[v6]:port`, `ssh://user@host:port`.
 * Throws a message fit for the quick pick. Never accepts a leading `-` or whitespace (ssh would
 * read an option), nor a port outside 1–65535.
 */
export function parseSshTarget(input: string): SshTarget {
  let text = input.trim();
  if (!text) throw new Error('Enter a host: user@host or user@host:port');
  if (/^ssh:\/\//i.test(text)) text = text.slice(6).replace(/\/$/, '');
  if (/\s/.test(text)) throw new Error(`"${text}" holds a space: enter user@host[:port]`);
  let user: string | undefined;
  const at = text.lastIndexOf('@');
  if (at >= 0) {
    user = text.slice(0, at);
    text = text.slice(at + 1);
    if (!USER.test(user)) throw new Error(`"${user}" is not a user name ssh accepts here (letters, digits, . _ -)`);
  }
  let host = text;
  let portText: string | undefined;
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (v6) {
    host = v6[1];
    portText = v6[2];
    if (!V6.test(host)) throw new Error(`"${host}" is not an IPv6 address`);
  } else {
    const colon = text.lastIndexOf(':');
    if (colon >= 0) {
      host = text.slice(0, colon);
      portText = text.slice(colon + 1);
      if (!/^\d+$/.test(portText)) throw new Error(`"${portText}" is not a port number`);
    }
    if (!HOST.test(host)) throw new Error(`"${host || text}" is not a host name (letters, digits, . _ -; it may not start with -)`);
  }
  let port: number | undefined;
  if (portText !== undefined) {
    port = Number(portText);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`port ${portText} is out of range (1–65535)`);
  }
  return { host, user, port };
}

/** user@host:port as the user would type it again. */
export function formatSshTarget(t: SshTarget): string {
  const host = t.host.includes(':') ? `[${t.host}]` : t.host;
  return `${t.user ? `${t.user}@` : ''}${host}${t.port ? `:${t.port}` : ''}`;
}

/** A name for the environment (the settings' URI-safe rules): `user@host:port` → `user-host-port`. */
export function environmentNameFor(t: SshTarget): string {
  const raw = [t.user, t.host, t.port].filter((x) => x !== undefined && x !== '').join('-');
  const name = raw.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/-{2,}/g, '-').replace(/^-+|-+$/g, '').slice(0, 64);
  return name || 'ssh-host';
}

/** POSIX shell single quoting (also read the same by bash, zsh and fish for such words). */
export function shQuote(s: string): string {
  return s !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export interface SshArgvOptions {
  /** Accept and record a host key seen for the first time (the user agreed: trust on first use). */
  acceptNewHostKey?: boolean;
  /** Seconds for the TCP connection + handshake (ssh's ConnectTimeout). */
  connectTimeoutSec?: number;
  /** A long-lived session (the saved environment): keep-alives detect a dead link. */
  keepAlive?: boolean;
}

/**
 * The ssh arguments (without the binary) that run `remoteCommand` on `t`. BatchMode=yes unless
 * `ssh.askpass`: a password, passphrase or host-key question fails at once with a message instead
 * of waiting on a prompt no one sees; with a helper the questions reach the user (a host-key
 * question is refused there: Connect to Host asks it itself). -T: no terminal (stdout carries
 * the protocol).
 */
export function sshArgv(t: SshTarget, ssh: SshOptions, remoteCommand: string, o: SshArgvOptions = {}): string[] {
  const argv: string[] = [];
  if (ssh.configFile) argv.push('-F', ssh.configFile);
  argv.push('-T', '-o', `BatchMode=${ssh.askpass ? 'no' : 'yes'}`, '-o', `ConnectTimeout=${o.connectTimeoutSec ?? 15}`);
  // A host's RemoteCommand would clash with ours ("Cannot execute command-line and remote
  // command"); its port forwardings (ExitOnForwardFailure, a port taken by the terminal session
  // the user has open) are not this transport's business.
  argv.push('-o', 'RemoteCommand=none', '-o', 'ClearAllForwardings=yes');
  // Nor is a LocalCommand (PermitLocalCommand yes): it runs on this machine on every (re)connect
  // and its stdout is ssh's, i.e. the protocol stream.
  argv.push('-o', 'PermitLocalCommand=no');
  if (o.acceptNewHostKey) argv.push('-o', 'StrictHostKeyChecking=accept-new');
  if (o.keepAlive) argv.push('-o', 'ServerAliveInterval=15', '-o', 'ServerAliveCountMax=4');
  if (t.port) argv.push('-p', String(t.port));
  if (t.user) argv.push('-l', t.user);
  argv.push('--', t.host, remoteCommand);
  return argv;
}

export type SshFailureKind =
  | 'ssh-missing'
  | 'auth'
  | 'host-key-unknown'
  | 'host-key-changed'
  | 'unknown-host'
  | 'refused'
  | 'no-route'
  | 'timeout'
  | 'closed'
  | 'failed';

/** ssh could not run the remote command (before it started): kind + the human sentence. */
export class SshError extends Error {
  constructor(
    readonly kind: SshFailureKind,
    readonly target: string,
    readonly stderr: string,
  ) {
    // Shown in a notification; stderr holds what the host printed (its banner, its shell's errors).
    super(noLinks(describeSshFailure(kind, target, stderr)));
    this.name = 'SshError';
  }
}

/**
 * Classifies ssh's stderr after exit code 255 (ssh's own failure; other codes are the remote
 * command's). The patterns are OpenSSH's messages; `undefined`: not an ssh failure.
 */
export function classifySshFailure(stderr: string, exitCode: number | null): SshFailureKind | undefined {
  const s = stderr;
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for .* has changed/i.test(s)) return 'host-key-changed';
  if (/Host key verification failed|No .*host key is known|authenticity of host .* can't be established/i.test(s)) return 'host-key-unknown';
  if (/Permission denied \(|Too many authentication failures|no more authentication methods/i.test(s)) return 'auth';
  if (/Could not resolve hostname|Name or service not known|nodename nor servname|Temporary failure in name resolution/i.test(s)) return 'unknown-host';
  if (/Connection refused/i.test(s)) return 'refused';
  if (/No route to host|Network is unreachable|Network unreachable/i.test(s)) return 'no-route';
  if (/Connection timed out|Operation timed out|timed out during banner exchange/i.test(s)) return 'timeout';
  if (/Connection closed by|Connection reset by|kex_exchange_identification/i.test(s)) return 'closed';
  if (exitCode === 255) return 'failed';
  return undefined;
}

/** The last `n` lines ssh (or the host) printed, each cut to 300 characters: a message, not a dump. */
export function lastLines(s: string, n = 3): string {
  return s
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !/^Warning: Permanently added/.test(l))
    .slice(-n)
    .map((l) => (l.length > 300 ? `${l.slice(0, 300)}…` : l))
    .join(' | ');
}

export function describeSshFailure(kind: SshFailureKind, target: string, stderr: string): string {
  // ssh's own lines start "ssh: …": under "(ssh: …)" once is enough.
  const said = lastLines(stderr)
    .split(' | ')
    .map((l) => l.replace(/^ssh: /, ''))
    .join(' | ');
  const tail = said ? ` (ssh: ${said})` : '';
  switch (kind) {
    case 'ssh-missing':
      return `no ssh client found (${said || 'ssh'}); install OpenSSH or set execServer.ssh.path`;
    case 'auth':
      return `${target} refused the login${tail}. Check the user name and the password or key (IdentityFile in the ssh config, or ssh-agent)`;
    case 'host-key-unknown':
      return `the host key of ${target} is not known yet${tail}`;
    case 'host-key-changed':
      return `the host key of ${target} has CHANGED since it was recorded — possibly an attack; check it and fix known_hosts yourself${tail}`;
    case 'unknown-host':
      return `unknown host ${target}: the name does not resolve${tail}`;
    case 'refused':
      return `${target} refused the connection: no ssh server listens on that port${tail}`;
    case 'no-route':
      return `no route to ${target}: the network cannot reach it${tail}`;
    case 'timeout':
      return `${target} did not answer in time (no route, a firewall, or the host is down)${tail}`;
    case 'closed':
      return `${target} closed the connection during the ssh handshake${tail}`;
    default:
      return `ssh to ${target} failed${tail}`;
  }
}

export type SshRunResult = ChildResult;

/**
 * What runSsh keeps of the commands' output. Every caller reads a few lines (the probe's
 * key=value lines, `installed=…`, the detached server's JSON); the host decides what it prints,
 * and a host printing without end would otherwise fill the extension host's memory until the
 * timeout. Past MAX_SSH_STDOUT ssh is stopped; of stderr (a build's log can be long, and it is
 * streamed to onStderr anyway) the first and the last part are kept: ssh's own messages and
 * the installer's `error:` line are there.
 */
export const MAX_SSH_STDOUT = 1024 * 1024;
const STDERR_HEAD = 64 * 1024;
const STDERR_TAIL = 192 * 1024;

/**
 * Runs ssh with `argv` to completion, writing `input` to its stdin (then closing it). Rejects
 * only when ssh cannot be started (SshError 'ssh-missing'); `timeoutMs` kills it (SIGKILL) and
 * rejects with 'timeout'; more than MAX_SSH_STDOUT on stdout kills it and rejects ('failed').
 * An AbortSignal kills it too.
 */
export function runSsh(ssh: SshOptions, argv: string[], opts: { input?: string | Buffer; timeoutMs?: number; target?: string; signal?: AbortSignal; onStderr?(line: string): void } = {}): Promise<SshRunResult> {
  const bin = ssh.sshPath || 'ssh';
  const target = opts.target ?? argv[argv.indexOf('--') + 1] ?? 'the host';
  const asking = ssh.askpass?.open(target);
  const run = runChild(bin, argv, {
    maxStdout: MAX_SSH_STDOUT,
    stderr: new HeadTail(STDERR_HEAD, STDERR_TAIL),
    maxLine: STDERR_TAIL,
    errors: {
      spawnFailed: (e) => (e.code === 'ENOENT' ? new SshError('ssh-missing', target, `${bin}: not found`) : e),
      timedOut: (stderr, ms) => new SshError('timeout', target, `${stderr}\n(no answer within ${Math.round(ms / 1000)} s)`),
      stdoutFlood: (max) => new SshError('failed', target, `the host printed more than ${max / 1048576} MiB on stdout where a few lines were expected; stopped`),
    },
  }, { ...opts, env: withAskpassEnv(asking) });
  // Its questions end with it (a helper still waiting is answered "no", its input box hidden).
  if (asking) void run.then(asking.dispose, asking.dispose);
  return run;
}

/** Throws the classified SshError when `r` is ssh's own failure (exit 255 / a known message). */
export function throwIfSshFailed(r: SshRunResult, target: string): void {
  if (r.code !== 255) return;
  const kind = classifySshFailure(r.stderr, r.code) ?? 'failed';
  throw new SshError(kind, target, r.stderr);
}
