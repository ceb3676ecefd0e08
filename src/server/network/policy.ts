// The managed proxy's domain policy, as the reference applies it (codex 0.169/0.171, measured;
// REFERENCE-CAPABILITIES §1.4): pure functions over the launch config, no I/O. The order:
//   1. a `deny` pattern matches            → denied (never asked)
//   2. allowLocalBinding false and the host is a local literal (localhost, a loopback / private /
//      link-local address) not allow-listed by that exact literal → not_allowed_local
//   3. no `allow` pattern matches (or the host is a review domain) → not_allowed (the only reason
//      the client's decision callback may override)
//   4. (after the DNS lookup, ./resolve.ts) a NAME whose addresses include a local one → not_allowed_local
//   5. limited mode: only GET/HEAD/OPTIONS; CONNECT → mitm_required; SOCKS → method_not_allowed.
import net from 'node:net';
import type { ProxyConfig } from './launch-config';

export type Protocol = 'http' | 'https_connect' | 'socks5_tcp' | 'socks5_udp';
export type Reason = 'allowed' | 'denied' | 'not_allowed' | 'not_allowed_local' | 'method_not_allowed' | 'mitm_required';
export type Source = 'baseline_policy' | 'mode_guard' | 'decider';

export type HostVerdict =
  | { kind: 'allow'; /** an exact local literal was allow-listed: no DNS check */ literalAllowed: boolean }
  | { kind: 'deny'; reason: 'denied' | 'not_allowed_local' }
  /** not_allowed: the decision callback may be asked (reviewOnly: it was allowed, but is a review domain). */
  | { kind: 'notAllowed'; review: boolean };

/** Host names compare case-insensitively, without a trailing dot or IPv6 brackets. */
export function normalizeHost(host: string): string {
  return host.trim().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
}

/**
 * `*` matches every host; `*.example.com` its subdomains only; `**.example.com` the apex and its
 * subdomains; anything else must equal the host. A malformed pattern (`a*b.com`) never matches.
 */
export function matchPattern(pattern: string, host: string): boolean {
  const p = normalizeHost(pattern);
  const h = normalizeHost(host);
  if (p === '*') return true;
  if (p.startsWith('**.')) {
    const apex = p.slice(3);
    return !apex.includes('*') && apex !== '' && (h === apex || h.endsWith('.' + apex));
  }
  if (p.startsWith('*.')) {
    const apex = p.slice(2);
    return !apex.includes('*') && apex !== '' && h.endsWith('.' + apex);
  }
  return !p.includes('*') && p === h;
}

/**
 * Addresses of this machine or a private network: loopback, RFC 1918, link-local (the cloud
 * metadata service), CGNAT, benchmarking, the IPv4 documentation ranges (RFC 5737; the
 * reference refuses them as local too), unspecified, multicast and reserved; IPv6 loopback,
 * unspecified, IPv4-compatible/-mapped (judged as their IPv4 address), unique-local, link- and
 * site-local, multicast.
 */
const LOCAL = new net.BlockList();
for (const [a, p] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.51.100.0', 24], ['203.0.113.0', 24], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) {
  LOCAL.addSubnet(a, p, 'ipv4');
}
for (const [a, p] of [['::', 96], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8]] as const) LOCAL.addSubnet(a, p, 'ipv6');

export function isLocalAddress(address: string): boolean {
  const a = normalizeHost(address);
  const family = net.isIP(a);
  if (family === 0) return true; // not an address: never taken for a public one
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  if (mapped) return LOCAL.check(mapped[1], 'ipv4');
  return LOCAL.check(a, family === 4 ? 'ipv4' : 'ipv6');
}

/** A host that names this machine or a private network by itself, before any lookup. */
export function isLocalLiteral(host: string): boolean {
  const h = normalizeHost(host);
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  return net.isIP(h) !== 0 && isLocalAddress(h);
}

function rules(cfg: ProxyConfig, rule: 'allow' | 'deny'): string[] {
  return cfg.domains.filter(([, r]) => r === rule).map(([p]) => p);
}

/** Steps 1-3 for `host` (before any lookup and before the callback). */
export function judgeHost(cfg: ProxyConfig, host: string): HostVerdict {
  const h = normalizeHost(host);
  if (rules(cfg, 'deny').some((p) => matchPattern(p, h))) return { kind: 'deny', reason: 'denied' };
  const allows = rules(cfg, 'allow');
  const review = cfg.reviewDomains.some((p) => matchPattern(p, h));
  if (!cfg.allowLocalBinding && isLocalLiteral(h)) {
    // Only the exact literal opens a local literal: `*` or `*.localhost` do not.
    const exact = allows.some((p) => !p.includes('*') && normalizeHost(p) === h);
    if (!exact) return { kind: 'deny', reason: 'not_allowed_local' };
    return review ? { kind: 'notAllowed', review: true } : { kind: 'allow', literalAllowed: true };
  }
  if (!allows.some((p) => matchPattern(p, h))) return { kind: 'notAllowed', review: false };
  if (review) return { kind: 'notAllowed', review: true };
  return { kind: 'allow', literalAllowed: false };
}

/** Step 4: must the addresses a name resolved to be refused? */
export function resolvedIsLocal(cfg: ProxyConfig, addresses: readonly string[]): boolean {
  return !cfg.allowLocalBinding && addresses.some(isLocalAddress);
}

/** Step 5 (limited mode), for an allowed host; undefined when the request may pass. */
export function modeGuard(cfg: ProxyConfig, protocol: Protocol, method: string | undefined): 'method_not_allowed' | 'mitm_required' | undefined {
  if (cfg.mode !== 'limited') return undefined;
  if (protocol === 'https_connect') return 'mitm_required';
  if (protocol === 'socks5_tcp' || protocol === 'socks5_udp') return 'method_not_allowed';
  return ['GET', 'HEAD', 'OPTIONS'].includes((method ?? '').toUpperCase()) ? undefined : 'method_not_allowed';
}

/** The 403 the child sees (REFERENCE §1.5): the x-proxy-error header and the message. */
export function blockedResponse(reason: string, source: Source, decision: 'deny' | 'ask'): { header: string; message: string } {
  if (source === 'decider' && reason !== 'not_allowed') return { header: 'blocked-by-policy', message: 'Request blocked by network policy.' };
  switch (reason) {
    case 'denied':
      return { header: 'blocked-by-denylist', message: 'Domain denied by the sandbox policy.' };
    case 'not_allowed_local':
      return { header: 'blocked-by-allowlist', message: 'Sandbox policy blocks local/private network addresses.' };
    case 'method_not_allowed':
      return { header: 'blocked-by-method-policy', message: 'Method not allowed in limited mode.' };
    case 'mitm_required':
      return { header: 'blocked-by-mitm-required', message: 'MITM required for limited HTTPS.' };
    default:
      void decision;
      return { header: 'blocked-by-allowlist', message: 'Domain not in allowlist.' };
  }
}
