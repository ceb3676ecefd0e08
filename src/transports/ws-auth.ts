// WebSocket upgrade security: bearer-token authentication (the reference's two modes,
// protocol section 7) and the loopback rule, both applied before any JSON-RPC byte is
// exchanged. The browser-Origin rule lives in websocket-server.ts; the CLI flags are parsed
// in ws-auth-args.ts.
//
// Messages and status codes match `codex exec-server` 0.169 (observed): 401 with a short
// text reason. No message ever contains the presented token, the configured token/digest,
// or the shared secret.
import * as crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import * as path from 'node:path';
import type * as Jose from 'jose';

// Required on first use (esbuild keeps a require() inside a function lazy within the bundle):
// only a server with signed-bearer-token auth verifies a JWT, and evaluated at start jose cost
// every server its memory for as long as it runs.
let joseModule: typeof Jose | undefined;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const jose = (): typeof Jose => (joseModule ??= require('jose') as typeof Jose);

export type AuthResult = { ok: true } | { ok: false; status: number; message: string };
export type Authenticate = (req: IncomingMessage) => Promise<AuthResult> | AuthResult;

export type WsAuthMode = 'capability-token' | 'signed-bearer-token';

export type WsAuthConfig =
  | { mode: 'capability-token'; tokenFile: string; tokenSha256?: undefined }
  | { mode: 'capability-token'; tokenSha256: string; tokenFile?: undefined }
  | {
      mode: 'signed-bearer-token';
      sharedSecretFile: string;
      issuer?: string;
      audience?: string;
      /** Default 30 s (the reference accepts a token expired 30 s ago, not 45 s). */
      maxClockSkewSeconds?: number;
    };

/** A configuration the server must refuse to start with (bad flags, unreadable/short secret). */
export class SecurityConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecurityConfigError';
  }
}

/** Reference failure texts (observed from the reference binary). */
export const AuthMessages = {
  missingToken: 'missing websocket bearer token',
  invalidHeader: 'invalid authorization header',
  invalidToken: 'invalid websocket bearer token',
  invalidJwt: 'invalid websocket jwt',
  expiredJwt: 'expired websocket jwt',
  notYetValidJwt: 'websocket jwt is not valid yet',
  issuerMismatch: 'websocket jwt issuer mismatch',
  audienceMismatch: 'websocket jwt audience mismatch',
} as const;

export const DEFAULT_MAX_CLOCK_SKEW_SECONDS = 30;
export const MIN_SHARED_SECRET_BYTES = 32;

const deny = (message: string): AuthResult => ({ ok: false, status: 401, message });

/** SHA-256 of a string's UTF-8 bytes. */
export function sha256(data: string | Uint8Array): Buffer {
  return crypto.createHash('sha256').update(data).digest();
}

/**
 * Constant-time equality of two SHA-256 digests. Both sides are always 32 bytes, so the
 * comparison time depends neither on the presented token's length nor on its content.
 * `crypto.timingSafeEqual` is looked up at call time on purpose (tests observe it).
 */
export function digestsEqual(a: Buffer, b: Buffer): boolean {
  if (a.length !== 32 || b.length !== 32) return false;
  return crypto.timingSafeEqual(a, b);
}

/**
 * Extracts the bearer token from `Authorization`. The scheme is case-insensitive (the
 * reference accepts `bearer`); an empty token or another scheme is an invalid header.
 */
export function bearerToken(header: string | string[] | undefined): { token: string } | { error: string } {
  if (header === undefined) return { error: AuthMessages.missingToken };
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return { error: AuthMessages.missingToken };
  const m = /^\s*bearer[ \t]+(\S+)\s*$/i.exec(value);
  if (!m) return { error: AuthMessages.invalidHeader };
  return { token: m[1] };
}

function readSecretFile(file: string, what: string): Buffer {
  const abs = path.resolve(file);
  let raw: Buffer;
  try {
    raw = readFileSync(abs);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new SecurityConfigError(`failed to read ${what} ${abs}: ${err.code ?? ''} ${err.message}`.replace(/\s+/g, ' '));
  }
  // The reference trims surrounding whitespace (a trailing newline from `echo` is common).
  const trimmed = Buffer.from(raw.toString('utf8').trim(), 'utf8');
  if (trimmed.length === 0) throw new SecurityConfigError(`${what} ${abs} must not be empty`);
  return trimmed;
}

function parseHexDigest(hex: string): Buffer {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) {
    throw new SecurityConfigError('--ws-token-sha256 must be a 64-character hex SHA-256 digest');
  }
  return Buffer.from(hex, 'hex');
}

/** The token half of an authenticator: header value in, verdict out (no HTTP needed). */
export type TokenVerifier = (authorization: string | string[] | undefined) => Promise<AuthResult>;

function capabilityVerifier(expectedDigest: Buffer): TokenVerifier {
  return async (authorization) => {
    const parsed = bearerToken(authorization);
    if ('error' in parsed) return deny(parsed.error);
    return digestsEqual(sha256(parsed.token), expectedDigest) ? { ok: true } : deny(AuthMessages.invalidToken);
  };
}

function jwtVerifier(secret: Uint8Array, issuer: string | undefined, audience: string | undefined, skew: number): TokenVerifier {
  return async (authorization) => {
    const parsed = bearerToken(authorization);
    if ('error' in parsed) return deny(parsed.error);
    try {
      await jose().jwtVerify(parsed.token, secret, {
        algorithms: ['HS256'],
        issuer,
        audience,
        clockTolerance: skew,
        requiredClaims: ['exp'],
      });
      return { ok: true };
    } catch (e) {
      return deny(jwtFailureMessage(e));
    }
  };
}

/** Maps jose's verification errors onto the reference's messages (never the token itself). */
function jwtFailureMessage(e: unknown): string {
  if (e instanceof jose().errors.JWTExpired && e.claim === 'exp') return AuthMessages.expiredJwt;
  if (e instanceof jose().errors.JWTClaimValidationFailed) {
    if (e.claim === 'nbf' && e.reason === 'check_failed') return AuthMessages.notYetValidJwt;
    if (e.claim === 'iss') return AuthMessages.issuerMismatch;
    if (e.claim === 'aud') return AuthMessages.audienceMismatch;
  }
  return AuthMessages.invalidJwt;
}

/**
 * Builds the upgrade-time token check for one mode. Reads and validates secrets now, so a
 * bad configuration fails at startup (SecurityConfigError), never on the first client.
 */
export function createTokenVerifier(config: WsAuthConfig): TokenVerifier {
  if (config.mode === 'capability-token') {
    if (config.tokenFile !== undefined && config.tokenSha256 !== undefined) {
      throw new SecurityConfigError('`--ws-token-file` and `--ws-token-sha256` are mutually exclusive');
    }
    if (config.tokenFile !== undefined) {
      return capabilityVerifier(sha256(readSecretFile(config.tokenFile, 'websocket auth secret')));
    }
    if (config.tokenSha256 !== undefined) return capabilityVerifier(parseHexDigest(config.tokenSha256));
    throw new SecurityConfigError('`--ws-token-file` or `--ws-token-sha256` is required when `--ws-auth capability-token` is set');
  }
  if (config.mode === 'signed-bearer-token') {
    if (!config.sharedSecretFile) {
      throw new SecurityConfigError('`--ws-shared-secret-file` is required when `--ws-auth signed-bearer-token` is set');
    }
    const skew = config.maxClockSkewSeconds ?? DEFAULT_MAX_CLOCK_SKEW_SECONDS;
    if (!Number.isSafeInteger(skew) || skew < 0) {
      throw new SecurityConfigError('--ws-max-clock-skew-seconds must be a non-negative integer');
    }
    const secret = readSecretFile(config.sharedSecretFile, 'signed websocket bearer secret');
    if (secret.length < MIN_SHARED_SECRET_BYTES) {
      throw new SecurityConfigError(
        `signed websocket bearer secret ${path.resolve(config.sharedSecretFile)} must be at least ${MIN_SHARED_SECRET_BYTES} bytes`,
      );
    }
    return jwtVerifier(new Uint8Array(secret), config.issuer, config.audience, skew);
  }
  throw new SecurityConfigError(`unknown --ws-auth mode ${JSON.stringify((config as { mode: unknown }).mode)}`);
}

/** `authenticate` for the websocket server: reads `Authorization` from the upgrade request. */
export function createAuthenticator(config: WsAuthConfig): Authenticate {
  const verify = createTokenVerifier(config);
  return (req) => verify(req.headers.authorization);
}

/**
 * Is this listen host reachable only from this machine? `localhost`, 127.0.0.0/8, ::1 and
 * their IPv4-mapped forms are; wildcards (0.0.0.0, ::) and every other name/address are not.
 */
export function isLoopbackHost(host: string): boolean {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (h.startsWith('::ffff:')) h = h.slice(7);
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return h.split('.').every((p) => Number(p) <= 255);
  if (h === '::1' || /^(0{1,4}:){7}0{0,3}1$/.test(h) || h === '0:0:0:0:0:0:0:1') return true;
  return false;
}

/** The host part of a `ws://HOST:PORT` / `wss://HOST:PORT` listen URL (undefined for stdio or junk). */
export function listenHost(listen: string): string | undefined {
  if (!/^wss?:\/\//i.test(listen)) return undefined;
  try {
    return new URL(listen).hostname;
  } catch {
    return undefined;
  }
}
