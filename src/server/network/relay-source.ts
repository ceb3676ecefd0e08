// The helper that runs INSIDE a proxied sandbox (started by the sandbox's first program, before
// the command, with `node -e`; ELECTRON_RUN_AS_NODE=1 when the executor is Electron): it opens
// two listening sockets on the network namespace's own 127.0.0.1 — HTTP and SOCKS5 — and hands
// both to the executor over the Node IPC channel it inherited (CHANNEL_FD; the descriptors go
// across with SCM_RIGHTS) and closes its own copies. When the executor says `{ready: true}` (the
// proxy, and with transparent TCP the namespace's routing, are in place) it prints
// "<http port> <socks port>\n" on stdout and exits; on `{error}` it prints "error <why>", and
// the command does not run. Disconnected before either, it exits printing nothing (the same).
// It moves no bytes: the executor accepts the child's connections itself (./proxy-launch.ts),
// so the data path is one hop, the proxy's (docs/performance.md "The managed network proxy"
// measured the byte relay it replaces).
// This is the reference's design (REFERENCE §1.3 step 3: the inner helper sends its listening
// sockets out). The listeners belong to the sandbox's namespace, so a connection to them can
// only come from inside it; no socket of the executor's namespace ever enters the sandbox.
// Kept as source text (no imports, no bundler helpers): it is handed to `node -e` as it is.

/** The IPC channel's descriptor number inside the sandbox (fd 3 carries the seccomp program to bwrap). */
export const CHANNEL_FD = 4;

export const RELAY_SOURCE = `'use strict';
const net = require('net');
const fail = () => process.exit(3);
if (typeof process.send !== 'function') fail();
let ports, go;
// The executor disconnects right after its last word; if that word was read before our own
// sends were confirmed, done() finishes once they are.
process.on('disconnect', () => { if (go === undefined) process.exit(0); });
const http = net.createServer(), socks = net.createServer();
http.on('error', fail); socks.on('error', fail);
const done = () => {
  if (ports === undefined || go === undefined) return;
  process.stdout.write((go === true ? ports : 'error ' + go) + '\\n');
  process.exit(0);
};
process.on('message', (m) => {
  if (go !== undefined || !m || typeof m !== 'object') return;
  if (m.ready === true) go = true;
  else if (typeof m.error === 'string') go = m.error.replace(/[\\r\\n]/g, ' ');
  done();
});
http.listen(0, '127.0.0.1', () => socks.listen(0, '127.0.0.1', () => {
  const hp = http.address().port, sp = socks.address().port;
  process.send({ listener: 'http' }, http, (e) => {
    if (e) fail();
    process.send({ listener: 'socks' }, socks, (e2) => {
      if (e2) fail();
      // The executor holds its own copies now; ours go, so only it ever accepts.
      http.close(); socks.close();
      ports = hp + ' ' + sp;
      done();
    });
  });
}));
`;
