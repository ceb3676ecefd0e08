// The per-process certificate authority of a credential-masking proxy (docs/security.md
// "Credential masking"): a fresh RSA CA per proxied process whose private key exists only in
// this server's memory (never on disk, never in the child's reach), leaf certificates for the
// hosts the proxy intercepts, and the CA bundle file the child's TLS clients are pointed at —
// the system roots plus this CA, so every other host still verifies — at
// <state dir>/proxy/ca-bundle-<sha256 of its content>.pem (0644 in a 0700 directory; the
// reference writes the same name below its CODEX_HOME). Keys are made by Node's crypto (native,
// in the thread pool); node-forge only assembles the certificates, and their signatures are
// computed by Node's crypto too (forge's own RSA is pure JS and takes ~0.5 s per signature).
import { createHash, generateKeyPair, randomBytes, sign, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type * as Forge from 'node-forge';

// Required on first use (esbuild keeps a require() inside a function lazy within the bundle):
// evaluated at start, node-forge's 42 modules cost every server several MiB of memory for as
// long as it runs, and only a credential-masking proxy ever makes a certificate.
let forgeModule: typeof Forge | undefined;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const forge = (): typeof Forge => (forgeModule ??= require('node-forge') as typeof Forge);

/** The variables the child's TLS clients read a CA bundle from (the reference 0.171's list). */
export const CA_BUNDLE_ENV_KEYS = [
  'CODEX_CA_CERTIFICATE', 'SSL_CERT_FILE', 'CURL_CA_BUNDLE', 'REQUESTS_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS',
  'PIP_CERT', 'BUNDLE_SSL_CA_CERT', 'GIT_SSL_CAINFO', 'CARGO_HTTP_CAINFO', 'NPM_CONFIG_CAFILE', 'npm_config_cafile',
  'CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE', 'DENO_CERT',
];

/** Where this server keeps files a child may read (the CA bundles). */
export function proxyStateDir(): string {
  const base = process.env.XDG_STATE_HOME || path.join(os.homedir(), '.local', 'state');
  return path.join(base, 'codex-exec-server', 'proxy');
}

const SYSTEM_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem'];

/** The system's roots as PEM: the distribution's bundle file, else Node's built-in roots. */
function systemRoots(): string {
  for (const f of SYSTEM_BUNDLES) {
    try {
      const s = fs.readFileSync(f, 'utf8');
      if (s.includes('BEGIN CERTIFICATE')) return s.endsWith('\n') ? s : `${s}\n`;
    } catch {
      // next candidate
    }
  }
  return `${tls.rootCertificates.join('\n')}\n`;
}

type KeyPair = { privateKey: KeyObject; publicKey: KeyObject };
const newRsaKey = () =>
  new Promise<KeyPair>((resolve, reject) =>
    generateKeyPair('rsa', { modulusLength: 2048 }, (e, publicKey, privateKey) => (e ? reject(e) : resolve({ publicKey, privateKey }))),
  );

/**
 * Keys made ahead: a 2048-bit RSA key takes 1.6–3.5 s here on a loaded 2-core machine (measured,
 * load 23), and a masked start needs two. Once masking has been used, the pool is kept at
 * KEY_POOL_SIZE fresh keys made in the background; each key still serves one process only.
 */
const KEY_POOL_SIZE = 2;
const pool: KeyPair[] = [];
let filling = 0;
function refill(): void {
  while (pool.length + filling < KEY_POOL_SIZE) {
    filling++;
    newRsaKey().then(
      (k) => {
        filling--;
        pool.push(k);
      },
      () => {
        filling--;
      },
    );
  }
}
function rsaKey(): Promise<KeyPair> {
  const k = pool.shift();
  const out = k ? Promise.resolve(k) : newRsaKey();
  refill();
  return out;
}

const forgePublic = (k: KeyObject) => forge().pki.publicKeyFromPem(k.export({ type: 'spki', format: 'pem' }) as string);

/** Signs `cert` with `key` through Node's crypto (forge builds the TBS bytes). */
function signWith(cert: Forge.pki.Certificate, key: KeyObject): void {
  const parts: string[] = [];
  const md = { algorithm: 'sha256', update: (b: string) => parts.push(b) } as unknown as Forge.md.MessageDigest;
  const signer = { sign: () => sign('sha256', Buffer.from(parts.join(''), 'binary'), key).toString('binary') } as unknown as Forge.pki.rsa.PrivateKey;
  cert.sign(signer, md);
}

/**
 * A certificate's serial: 16 random bytes, the top bit cleared (a positive INTEGER) and the next
 * one set (no leading zero byte to strip). DER wants an INTEGER's shortest form, and node-forge
 * strips only one leading zero: a serial starting 00 00 (or 00 0x) stayed padded, and OpenSSL
 * refuses the whole certificate ("illegal padding") — one certificate in 512 before this.
 */
export function serialFrom(bytes: Buffer): string {
  const b = Buffer.from(bytes.subarray(0, 16));
  b[0] = (b[0] & 0x7f) | 0x40;
  return b.toString('hex');
}
const serial = () => serialFrom(randomBytes(16));

export class ProcessCa {
  private readonly leaves = new Map<string, tls.SecureContext>();
  private constructor(
    private readonly caKey: KeyObject,
    private readonly caCert: Forge.pki.Certificate,
    private readonly leafKey: { privateKey: KeyObject; publicKey: KeyObject },
    readonly certPem: string,
    readonly bundlePath: string,
  ) {}

  /** A new CA and its bundle file. */
  static async create(dir = proxyStateDir()): Promise<ProcessCa> {
    const [ca, leaf] = await Promise.all([rsaKey(), rsaKey()]);
    const cert = forge().pki.createCertificate();
    cert.publicKey = forgePublic(ca.publicKey);
    cert.serialNumber = serial();
    cert.validity.notBefore = new Date(Date.now() - 3600_000);
    cert.validity.notAfter = new Date(Date.now() + 30 * 86400_000);
    // A name of its own: a verifier picks an issuer by name, and two processes' CAs (or a test
    // CA made by this class) in one trust store must not shadow each other.
    const name = [{ name: 'commonName', value: `codex-exec-server network proxy MITM CA ${randomBytes(6).toString('hex')}` }];
    cert.setSubject(name);
    cert.setIssuer(name);
    cert.setExtensions([
      { name: 'basicConstraints', cA: true, critical: true, pathLenConstraint: 0 },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
      { name: 'subjectKeyIdentifier' },
    ]);
    signWith(cert, ca.privateKey);
    const pem = forge().pki.certificateToPem(cert);
    const bundle = systemRoots() + pem;
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, `ca-bundle-${createHash('sha256').update(bundle).digest('hex')}.pem`);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, bundle, { mode: 0o644 });
    fs.renameSync(tmp, file);
    return new ProcessCa(ca.privateKey, cert, leaf, pem, file);
  }

  /** The TLS context presenting a leaf for `host`, signed by this CA (made once per host). */
  contextFor(host: string): tls.SecureContext {
    const known = this.leaves.get(host);
    if (known) return known;
    const cert = forge().pki.createCertificate();
    cert.publicKey = forgePublic(this.leafKey.publicKey);
    cert.serialNumber = serial();
    cert.validity.notBefore = new Date(Date.now() - 3600_000);
    cert.validity.notAfter = new Date(Date.now() + 7 * 86400_000);
    cert.setSubject([{ name: 'commonName', value: host.slice(0, 64) }]);
    cert.setIssuer(this.caCert.subject.attributes);
    const alt = net.isIP(host) ? { type: 7, ip: host } : { type: 2, value: host };
    cert.setExtensions([
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [alt] },
    ]);
    signWith(cert, this.caKey);
    const ctx = tls.createSecureContext({
      key: this.leafKey.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
      cert: forge().pki.certificateToPem(cert) + this.certPem,
    });
    this.leaves.set(host, ctx);
    return ctx;
  }

  /** The bundle file goes with the process. */
  dispose(): void {
    fs.rmSync(this.bundlePath, { force: true });
    this.leaves.clear();
  }
}

/**
 * Test-only: EXEC_SERVER_TEST_UPSTREAM_CA names a PEM file of extra roots the proxy trusts for
 * the upstream TLS of an intercepted connection (so loopback test origins with a test CA can be
 * verified). It is this server's own environment, read once at the first intercepted
 * connection and kept; nothing a client sends (a child's env included) can set or change it.
 */
let testRoots: string[] | undefined | null = null;

/** The roots an intercepted connection's upstream is verified against (undefined: Node's defaults). */
export function upstreamRoots(): string[] | undefined {
  if (testRoots === null) {
    const f = process.env.EXEC_SERVER_TEST_UPSTREAM_CA;
    testRoots = f ? [...tls.rootCertificates, fs.readFileSync(f, 'utf8')] : undefined;
  }
  return testRoots;
}
