// Trust on first use, with the fingerprint the user approved: for a host whose key ssh does not
// know yet, the key is fetched once with ssh-keyscan (at the address and port ssh itself would
// use: `ssh -G` resolves the config), its SHA256 fingerprints are shown, and only the keys the
// user approved are written to the user's known_hosts — so the connection that follows runs
// with strict checking and fails if the host then presents another key (ssh's own accept-new
// would record whatever the second connection sees). Free of `vscode`.
import { spawn } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { SshError, formatSshTarget, type SshOptions, type SshTarget } from './target';

export interface ScannedHostKey {
  /** The known_hosts line (host field as ssh will look it up). */
  line: string;
  type: string;
  /** SHA256:… as ssh prints it. */
  fingerprint: string;
}

export interface HostKeyScan {
  /** Where the keys go: the first UserKnownHostsFile of the resolved config. */
  knownHostsFile: string;
  /** The name ssh looks the key up by: HostKeyAlias, else host / [host]:port. */
  knownHostsName: string;
  keys: ScannedHostKey[];
}

function run(bin: string, args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `ssh -G`: the options ssh would use for `t` (lower-case keys, first value of each). */
export async function resolveSshConfig(t: SshTarget, ssh: SshOptions): Promise<Map<string, string>> {
  const args = ['-G'];
  if (ssh.configFile) args.push('-F', ssh.configFile);
  if (t.port) args.push('-p', String(t.port));
  if (t.user) args.push('-l', t.user);
  args.push('--', t.host);
  const r = await run(ssh.sshPath || 'ssh', args, 15_000);
  if (r.code !== 0) throw new SshError('failed', formatSshTarget(t), `ssh -G: ${r.stderr}`);
  const out = new Map<string, string>();
  for (const line of r.stdout.split('\n')) {
    const sp = line.indexOf(' ');
    if (sp > 0 && !out.has(line.slice(0, sp))) out.set(line.slice(0, sp), line.slice(sp + 1).trim());
  }
  return out;
}

/** The host is reached through a proxy: its key cannot be fetched beforehand. */
export class ProxiedHostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProxiedHostError';
  }
}

/** ssh's fingerprint of a base64 key blob: SHA256:<unpadded base64 of its SHA-256>. */
export function fingerprintOf(keyBase64: string): string {
  return `SHA256:${createHash('sha256').update(Buffer.from(keyBase64, 'base64')).digest('base64').replace(/=+$/, '')}`;
}

/**
 * A host name or address that means itself in a known_hosts host field and on ssh-keyscan's
 * command line: no pattern characters (`*`, `?`, `!`), no list separator (`,`), no whitespace,
 * no marker (`@`), no hashed-entry or bracket syntax (`|`, `[`, `]`). IPv6 (with a `%zone`) passes.
 */
export function isPlainHostName(name: string): boolean {
  return /^[A-Za-z0-9_.:%-]+$/.test(name) && !name.startsWith('-');
}

/** The ssh-keyscan binary next to the ssh client in use (else from PATH). */
function keyscanFor(ssh: SshOptions): string {
  return ssh.sshPath && ssh.sshPath.includes('/') ? path.join(path.dirname(ssh.sshPath), 'ssh-keyscan') : 'ssh-keyscan';
}

/** Fetches the host keys `t` presents, without trusting anything. Throws if none came back. */
export async function scanHostKeys(t: SshTarget, ssh: SshOptions): Promise<HostKeyScan> {
  const cfg = await resolveSshConfig(t, ssh);
  // ssh-keyscan connects directly: through a jump host or a proxy command it would ask the wrong machine.
  for (const k of ['proxyjump', 'proxycommand']) {
    const v = cfg.get(k);
    if (v && v !== 'none') throw new ProxiedHostError(`${formatSshTarget(t)} is reached through ${k === 'proxyjump' ? 'ProxyJump' : 'ProxyCommand'} ${v}`);
  }
  const hostname = cfg.get('hostname') ?? t.host;
  const port = Number(cfg.get('port') ?? '22');
  const knownHostsFile = (cfg.get('userknownhostsfile') ?? '').split(/\s+/)[0];
  if (!knownHostsFile || knownHostsFile === '/dev/null') throw new SshError('host-key-unknown', formatSshTarget(t), 'no UserKnownHostsFile to record the key in');
  const alias = cfg.get('hostkeyalias');
  // These become the host field of a known_hosts line, which is a pattern list: a config (or an
  // Include'd file) with `HostKeyAlias *` or `HostName a,b` would have the approved key trusted
  // for every host, or for hosts that were never scanned; `@…` would read as a marker.
  if (!isPlainHostName(hostname)) throw new SshError('host-key-unknown', formatSshTarget(t), `HostName ${JSON.stringify(hostname)} is not a plain host name or address: no key is fetched or recorded for it`);
  if (alias && alias !== 'none' && !isPlainHostName(alias)) throw new SshError('host-key-unknown', formatSshTarget(t), `HostKeyAlias ${JSON.stringify(alias)} is not a plain host name: recording a key under it would trust it for other hosts`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new SshError('host-key-unknown', formatSshTarget(t), `port ${cfg.get('port')} is out of range`);
  const knownHostsName = alias && alias !== 'none' ? alias : port === 22 ? hostname : `[${hostname}]:${port}`;
  // HashKnownHosts yes: the user keeps host names out of known_hosts; so do we.
  const hostField = cfg.get('hashknownhosts') === 'yes' ? hashedHostField(knownHostsName) : knownHostsName;
  let r;
  try {
    r = await run(keyscanFor(ssh), ['-T', '10', '-p', String(port), '--', hostname], 20_000);
  } catch (e) {
    throw new SshError('ssh-missing', formatSshTarget(t), `ssh-keyscan: ${(e as Error).message}`);
  }
  const keys: ScannedHostKey[] = [];
  for (const line of r.stdout.split('\n')) {
    const parts = line.trim().split(/\s+/);
    if (parts.length < 3 || parts[0].startsWith('#')) continue;
    const [, type, blob] = parts;
    if (!/^[A-Za-z0-9@._-]+$/.test(type) || !/^[A-Za-z0-9+/]+={0,2}$/.test(blob)) continue;
    keys.push({ line: `${hostField} ${type} ${blob}`, type, fingerprint: fingerprintOf(blob) });
  }
  if (!keys.length) throw new SshError('closed', formatSshTarget(t), `ssh-keyscan got no host key from ${hostname}:${port}: ${r.stderr.trim()}`);
  return { knownHostsFile, knownHostsName, keys };
}

/** OpenSSH's hashed host field: |1|base64(salt)|base64(HMAC-SHA1 keyed with the salt, over the name). */
export function hashedHostField(name: string, salt: Buffer = randomBytes(20)): string {
  return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
}

/**
 * Appends the approved keys to the known_hosts file (created 0600 with its folder if missing).
 * Only to a regular file: a UserKnownHostsFile that is a FIFO would block the extension host's
 * thread until a reader comes (O_NONBLOCK: the open fails instead), a device is no record.
 */
export function recordHostKeys(scan: HostKeyScan): void {
  mkdirSync(path.dirname(scan.knownHostsFile), { recursive: true, mode: 0o700 });
  const fd = openSync(scan.knownHostsFile, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK, 0o600);
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${scan.knownHostsFile} is not a regular file: the host key was not recorded`);
    writeSync(fd, scan.keys.map((k) => k.line).join('\n') + '\n');
  } finally {
    closeSync(fd);
  }
}
