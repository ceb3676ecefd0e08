// The CLI's security flags (websocket auth, TLS, allowed browser origins): parsed out of
// argv before the CLI's own parser sees it, validated together with the listen address.
// Combination errors use the reference's wording where the reference has the same flag.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { listenHost, isLoopbackHost, SecurityConfigError, type WsAuthConfig } from './ws-auth';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface SecurityOptions {
  auth?: WsAuthConfig;
  tls?: TlsFiles;
  /** Exact browser origins (scheme://host[:port]) allowed to open a websocket. */
  allowedOrigins: string[];
}

export interface ParsedSecurityArgs {
  options: SecurityOptions;
  /** argv without the security flags, for the CLI's own parser. */
  rest: string[];
}

const VALUE_FLAGS = [
  '--ws-auth',
  '--ws-token-file',
  '--ws-token-sha256',
  '--ws-shared-secret-file',
  '--ws-issuer',
  '--ws-audience',
  '--ws-max-clock-skew-seconds',
  '--tls-cert',
  '--tls-key',
  '--allow-origin',
] as const;
type Flag = (typeof VALUE_FLAGS)[number];
const REPEATABLE = new Set<Flag>(['--allow-origin']);

export const SECURITY_FLAGS_HELP = `Security (websocket listeners):
  --ws-auth capability-token|signed-bearer-token   require a bearer token on the upgrade
  --ws-token-file PATH          capability token file (trimmed; compared by SHA-256)
  --ws-token-sha256 HEX         SHA-256 hex digest of the capability token
  --ws-shared-secret-file PATH  HS256 secret (>= 32 bytes) for signed JWT bearer tokens
  --ws-issuer ISS               required JWT "iss"
  --ws-audience AUD             required JWT "aud"
  --ws-max-clock-skew-seconds N JWT exp/nbf tolerance (default 30)
  --tls-cert PATH --tls-key PATH  serve wss:// (PEM files)
  --allow-origin ORIGIN         allow a browser Origin (repeatable; default: none)
  A non-loopback listen address requires --ws-auth.`;

/** Pulls the security flags out of argv (`--flag value` or `--flag=value`). Throws SecurityConfigError. */
export function parseAuthArgs(argv: readonly string[]): ParsedSecurityArgs {
  const values = new Map<Flag, string[]>();
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.indexOf('=');
    const name = (eq > 0 ? arg.slice(0, eq) : arg) as Flag;
    if (!(VALUE_FLAGS as readonly string[]).includes(name)) {
      rest.push(arg);
      continue;
    }
    let value: string | undefined;
    if (eq > 0) value = arg.slice(eq + 1);
    else {
      value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) throw new SecurityConfigError(`${name} requires a value`);
      i++;
    }
    if (value === '') throw new SecurityConfigError(`${name} requires a non-empty value`);
    const list = values.get(name) ?? [];
    if (list.length > 0 && !REPEATABLE.has(name)) throw new SecurityConfigError(`${name} may only be given once`);
    list.push(value);
    values.set(name, list);
  }
  const one = (f: Flag) => values.get(f)?.[0];
  return { options: buildOptions(one, values.get('--allow-origin') ?? []), rest };
}

function buildOptions(one: (f: Flag) => string | undefined, origins: string[]): SecurityOptions {
  const mode = one('--ws-auth');
  const tokenFile = one('--ws-token-file');
  const tokenSha256 = one('--ws-token-sha256');
  const secretFile = one('--ws-shared-secret-file');
  const issuer = one('--ws-issuer');
  const audience = one('--ws-audience');
  const skewText = one('--ws-max-clock-skew-seconds');
  const tokenFlags = tokenFile !== undefined || tokenSha256 !== undefined;
  const jwtFlags = secretFile !== undefined || issuer !== undefined || audience !== undefined || skewText !== undefined;

  let auth: WsAuthConfig | undefined;
  if (mode === undefined) {
    if (tokenFlags || jwtFlags) {
      throw new SecurityConfigError(
        'websocket auth flags require `--ws-auth capability-token` or `--ws-auth signed-bearer-token`',
      );
    }
  } else if (mode === 'capability-token') {
    if (jwtFlags) {
      throw new SecurityConfigError(
        '`--ws-shared-secret-file`, `--ws-issuer`, `--ws-audience`, and `--ws-max-clock-skew-seconds` require `--ws-auth signed-bearer-token`',
      );
    }
    if (tokenFile !== undefined && tokenSha256 !== undefined) {
      throw new SecurityConfigError('`--ws-token-file` and `--ws-token-sha256` are mutually exclusive');
    }
    if (tokenFile !== undefined) auth = { mode, tokenFile };
    else if (tokenSha256 !== undefined) auth = { mode, tokenSha256 };
    else {
      throw new SecurityConfigError(
        '`--ws-token-file` or `--ws-token-sha256` is required when `--ws-auth capability-token` is set',
      );
    }
  } else if (mode === 'signed-bearer-token') {
    if (tokenFlags) {
      throw new SecurityConfigError(
        '`--ws-token-file` and `--ws-token-sha256` require `--ws-auth capability-token`, not `signed-bearer-token`',
      );
    }
    if (secretFile === undefined) {
      throw new SecurityConfigError('`--ws-shared-secret-file` is required when `--ws-auth signed-bearer-token` is set');
    }
    let maxClockSkewSeconds: number | undefined;
    if (skewText !== undefined) {
      if (!/^\d{1,9}$/.test(skewText)) {
        throw new SecurityConfigError('--ws-max-clock-skew-seconds must be a non-negative integer');
      }
      maxClockSkewSeconds = Number(skewText);
    }
    auth = { mode, sharedSecretFile: secretFile, issuer, audience, maxClockSkewSeconds };
  } else {
    throw new SecurityConfigError(
      `invalid --ws-auth mode ${JSON.stringify(mode)} (possible values: capability-token, signed-bearer-token)`,
    );
  }

  const certFile = one('--tls-cert');
  const keyFile = one('--tls-key');
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new SecurityConfigError('`--tls-cert` and `--tls-key` must be given together');
  }
  for (const o of origins) {
    if (!/^[a-z][a-z0-9+.-]*:\/\/[^/\s]+$/i.test(o)) {
      throw new SecurityConfigError(`--allow-origin ${JSON.stringify(o)} must look like scheme://host[:port] (exact match)`);
    }
  }
  return { auth, tls: certFile && keyFile ? { certFile, keyFile } : undefined, allowedOrigins: origins };
}

/**
 * Checks the flags against the listen address. Throws SecurityConfigError for: auth/TLS/origin
 * flags with stdio, `wss://` without a certificate, and a non-loopback websocket address
 * without `--ws-auth` (anyone on the network could otherwise run commands as this user).
 */
export function validateListenSecurity(listen: string, opts: SecurityOptions): void {
  const isWs = /^wss?:\/\//i.test(listen);
  if (!isWs) {
    if (opts.auth || opts.tls || opts.allowedOrigins.length > 0) {
      throw new SecurityConfigError('websocket auth, TLS and origin flags only apply to a ws:// or wss:// --listen address');
    }
    return;
  }
  if (/^wss:/i.test(listen) && !opts.tls) {
    throw new SecurityConfigError('--listen wss://... requires --tls-cert and --tls-key');
  }
  const host = listenHost(listen);
  if (host === undefined) throw new SecurityConfigError(`invalid --listen address ${JSON.stringify(listen)}`);
  if (!isLoopbackHost(host) && !opts.auth) {
    throw new SecurityConfigError(
      `refusing to listen on non-loopback address ${host} without authentication: ` +
        'add --ws-auth capability-token|signed-bearer-token, or listen on 127.0.0.1',
    );
  }
  // Reachable from the network, a capability token is all that stands between anyone there and
  // running commands as this user: one that can be guessed (5 bytes were accepted) is refused.
  // (A --ws-token-sha256 digest says nothing about the token's length.)
  const auth = opts.auth;
  if (!isLoopbackHost(host) && auth?.mode === 'capability-token' && auth.tokenFile !== undefined) {
    let token: string;
    try {
      token = readFileSync(path.resolve(auth.tokenFile), 'utf8').trim();
    } catch {
      return; // the authenticator reports an unreadable file with the reference's message
    }
    if (Buffer.byteLength(token) < MIN_NETWORK_TOKEN_BYTES) {
      throw new SecurityConfigError(
        `refusing to listen on non-loopback address ${host} with a capability token of ${Buffer.byteLength(token)} bytes: it must be at least ${MIN_NETWORK_TOKEN_BYTES} (e.g. \`openssl rand -hex 32\`)`,
      );
    }
  }
}

/** Bytes a capability token needs on a non-loopback listener (128 bits if random; `openssl rand -hex 32` gives 64). */
export const MIN_NETWORK_TOKEN_BYTES = 16;
