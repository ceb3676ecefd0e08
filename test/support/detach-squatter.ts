// The attacker of the detached-server tests (cli-detach-attack, ssh-persist): a node http server
// on 127.0.0.1 (or another address, e.g. IPv6-only on [::]) that squats a port — answers GET /readyz, answers anything else 200 with 64 hex
// digits (what a proof looks like), and logs every request and every websocket upgrade's
// Authorization header (then drops the upgrade). Run as another user with `uid` (65534), or as
// this user (switching uid needs root: the tests run as root, as CI does). Its stdio are pipes to
// the test, never the test runner's (a leftover would hold that open).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { waitFor } from './wait';

// Started as this user and then switched to the other uid (setuid) before its socket exists: the
// node binary may live where that user cannot read it (under /root), builtins need no file access.
const SQUATTER = `
const uid = Number(process.argv[2]);
if (uid >= 0) { process.setgroups([]); process.setgid(uid); process.setuid(uid); }
const http = require('http');
const s = http.createServer((req, res) => {
  process.stdout.write('REQUEST ' + req.url + '\\n');
  res.writeHead(200, { 'Content-Type': 'text/plain' }).end(req.url.startsWith('/readyz') ? 'ok\\n' : require('crypto').randomBytes(32).toString('hex') + '\\n');
});
s.on('upgrade', (req, sock) => { process.stdout.write('UPGRADE ' + JSON.stringify(req.headers.authorization || '') + '\\n'); sock.destroy(); });
const host = process.argv[3] || '127.0.0.1';
s.listen({ port: Number(process.argv[1]), host, ipv6Only: host.includes(':') }, () => process.stdout.write('LISTENING ' + s.address().port + '\\n'));
`;

const children = new Set<ChildProcess>();
/** Kills every squatter (call from an `after` hook: a test file's process may end without its 'exit' event). */
export function killSquatters(): void {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
}
process.once('exit', killSquatters);

export interface Squatter {
  pid: number;
  port: number;
  /** Everything it logged: REQUEST <url>, UPGRADE "<authorization>". */
  log(): string;
  kill(): void;
}

/** A squatter on `host`:`port` (0: any; an IPv6 host is bound IPv6-only), run as `uid` (undefined: this user). */
export async function squat(port: number, uid?: number, host = '127.0.0.1'): Promise<Squatter> {
  const child = spawn(process.execPath, ['-e', SQUATTER, String(port), String(uid ?? -1), host], { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/' });
  children.add(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  child.on('error', (e) => (err += e.message));
  const wake = (check: () => void) => {
    child.stdout!.on('data', check);
    child.on('exit', check);
    return () => (child.stdout!.off('data', check), child.off('exit', check));
  };
  await waitFor(() => /LISTENING \d+/.test(out) || child.exitCode !== null, { timeout: 15_000, wake, what: 'the squatter to listen', detail: () => err.slice(0, 500) });
  const m = /LISTENING (\d+)/.exec(out);
  assert.ok(m, `the squatter did not listen: exit ${child.exitCode} ${err.slice(0, 500)}`);
  return {
    pid: child.pid!,
    port: Number(m[1]),
    log: () => out,
    kill: () => {
      child.kill('SIGKILL');
      children.delete(child);
    },
  };
}
