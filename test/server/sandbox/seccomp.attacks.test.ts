// Attacks on the seccomp filter's socket rules (docs/security.md, "Managed sandbox"): in a sandbox with the network
// restricted, a command must not reach a host unix socket by its path. Datagram sockets can
// sendto any path, so they are refused; but the kernel turns AF_UNIX SOCK_RAW into a datagram
// socket (net/unix/af_unix.c: `case SOCK_RAW: sock->type = SOCK_DGRAM`), and a filter that
// refuses only SOCK_DGRAM let it through. Every type number the kernel might accept is tried,
// from socket() and socketpair(), with and without SOCK_NONBLOCK/SOCK_CLOEXEC. Real bwrap,
// real host datagram socket (a /dev/log look-alike outside the writable roots).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { serverWithTmpDir, startParams, uri, type Client } from '../../support/server';
import { waitFor } from '../../support/wait';

let c: Client;
let dir: string;
let close: () => Promise<void>;
let W: string;

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
  W = path.join(dir, 'work');
  fs.mkdirSync(W, { recursive: true });
});
after(() => close());

async function run(id: string, argv: string[]): Promise<string> {
  const sandbox = managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W), network: 'restricted' });
  await c.call('process/start', startParams(id, argv, { cwd: uri(W), sandbox }));
  await c.sink.waitFor(() => c.sink.closed(id), 60_000, `${id} closed`);
  return c.sink.outputText(id);
}

test('sandboxed attack: network restricted — AF_UNIX SOCK_RAW (a datagram socket in the kernel) or any other non-stream type cannot send to a host socket path; stream and seqpacket still work', async () => {
  const dgramPath = path.join(dir, 'log.sock');
  const receiver = spawn('python3', ['-c', 'import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM); s.bind(sys.argv[1]); print("ready",flush=True)\nwhile True:\n  d=s.recv(100); print(d.decode(),flush=True)\n  if d==b"END": break', dgramPath]);
  let received = '';
  receiver.stdout.on('data', (d: Buffer) => (received += d.toString()));
  await waitFor(() => received.includes('ready'), { what: 'datagram receiver ready', timeout: 60_000 });
  try {
    // Types 1..15 (the kernel masks the type with 0xf), plain and with NONBLOCK|CLOEXEC.
    const probe = [
      'import socket',
      'FLAGS = socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC',
      'for t in range(1, 16):',
      '  for fl in (0, FLAGS):',
      '    try:',
      '      s = socket.socket(socket.AF_UNIX, t | fl)',
      `      try: s.sendto(b"FROM-SANDBOX-%d" % t, ${JSON.stringify(dgramPath)}); print("socket", t, fl, "SENT")`,
      '      except OSError as e: print("socket", t, fl, "created", "send-errno%d" % e.errno)',
      '    except OSError as e: print("socket", t, fl, "errno%d" % e.errno)',
      '    try:',
      '      a, b = socket.socketpair(socket.AF_UNIX, t | fl)',
      `      try: a.sendto(b"FROM-SANDBOX-PAIR-%d" % t, ${JSON.stringify(dgramPath)}); print("pair", t, fl, "SENT")`,
      '      except OSError as e: print("pair", t, fl, "created", "send-errno%d" % e.errno)',
      '    except OSError as e: print("pair", t, fl, "errno%d" % e.errno)',
    ].join('\n');
    const out = await run('raw1', ['python3', '-c', probe]);
    const created = out.split('\n').filter((l) => / created | SENT$/.test(l));
    // Only stream (1) and seqpacket (5) sockets may exist in the sandbox; they send only to a peer.
    const allowed = created.filter((l) => !/^(socket|pair) [15] /.test(l));
    assert.deepEqual(allowed, [], `non-stream AF_UNIX sockets were created in the sandbox:\n${out}`);
    // (A connected seqpacket pair "sends" with an address: the kernel drops the address and
    // delivers to the peer; the receiver below proves nothing reached the host socket.)
    // Stream and seqpacket pairs still work (Node/libuv child pipes).
    const ok = await run('raw2', ['python3', '-c', 'import socket\nfor t in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):\n  a,b=socket.socketpair(socket.AF_UNIX,t|socket.SOCK_CLOEXEC); a.send(b"x"); print("pair-ok" if b.recv(1)==b"x" else "bad")\ns=socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); print("seqpacket-ok")']);
    assert.equal(ok, 'pair-ok\npair-ok\nseqpacket-ok\n');
    spawnSync('python3', ['-c', 'import socket,sys\nsocket.socket(socket.AF_UNIX,socket.SOCK_DGRAM).sendto(b"END", sys.argv[1])', dgramPath]);
    await waitFor(() => received.includes('END'), { what: 'END received', timeout: 60_000 });
    assert.equal(received, 'ready\nEND\n', 'the host datagram socket got nothing from the sandbox');
  } finally {
    receiver.kill();
  }
});
