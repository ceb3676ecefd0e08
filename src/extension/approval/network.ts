// Network questions: a sandboxed agent command asks, through the managed proxy's decision
// callback (network/policyRequest), to reach a host the launch's policy does not cover. What
// the question says (the host, the port and the command, each bounded and shell-quoted, so no
// markup and no link), the user's own allowlist (execServer.network.allowedDomains) that
// answers without asking, and the answers sent back to the engine. Free of `vscode`.
import { commandLine, shown } from './display-text';

/** Entries of execServer.network.allowedDomains that are read (more are ignored). */
export const MAX_ALLOWED_DOMAINS = 256;
/** Longest host shown in a question (a DNS name is at most 253 characters). */
const MAX_HOST_SHOWN = 253;
/** Longest command line shown in the one-line question (the log has it whole). */
const MAX_COMMAND_SHOWN = 160;

export interface NetworkQuestion {
  host: string;
  port: number;
  /** http, https_connect, socks5_tcp (the proxy's protocol names). */
  protocol: string;
  /** The command whose connection it is (undefined: not a process this connection started). */
  argv?: readonly string[];
}

/** The answer the engine gets (REFERENCE §1.7: allow, or deny with a reason). */
export type NetworkAnswer = { decision: { type: 'allow' } } | { decision: { type: 'deny'; reason: string } };
export const ALLOW_ANSWER: NetworkAnswer = { decision: { type: 'allow' } };
export const denyAnswer = (reason: string): NetworkAnswer => ({ decision: { type: 'deny', reason } });

/** Host names compare case-insensitively, without a trailing dot or IPv6 brackets. */
export function normalizeHost(host: string): string {
  return host.trim().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
}

const PATTERN = /^(\*|(\*\*?\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*|[0-9a-f:.]+)$/;

/**
 * execServer.network.allowedDomains as read: strings only, trimmed and lower-cased, each an
 * exact name (`pypi.org`), `*.example.com` (subdomains), `**.example.com` (the name and its
 * subdomains) or an IP literal; anything else (a URL, a port, `a*b`) is dropped, never widened.
 * `*` alone is dropped too: "everything" is the neverAsk policy, not an allowlist.
 */
export function readAllowedDomains(raw: unknown): string[] {
  if (!Array.isArray(raw)) return [];
  const out: string[] = [];
  for (const v of raw) {
    if (typeof v !== 'string') continue;
    const p = normalizeHost(v);
    if (p === '' || p === '*' || p.length > MAX_HOST_SHOWN || !PATTERN.test(p) || out.includes(p)) continue;
    out.push(p);
    if (out.length >= MAX_ALLOWED_DOMAINS) break;
  }
  return out;
}

/** Does one allowlist pattern (as readAllowedDomains keeps it) cover `host`? */
export function patternCovers(pattern: string, host: string): boolean {
  const h = normalizeHost(host);
  if (pattern.startsWith('**.')) return h === pattern.slice(3) || h.endsWith(pattern.slice(2));
  if (pattern.startsWith('*.')) return h.endsWith(pattern.slice(1));
  return h === pattern;
}

export function allowedByList(patterns: readonly string[], host: string): boolean {
  return patterns.some((p) => patternCovers(p, host));
}

function cut(s: string, max: number): string {
  const cps = [...s];
  return cps.length <= max ? s : `${cps.slice(0, max).join('')}…`;
}

/** The question's one line: who, which command, which host and port. */
export function describeNetworkQuestion(q: NetworkQuestion, who: string): string {
  const target = `${shown(cut(q.host, MAX_HOST_SHOWN))}:${q.port}`;
  const command = q.argv && q.argv.length > 0 ? `\`${cut(commandLine(q.argv), MAX_COMMAND_SHOWN)}\`` : 'a command';
  const how = q.protocol === 'https_connect' ? ' (HTTPS)' : q.protocol === 'http' ? ' (HTTP)' : q.protocol.startsWith('socks5') ? ' (SOCKS5)' : '';
  return `Exec Server: ${who}: ${command} wants to reach ${target}${how}`;
}

/** What the user sees once a question was settled without an answer in time. */
export function timedOutText(seconds: number): string {
  return `Denied: no answer within ${seconds} s`;
}
