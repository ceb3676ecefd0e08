// Name resolution for the managed proxy: each allowed name is looked up ONCE, judged on those
// addresses (./policy.ts: a name leading to this machine or a private network is refused) and
// connected to exactly those addresses (./connect.ts): a DNS answer that changes between the
// check and the connect (rebinding) cannot win. The system resolver (getaddrinfo, /etc/hosts
// first) unless a test installs its own with setNetworkResolver (names stay on this machine).
import dns from 'node:dns';
import net from 'node:net';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

/** A name that does not resolve within this is judged as not resolving. */
const RESOLVE_TIMEOUT_MS = 10_000;

export const systemResolver: Resolver = (host) => {
  const literal = net.isIP(host);
  if (literal !== 0) return Promise.resolve([{ address: host, family: literal as 4 | 6 }]);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer for ${host} within ${RESOLVE_TIMEOUT_MS} ms`)), RESOLVE_TIMEOUT_MS);
    dns.lookup(host, { all: true }, (err, found) => {
      clearTimeout(timer);
      if (err) return reject(err);
      resolve(found.filter((a) => a.family === 4 || a.family === 6).map((a) => ({ address: a.address, family: a.family as 4 | 6 })));
    });
  });
};

let current: Resolver = systemResolver;

/** The resolver the proxies use now. */
export function networkResolver(): Resolver {
  return current;
}

/** Test seam: answers names from the test's own table (undefined: the system resolver again). */
export function setNetworkResolver(r: Resolver | undefined): void {
  current = r ?? systemResolver;
}
