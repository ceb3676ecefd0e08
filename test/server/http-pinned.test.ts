// http/request with pinned addresses (src/server/http-pinned.ts), against real servers on
// 127.0.0.1: a request whose host name the agent gate judged connects to exactly the judged
// addresses — the process's resolver is never asked, the Host header and the TLS server name
// stay the name, a pin for another host or with no address connects nowhere — and it answers
// as the fetch path does (headers sent and listed, gzip decoded, a redirect returned as is,
// the collected-body bound, a streamed body). A pin cannot come from the wire: the params
// decoder takes it only from an in-process symbol. The resolver (node:dns lookup) is replaced
// by one that records every name asked and resolves none: no real DNS is asked.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import dns from 'node:dns';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { ErrorCodes } from '../../src/protocol/errors';
import type { HttpBodyDeltaNotification, HttpHeader, HttpRequestResult } from '../../src/protocol/types';
import { httpRequest, MAX_BUFFERED_HTTP_BODY_BYTES, PINNED_HTTP_ADDRESSES, type HttpRequestInput, type PinnedAddresses } from '../../src/server/http';
import { METHODS } from '../../src/server/router';
import { tempDir } from '../support/tmp';
import { waitFor } from '../support/wait';

const realLookup = dns.lookup;
/** Names the process's resolver was asked for while a test ran. */
const asked: string[] = [];

function recordingLookup(host: string, options: unknown, callback?: (...a: unknown[]) => void): void {
  // Binding the test servers to 127.0.0.1 goes through here too: address literals answer themselves.
  if (/^[\d.]+$/.test(host)) return (realLookup as (...a: unknown[]) => void)(host, options, callback);
  const cb = (typeof options === 'function' ? options : callback) as (...a: unknown[]) => void;
  asked.push(host);
  process.nextTick(() => cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })));
}

interface Seen {
  url: string;
  method: string;
  rawHeaders: string[];
  body: string;
}

const seen: Seen[] = [];
let endlessClosed = 0;
let server: http.Server;
let port = 0;

function input(url: string, extra: Partial<HttpRequestInput> = {}): HttpRequestInput {
  return { method: 'GET', url, headers: [], redirectPolicy: 'stop', requestId: 'r', streamResponse: false, ...extra };
}

const pin = (host: string, addresses: PinnedAddresses['addresses'] = [{ address: '127.0.0.1', family: 4 }], error?: string): PinnedAddresses => ({ host, addresses, error });

function run(i: HttpRequestInput): Promise<HttpRequestResult> {
  return httpRequest(i, () => undefined, new AbortController().signal);
}

const headerMap = (raw: string[]) => {
  const m: Record<string, string> = {};
  for (let k = 0; k + 1 < raw.length; k += 2) m[raw[k].toLowerCase()] = raw[k + 1];
  return m;
};
/** Response headers that differ between two connections by nature (the pinned one is never kept alive). */
const variable = new Set(['date', 'connection', 'keep-alive']);
const stable = (hs: HttpHeader[]) => hs.filter((h) => !variable.has(h.name));

describe('http/request to pinned addresses', () => {
  before(async () => {
    (dns as { lookup: unknown }).lookup = recordingLookup;
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ url: req.url ?? '', method: req.method ?? '', rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString() });
        if (req.url === '/redirect') {
          res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' });
          res.end();
        } else if (req.url === '/gzip') {
          res.writeHead(200, { 'content-encoding': 'gzip', 'set-cookie': ['a=1', 'b=2'], 'X-Two': ['x', 'y'] });
          res.end(zlib.gzipSync('decoded body'));
        } else if (req.url === '/endless') {
          res.writeHead(200);
          const more = () => {
            if (!res.destroyed && res.write(Buffer.alloc(16 * 1024, 'e'))) setImmediate(more);
            else if (!res.destroyed) res.once('drain', more);
          };
          res.on('close', () => endlessClosed++);
          more();
        } else if (req.url === '/huge') {
          res.writeHead(200, { 'content-length': String(MAX_BUFFERED_HTTP_BODY_BYTES + 1) });
          res.write('x');
        } else res.end(`hello from ${req.headers.host}`);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });

  after(() => {
    (dns as { lookup: unknown }).lookup = realLookup;
    server.closeAllConnections();
    server.close();
  });

  it('connects to the pinned address without asking the resolver; the Host header is the name', async () => {
    asked.length = 0;
    seen.length = 0;
    const r = await run(input(`http://api.pinned.test:${port}/x?q=1`, { pinned: pin('api.pinned.test') }));
    assert.equal(r.status, 200);
    assert.equal(Buffer.from(r.bodyBase64, 'base64').toString(), `hello from api.pinned.test:${port}`);
    assert.deepEqual(asked, [], 'the resolver was not asked');
    assert.equal(seen[0].url, '/x?q=1');
  });

  it('without a pin the same name goes to the resolver (and fails here): requests nobody judged behave as before', async () => {
    asked.length = 0;
    await assert.rejects(run(input(`http://api.pinned.test:${port}/`)), /ENOTFOUND api\.pinned\.test/);
    assert.deepEqual(asked, ['api.pinned.test']);
  });

  it('a pin for another host, or a name that did not resolve when judged, connects nowhere and asks no resolver', async () => {
    asked.length = 0;
    seen.length = 0;
    await assert.rejects(run(input(`http://other.pinned.test:${port}/`, { pinned: pin('api.pinned.test') })), /ENOTFOUND other\.pinned\.test \(only api\.pinned\.test was approved\)/);
    await assert.rejects(run(input(`http://gone.pinned.test:${port}/`, { pinned: pin('gone.pinned.test', [], 'ENOTFOUND') })), (e: Error & { code?: number }) => {
      assert.equal(e.code, ErrorCodes.InternalError);
      assert.match(e.message, /http\/request failed: .*gone\.pinned\.test \(ENOTFOUND\)/);
      return true;
    });
    assert.deepEqual(asked, []);
    assert.equal(seen.length, 0, 'the server saw nothing');
  });

  it('sends what the fetch path sends and lists the answer the same way (headers, POST body, gzip decoded, set-cookie apart)', async () => {
    const headers = [
      { name: 'X-Custom', value: 'one' },
      { name: 'x-custom', value: 'two' },
      { name: 'Host', value: 'spoofed.example' },
      { name: 'Accept-Encoding', value: 'gzip' },
    ];
    const results: HttpRequestResult[] = [];
    const sent: Seen[] = [];
    for (const [url, pinned] of [
      [`http://127.0.0.1:${port}/gzip`, undefined],
      [`http://api.pinned.test:${port}/gzip`, pin('api.pinned.test')],
    ] as const) {
      seen.length = 0;
      results.push(await run(input(url, { method: 'POST', headers, body: Buffer.from('payload'), pinned })));
      sent.push(seen[0]);
    }
    const [viaFetch, viaPin] = results;
    assert.equal(Buffer.from(viaPin.bodyBase64, 'base64').toString(), 'decoded body');
    assert.equal(viaPin.bodyBase64, viaFetch.bodyBase64);
    assert.equal(viaPin.status, viaFetch.status);
    assert.deepEqual(stable(viaPin.headers), stable(viaFetch.headers));
    assert.deepEqual(viaPin.headers.filter((h) => h.name === 'set-cookie').map((h) => h.value), ['a=1', 'b=2']);
    const [a, b] = sent.map((s) => headerMap(s.rawHeaders));
    assert.equal(b.host, `api.pinned.test:${port}`, 'the agent cannot set the Host header');
    for (const m of [a, b]) {
      delete m.host;
      delete m.connection;
    }
    assert.deepEqual(b, a, 'the server sees the same headers');
    assert.equal(sent[1].body, 'payload');
    assert.equal(sent[1].method, 'POST');
  });

  it('a redirect comes back as it is; a declared body past the collected bound is refused', async () => {
    const r = await run(input(`http://api.pinned.test:${port}/redirect`, { pinned: pin('api.pinned.test') }));
    assert.equal(r.status, 302);
    assert.ok(r.headers.some((h) => h.name === 'location' && h.value === 'http://127.0.0.1:1/elsewhere'));
    await assert.rejects(run(input(`http://api.pinned.test:${port}/huge`, { pinned: pin('api.pinned.test') })), (e: Error & { code?: number }) => {
      assert.equal(e.code, ErrorCodes.InvalidRequest);
      assert.match(e.message, /streamResponse/);
      return true;
    });
  });

  it('a streamed body arrives as bodyDelta notifications', async () => {
    const deltas: HttpBodyDeltaNotification[] = [];
    let finished!: () => void;
    const done = new Promise<void>((r) => (finished = r));
    const r = await httpRequest(input(`http://api.pinned.test:${port}/gzip`, { pinned: pin('api.pinned.test'), streamResponse: true }), (n) => void deltas.push(n), new AbortController().signal, finished);
    assert.equal(r.status, 200);
    await done;
    assert.equal(deltas.at(-1)?.done, true);
    assert.equal(deltas.at(-1)?.error, null);
    assert.equal(Buffer.concat(deltas.map((d) => Buffer.from(d.deltaBase64, 'base64'))).toString(), 'decoded body');
  });

  it('cancelling a streamed body stops it: the last delta carries the error and the server sees its connection closed', async () => {
    const deltas: HttpBodyDeltaNotification[] = [];
    let finished!: () => void;
    const done = new Promise<void>((r) => (finished = r));
    const cancel = new AbortController();
    const closedBefore = endlessClosed;
    const r = await httpRequest(input(`http://api.pinned.test:${port}/endless`, { pinned: pin('api.pinned.test'), streamResponse: true }), (n) => {
      deltas.push(n);
      if (deltas.length === 3) cancel.abort();
    }, cancel.signal, finished);
    assert.equal(r.status, 200);
    await done;
    const last = deltas.at(-1)!;
    assert.equal(last.done, true);
    assert.match(String(last.error), /abort/i);
    await waitFor(() => endlessClosed > closedBefore, { what: 'the server side of the connection closed' });
  });

  it('https: the TLS server name is the pinned name, and the certificate is still checked against it', async () => {
    const dir = tempDir('http-pinned-tls-');
    const keyFile = path.join(dir, 'key.pem');
    const certFile = path.join(dir, 'cert.pem');
    const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=tls.pinned.test', '-addext', 'subjectAltName=DNS:tls.pinned.test'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(made.status, 0, `openssl failed: ${made.stderr}`);
    const names: string[] = [];
    const tlsServer = tls.createServer({ key: readFileSync(keyFile), cert: readFileSync(certFile), SNICallback: (name, cb) => (names.push(name), cb(null, undefined)) });
    await new Promise<void>((r) => tlsServer.listen(0, '127.0.0.1', r));
    const tlsPort = (tlsServer.address() as AddressInfo).port;
    asked.length = 0;
    try {
      // The certificate is self-signed: an unchecked connection would go on, a checked one fails.
      await assert.rejects(run(input(`https://tls.pinned.test:${tlsPort}/`, { pinned: pin('tls.pinned.test') })), /self[- ]signed certificate/);
      assert.deepEqual(names, ['tls.pinned.test']);
      assert.deepEqual(asked, []);
    } finally {
      tlsServer.close();
    }
  });

  it('the wire cannot pin: params parsed from JSON carry no pin, whatever fields they hold; an in-process symbol does', () => {
    const wire = JSON.parse(JSON.stringify({ method: 'GET', url: 'http://api.pinned.test/', headers: [], requestId: 'w', pinned: pin('api.pinned.test'), [PINNED_HTTP_ADDRESSES]: pin('api.pinned.test') }));
    assert.equal((METHODS['http/request'].decode(wire) as HttpRequestInput).pinned, undefined);
    const inProcess = { ...wire, [PINNED_HTTP_ADDRESSES]: pin('api.pinned.test') };
    assert.deepEqual((METHODS['http/request'].decode(inProcess) as HttpRequestInput).pinned, pin('api.pinned.test'));
  });
});
