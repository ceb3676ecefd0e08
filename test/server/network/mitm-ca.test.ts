// The credential-masking proxy's certificates (src/server/network/mitm-ca.ts) whatever the random
// bytes of their serial numbers: each CA and leaf must parse and verify with OpenSSL (Node's
// crypto and tls). The serial's bytes are forced here through node:crypto's randomBytes, which the
// module calls at run time. Before the fix, a serial whose random bytes began 00 00 or 00 0x (one
// certificate in 512) stayed zero-padded in DER and OpenSSL refused it ("illegal padding"): a
// credential-masking process whose CA drew it could reach no HTTPS host, one whose leaf drew it
// could not reach that host, and a CI run whose test CA drew it lost its HTTPS origin.
import assert from 'node:assert/strict';
import crypto, { X509Certificate } from 'node:crypto';
import type net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import { ProcessCa, serialFrom } from '../../../src/server/network/mitm-ca';
import { removeTempDir, tempDir } from '../../support/tmp';

let dir: string;
before(() => {
  dir = tempDir('es-mitm-ca-');
});
after(() => removeTempDir(dir));

/** Runs `fn` with every randomBytes call of a serial's size (15 or 16 bytes) starting with `head`. */
async function withSerialBytes<T>(head: number[], fn: () => Promise<T>): Promise<T> {
  const original = crypto.randomBytes;
  const forced = ((size: number, ...rest: unknown[]) => {
    const b = (original as (n: number, ...r: unknown[]) => Buffer)(size, ...rest);
    if (size === 15 || size === 16) head.forEach((v, i) => (b[i] = v));
    return b;
  }) as typeof crypto.randomBytes;
  crypto.randomBytes = forced;
  try {
    return await fn();
  } finally {
    crypto.randomBytes = original;
  }
}

/** The leaf `ca` presents for `host`, taken from a real TLS handshake that verifies it against the CA. */
async function leafOf(ca: ProcessCa, host: string): Promise<X509Certificate> {
  const server = tls.createServer({ SNICallback: (name, cb) => cb(null, ca.contextFor(name)) }, (s) => s.end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as net.AddressInfo;
    return await new Promise<X509Certificate>((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port, servername: host, ca: ca.certPem }, () => {
        const cert = s.getPeerX509Certificate();
        s.destroy();
        if (cert) resolve(cert);
        else reject(new Error('no peer certificate'));
      });
      s.on('error', reject);
    });
  } finally {
    server.close();
  }
}

const HEADS: Record<string, number[]> = {
  'two zero bytes': [0x00, 0x00],
  'a zero byte, then a small one': [0x00, 0x05],
  'a zero byte, then one with the top bit set': [0x00, 0x80],
  'all zero': new Array(16).fill(0),
  'top bit set': [0x80, 0x00],
  'all ones': new Array(16).fill(0xff),
};

for (const [name, head] of Object.entries(HEADS)) {
  test(`a CA and its leaf whose serial's random bytes are ${name} parse and verify`, async () => {
    const ca = await withSerialBytes(head, () => ProcessCa.create(path.join(dir, 'state')));
    try {
      const caCert = new X509Certificate(ca.certPem);
      assert.ok(caCert.verify(caCert.publicKey), 'the CA is self-signed');
      assert.match(caCert.serialNumber, /^[0-9A-F]+$/);
      // Positive and at most 20 octets (RFC 5280 4.1.2.2), the same size every time.
      assert.equal(caCert.serialNumber.length, 32, caCert.serialNumber);
      assert.ok(parseInt(caCert.serialNumber[0], 16) < 8, `positive: ${caCert.serialNumber}`);
      const leaf = await withSerialBytes(head, () => leafOf(ca, 'localhost'));
      assert.ok(leaf.verify(caCert.publicKey), 'the leaf is signed by the CA');
      assert.equal(leaf.checkHost('localhost'), 'localhost');
      assert.equal(leaf.serialNumber.length, 32, leaf.serialNumber);
    } finally {
      ca.dispose();
    }
  });
}

test('serialFrom: positive, no leading zero byte, 16 bytes, and still random in the rest', () => {
  for (const head of Object.values(HEADS)) {
    const bytes = crypto.randomBytes(16);
    head.forEach((v, i) => (bytes[i] = v));
    const s = serialFrom(bytes);
    assert.equal(s.length, 32);
    const first = parseInt(s.slice(0, 2), 16);
    assert.ok(first >= 0x40 && first < 0x80, s);
    assert.equal(s.slice(2), bytes.subarray(1).toString('hex'));
  }
});
