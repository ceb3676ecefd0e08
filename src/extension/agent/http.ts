// The agent gate's rule for http/request. What the user allows is an origin as the question
// shows it — and, for a host NAME, where that name leads: the gate resolves it (as the engine
// would), shows the addresses, names any on this machine or a private network, and pins them
// (PINNED_HTTP_ADDRESSES): the engine connects to exactly the judged addresses, so a name
// re-pointed at 127.0.0.1 after the question (DNS rebinding) reaches nothing new. A session
// grant covers later requests to the origin while the name leads to public addresses, or to
// local ones the granting question showed; any other local address asks again. Redirects are
// never followed for an asked or granted request (another origin is a request of its own).
import dns from 'node:dns';
import net from 'node:net';
import { PINNED_HTTP_ADDRESSES, type PinnedAddresses } from '../../server/http';
import type { Need } from './grants';
import type { AgentContext, Verdict } from './verdict';
import { shown } from '../approval';

/** A name that does not resolve within this is judged as not resolving (the request then fails). */
const RESOLVE_TIMEOUT_MS = 10_000;
/** Addresses the one-line question lists; all of them are in the details. */
const SHOWN_ADDRESSES = 4;

/**
 * Addresses of this machine or a private network (not reachable from the internet): loopback,
 * RFC 1918, link-local (the cloud metadata service), CGNAT, benchmarking, unspecified,
 * multicast and reserved; IPv6 loopback/unspecified/IPv4-compatible, unique-local, link- and
 * site-local, multicast. IPv4-mapped IPv6 (::ffff:127.0.0.1) is judged as its IPv4 address.
 */
const LOCAL = new net.BlockList();
for (const [a, p] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) {
  LOCAL.addSubnet(a, p, 'ipv4');
}
for (const [a, p] of [['::', 96], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8]] as const) LOCAL.addSubnet(a, p, 'ipv6');

export function isLocalAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return true; // not an address at all: never taken for a public one
  return LOCAL.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

interface Resolved {
  /** The URL's host without IPv6 brackets. */
  host: string;
  /** The host is a name (not an address literal): its addresses are pinned. */
  isName: boolean;
  addresses: { address: string; family: 4 | 6 }[];
  /** Why a name has no addresses. */
  error?: string;
}

/** Resolves the host as the engine's connection would (node:dns lookup, all addresses). */
async function resolve(url: URL): Promise<Resolved> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = net.isIP(host);
  if (literal !== 0) return { host, isName: false, addresses: [{ address: host, family: literal as 4 | 6 }] };
  let timer: NodeJS.Timeout | undefined;
  try {
    const found = await Promise.race([
      new Promise<dns.LookupAddress[]>((ok, fail) => dns.lookup(host, { all: true, hints: dns.ADDRCONFIG }, (e, a) => (e ? fail(e) : ok(a)))),
      new Promise<never>((_ok, fail) => (timer = setTimeout(() => fail(new Error(`no answer within ${RESOLVE_TIMEOUT_MS / 1000} s`)), RESOLVE_TIMEOUT_MS))),
    ]);
    const addresses = found.filter((a) => a.family === 4 || a.family === 6).map((a) => ({ address: a.address, family: a.family as 4 | 6 }));
    return addresses.length > 0 ? { host, isName: true, addresses } : { host, isName: true, addresses, error: 'no address' };
  } catch (e) {
    return { host, isName: true, addresses: [], error: (e as NodeJS.ErrnoException).code ?? (e as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

function list(addresses: readonly string[], max = Infinity): string {
  const head = addresses.slice(0, max).join(', ');
  return addresses.length > max ? `${head} and ${addresses.length - max} more` : head;
}

/** "(host resolves to …)" for the question; the addresses marked local when any is. */
function whereItLeads(r: Resolved, local: readonly string[], max: number): string {
  if (r.isName && r.addresses.length === 0) return `${shown(r.host)} does not resolve now (${shown(r.error ?? 'no address')}): the request will fail`;
  const all = r.addresses.map((a) => a.address);
  const where = local.length > 0 ? `: ${local.length === all.length ? '' : `${list(local)} is `}this machine or a private network` : '';
  return r.isName ? `${shown(r.host)} resolves to ${list(all, max)}${where}` : local.length > 0 ? `${all[0]} is this machine or a private network` : '';
}

export async function decideHttp(ctx: AgentContext, params: unknown, d: Record<string, unknown>): Promise<Verdict> {
  const url = String(d.url);
  let origin = url;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
    origin = parsed.origin;
  } catch {
    // the engine rejects it; the question still shows it
  }
  if (ctx.policy === 'neverAsk') return { kind: 'allow', why: 'policy neverAsk', params };
  // Judged where the engine would connect (a scheme the engine refuses connects nowhere).
  const resolved = parsed && (parsed.protocol === 'http:' || parsed.protocol === 'https:') ? await resolve(parsed) : undefined;
  const local = [...new Set((resolved?.addresses ?? []).map((a) => a.address).filter(isLocalAddress))].sort();
  // The question shows the URL as the engine will use it: the host in ASCII (a look-alike
  // Unicode host shows as xn--…), `\` read as `/`, and the host named when a user name or
  // password before an @ could pass for it (http://example.com@evil.example).
  const target = parsed?.href ?? url;
  const credentials = parsed !== undefined && (parsed.username !== '' || parsed.password !== '');
  const hostNote = credentials ? ` (host ${shown(parsed!.host)}; the part before @ is a user name/password sent to it)` : '';
  const body = d.body as Buffer | undefined;
  const given = d.headers as { name: string; value: string; valueEnvVar?: string }[];
  // valueEnvVar sends a variable of THIS process's environment (the extension host's: tokens,
  // keys) to the URL: never covered by a session grant, always asked, the variable named.
  const envVars = given.filter((h) => h.valueEnvVar !== undefined).map((h) => h.valueEnvVar!);
  const headers = given.map((h) =>
    h.valueEnvVar === undefined
      ? `${shown(h.name)}: ${shown(h.value)}`
      : `${shown(h.name)}: ${shown(h.value)}<the value of the environment variable ${shown(h.valueEnvVar)} of VS Code's extension host>`,
  );
  const need: Need = { type: 'http', origin, grantable: true, local };
  // What the user allows is this origin: the engine must not follow a redirect to another one
  // (an open redirect on an allowed site would reach localhost or the metadata service). The
  // agent gets the 3xx with its Location; following it is a request of its own, judged anew.
  // A name connects to the addresses judged here and to no others.
  const pin: PinnedAddresses | undefined = resolved?.isName ? { host: resolved.host, addresses: resolved.addresses, error: resolved.error } : undefined;
  const stopped = { ...(params as Record<string, unknown>), redirectPolicy: 'stop', ...(pin ? { [PINNED_HTTP_ADDRESSES]: pin } : {}) };
  if (envVars.length === 0 && ctx.state.covered([need])) return { kind: 'allow', why: 'allowed for this session', params: stopped };
  const leads = resolved ? whereItLeads(resolved, local, SHOWN_ADDRESSES) : '';
  const secrets = envVars.length > 0 ? ` sending the value of the environment variable${envVars.length > 1 ? 's' : ''} ${envVars.map(shown).join(', ')} of VS Code's extension host` : '';
  const summary = `make an HTTP ${shown(String(d.method))} request to ${shown(target)}${hostNote}${leads ? ` (${leads})` : ''}${secrets}${body && body.length > 0 ? ` sending ${body.length} bytes` : ''}`;
  const details = [
    `Method: http/request`,
    `HTTP method: ${shown(String(d.method))}`,
    `URL: ${shown(target)}${hostNote}`,
    ...(target !== url ? [`URL as sent by the agent: ${shown(url)}`] : []),
    ...(resolved?.isName ? [`Address: ${whereItLeads(resolved, local, Infinity)} (the request connects to these addresses only)`] : []),
    `Headers: ${headers.length ? headers.join(', ') : '(none)'}`,
    'Redirects: not followed (a redirect comes back to the agent; following it is a new request)',
  ];
  if (body && body.length > 0) details.push(`Body: ${body.length} bytes: ${shown(body.subarray(0, 2048).toString('utf8'))}${body.length > 2048 ? ' … (cut)' : ''}`);
  const host = resolved?.isName ? shown(resolved.host) : undefined;
  const scope = host
    ? `, while ${host} resolves to public addresses${local.length > 0 ? ` or to ${list(local)}` : ''} (to any other address on this machine or a private network: asked again)`
    : '';
  return {
    kind: 'ask',
    needs: [need],
    what: {
      summary,
      details,
      complete: headers.length === 0 && !body?.length && (resolved?.addresses.length ?? 0) <= SHOWN_ADDRESSES,
      sessionScope: `Allow for Session: later HTTP requests to ${shown(origin)}, on this connection only${scope}${envVars.length > 0 ? '; a request that sends an environment variable is asked again' : ''}.`,
    },
    params: stopped,
  };
}
