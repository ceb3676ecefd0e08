// Shared helpers for the security tests: temp dirs, secrets on disk, signed JWTs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { SignJWT } from 'jose';
import { removeTempDir, tempDir as supportTempDir } from './tmp';

/** A test/support temp dir (removed at exit at the latest) with a helper to write files into it. */
export function tempDir(prefix = 'exec-sec-'): { dir: string; file(name: string, data: string | Buffer): string; dispose(): void } {
  const dir = supportTempDir(prefix);
  return {
    dir,
    file(name, data) {
      const p = path.join(dir, name);
      writeFileSync(p, data);
      return p;
    },
    dispose() {
      removeTempDir(dir);
    },
  };
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Signs `claims` with `secret` (UTF-8) under `alg` (HS256 by default). */
export function signJwt(secret: string, claims: Record<string, unknown>, alg = 'HS256'): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg }).sign(new TextEncoder().encode(secret));
}

/** An unsigned `alg: none` token (jose refuses to make one). */
export function unsignedJwt(claims: Record<string, unknown>): string {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
}

/** Generates a self-signed cert/key for 127.0.0.1 (files in tmp). */
export function makeSelfSigned(dir: string, name: string): { certFile: string; keyFile: string } {
  const certFile = `${dir}/${name}.crt`;
  const keyFile = `${dir}/${name}.key`;
  const r = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
  ], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `openssl failed: ${r.stderr}`);
  return { certFile, keyFile };
}

/** Every process whose argv or environment holds `secret` ("<pid>/cmdline" or "<pid>/environ"). */
export function processesHolding(secret: string): string[] {
  const hits: string[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    for (const f of ['cmdline', 'environ']) {
      try {
        if (readFileSync(`/proc/${pid}/${f}`).includes(secret)) hits.push(`${pid}/${f}`);
      } catch {
        /* gone, or not ours to read */
      }
    }
  }
  return hits;
}
