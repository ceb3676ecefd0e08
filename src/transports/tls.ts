// TLS for the websocket listener (wss://): loads and checks the PEM certificate and key at
// startup so a bad pair is a clear configuration error, not a failed handshake later.
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { SecurityConfigError } from './ws-auth';
import type { TlsFiles } from './ws-auth-args';

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

function readPem(file: string, what: string): Buffer {
  const abs = path.resolve(file);
  try {
    return readFileSync(abs);
  } catch (e) {
    throw new SecurityConfigError(`failed to read TLS ${what} ${abs}: ${(e as Error).message}`);
  }
}

/** Reads the pair and lets OpenSSL check it (parse + key matches certificate). Never logs key bytes. */
export function loadTlsMaterial(files: TlsFiles): TlsMaterial {
  const cert = readPem(files.certFile, 'certificate');
  const key = readPem(files.keyFile, 'key');
  try {
    tls.createSecureContext({ cert, key });
  } catch (e) {
    // OpenSSL's message names the problem (e.g. "key values mismatch") without key contents.
    throw new SecurityConfigError(`invalid TLS certificate/key pair: ${(e as Error).message}`);
  }
  return { cert, key };
}
