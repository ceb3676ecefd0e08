// Transparent TCP for one proxied sandbox (networkProxyTransparentTcp, 0.171's
// `proxy.transparentTcp`): a program that ignores the proxy variables and connects anywhere is
// carried into the same policy as a SOCKS5 CONNECT, instead of getting nowhere.
//
// The helper (native/transparent-tcp.c, built by `npm run build`) enters the sandbox's network
// namespace, gives it a TUN device holding the default route, and rewrites each TCP packet onto a
// listener in that namespace, so the namespace's own TCP stack completes the child's handshake
// and the executor accepts the connection there with the original destination as its peer
// address. It also opens 127.0.0.53:53 (the sandbox's /etc/resolv.conf) for ./transparent-dns.ts.
// Both sockets come to the executor over the helper's Node IPC channel; the helper moves packets
// only, and the namespace stays unshared: nothing leaves it but through the executor.
import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { decide, type DecisionHost } from './decide';
import { connectPinned, splice } from './stream-io';
import { FakeDns, isFakeAddress } from './transparent-dns';
import { bwrapPidOf, firstChildOf } from '../sandbox/backend';
import { nativeFilePath } from '../native-files';

/** How long the helper may take to set the namespace up and hand its sockets over. */
export const TRANSPARENT_SETUP_TIMEOUT_MS = 10_000;

const HELPER = `transparent-tcp-${process.platform}-${process.arch}`;

/** The helper binary: dist/native/ beside the bundle, or the repository's dist/native/ for compiled tests. */
export function transparentHelperPath(): string | undefined {
  return nativeFilePath(HELPER);
}

export type TransparentSupport = { ok: true; helper: string } | { ok: false; reason: string };
let support: TransparentSupport | undefined;
/** Whether transparent TCP can be offered here: Linux, the helper built, /dev/net/tun usable. */
export function transparentSupport(): TransparentSupport {
  if (support) return support;
  const helper = process.platform === 'linux' ? transparentHelperPath() : undefined;
  if (process.platform !== 'linux') support = { ok: false, reason: 'transparent TCP is built for Linux only' };
  else if (!helper) support = { ok: false, reason: `the transparent-TCP helper (${HELPER}) is not built` };
  else {
    try {
      accessSync(helper, constants.X_OK);
      accessSync('/dev/net/tun', constants.R_OK | constants.W_OK);
      support = { ok: true, helper };
    } catch (e) {
      support = { ok: false, reason: `transparent TCP needs ${helper} and /dev/net/tun: ${(e as Error).message}` };
    }
  }
  return support;
}

/** Tests: pretend the helper is (not) there; undefined probes again. */
export function overrideTransparentSupport(s: TransparentSupport | undefined): void {
  support = s;
}

let resolvConfDir: string | undefined;
/** A resolv.conf naming only the sandbox's resolver, bound over /etc/resolv.conf in the sandbox. */
export function transparentResolvConf(): string {
  if (!resolvConfDir) {
    resolvConfDir = mkdtempSync(path.join(os.tmpdir(), 'exec-server-resolv-'));
    const dir = resolvConfDir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(path.join(dir, 'resolv.conf'), 'nameserver 127.0.0.53\n', { mode: 0o444 });
  }
  return path.join(resolvConfDir, 'resolv.conf');
}

/**
 * The first process inside the sandbox: bubblewrap's child (`spawnedPid` is the process the
 * executor spawned, which execs bubblewrap, ../sandbox/backend.ts bwrapPidOf; its child is the
 * one in the new namespaces).
 */
export function sandboxChildPid(spawnedPid: number): number | undefined {
  const bwrap = bwrapPidOf(spawnedPid);
  return bwrap === undefined ? undefined : firstChildOf(bwrap);
}

/** The helper's listener addresses: 100.66.0.0/16 carries the child's own port. */
const MAPPED = /^100\.66\.(\d{1,3})\.(\d{1,3})$/;
/** Addresses of the sandbox's own namespace: never a destination the helper rewrote. */
const sandboxLocal = (ip: string) => /^127\./.test(ip) || MAPPED.test(ip) || ip === '192.0.2.1' || !net.isIPv4(ip);

export interface Transparent {
  close(): void;
}

/**
 * Starts the helper for the sandbox around `sandboxPid` and serves its connections with `host`'s
 * policy (as SOCKS5 CONNECTs: protocol `socks5_tcp`, a name for the resolver's addresses, the
 * literal otherwise). Resolves once both sockets are the executor's; rejects (the helper killed)
 * when it fails or takes longer than TRANSPARENT_SETUP_TIMEOUT_MS.
 */
export function startTransparent(
  helper: string,
  sandboxPid: number,
  serve: (sock: net.Socket, handler: (stream: net.Socket & { client: string }, host: DecisionHost) => Promise<void>) => void,
  log: (level: 'debug' | 'warn', message: string) => void,
): Promise<Transparent> {
  const dns = new FakeDns();
  let child: ChildProcess | undefined;
  let listener: net.Server | undefined;
  let resolver: dgram.Socket | undefined;
  let closed = false;
  const close = () => {
    closed = true;
    listener?.close();
    try {
      resolver?.close();
    } catch {
      // already closed
    }
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const handler = async (sock: net.Socket & { client: string }, host: DecisionHost): Promise<void> => {
    const local = MAPPED.exec(sock.localAddress ?? '');
    const remote = sock.remoteAddress ?? '';
    const port = sock.remotePort ?? 0;
    // Only what the helper rewrote: a connection the child made to the listener itself (on its
    // loopback, say) has one of the namespace's own addresses as its peer.
    if (!local || sandboxLocal(remote) || port === 0) return void sock.resetAndDestroy();
    const target = isFakeAddress(remote) ? dns.nameOf(remote) : remote;
    if (target === undefined) return void sock.resetAndDestroy();
    sock.client = `127.0.0.1:${Number(local[1]) * 256 + Number(local[2])}`;
    const o = await decide(host, { protocol: 'socks5_tcp', host: target, port, client: sock.client });
    if (!o.ok || sock.destroyed) return void sock.resetAndDestroy();
    let upstream: net.Socket;
    try {
      upstream = await connectPinned(o.addresses, port);
    } catch {
      return void sock.resetAndDestroy();
    }
    if (sock.destroyed) return void upstream.destroy();
    splice(sock, upstream);
  };
  return new Promise<Transparent>((resolve, reject) => {
    let stderr = '';
    const failed = (why: string) => {
      if (closed) return;
      close();
      reject(new Error(`transparent TCP could not be set up: ${why}${stderr.trim() ? ` (${stderr.trim().slice(0, 300)})` : ''}`));
    };
    const timer = setTimeout(() => failed('the helper did not answer in time'), TRANSPARENT_SETUP_TIMEOUT_MS);
    child = spawn(helper, [String(sandboxPid)], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], env: {} });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      if (stderr.length < 4096) stderr += d;
    });
    child.on('error', (e) => failed(e.message));
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (!listener || !resolver) failed(`the helper exited (${code ?? signal})`);
      else if (!closed) log('warn', `transparent TCP helper exited (${code ?? signal}); transparent connections are no longer carried`);
    });
    child.on('message', (m: unknown, handle: unknown) => {
      const kind = m && typeof m === 'object' ? (m as { transparent?: unknown }).transparent : undefined;
      if (kind === 'tcp' && handle instanceof net.Server && !listener) {
        listener = handle;
        (handle as net.Server & { allowHalfOpen: boolean }).allowHalfOpen = true;
        handle.on('error', () => log('warn', 'transparent TCP listener failed'));
        handle.on('connection', (sock: net.Socket) => serve(sock, handler));
      } else if (kind === 'dns' && handle instanceof dgram.Socket && !resolver) {
        resolver = handle;
        const udp = handle;
        udp.on('error', () => log('warn', 'transparent TCP resolver socket failed'));
        udp.on('message', (q, from) => {
          const a = dns.answer(q);
          if (a) udp.send(a, from.port, from.address);
        });
      } else {
        if (handle instanceof net.Server) handle.close();
        else if (handle instanceof dgram.Socket) handle.close();
        return failed('unexpected message from the helper');
      }
      if (listener && resolver) {
        clearTimeout(timer);
        log('debug', `transparent TCP ready in the sandbox of pid ${sandboxPid}`);
        resolve({ close });
      }
    });
  });
}
