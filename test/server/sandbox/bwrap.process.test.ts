// process/start under a managed sandbox, with the real bubblewrap and real processes (pipes
// and PTYs): confinement (writes, .git, network), sandboxDenied, and that everything a
// client relies on still works through the sandbox — exit codes, output, close, stdin,
// interrupt, resize, terminate (no leaked process), arg0.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { managedSandbox, specialPath, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { after, before, test } from 'node:test';
import { sandboxSupport } from '../../../src/server/sandbox/support';
import { ENV, b64, rejectsWith, serverWithTmpDir, startParams, uri, unb64, type Client } from '../../support/server';
import { isAlive, spawnTied } from '../../support/process';
import { waitFor } from '../../support/wait';

let c: Client;
let dir: string;
let close: () => Promise<void>;
let W: string;
let O: string;

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
  W = path.join(dir, 'work');
  O = path.join(dir, 'outside');
  for (const d of [W, O, path.join(W, '.git')]) fs.mkdirSync(d, { recursive: true });
});
after(() => close());

type Net = 'restricted' | 'enabled';
/** Codex's workspace-write profile minus /tmp (the test dirs live there). */
function workspaceWrite(network: Net = 'restricted') {
  return managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W), network });
}
function readOnly() {
  const s = workspaceWrite();
  s.permissions.file_system.entries = [{ path: specialPath('root'), access: 'read' }] as never;
  return s;
}
const sh = (id: string, script: string, extra: Record<string, unknown> = {}) =>
  startParams(id, ['/bin/bash', '-c', script], { cwd: uri(W), sandbox: workspaceWrite(), ...extra });

async function finished(id: string): Promise<{ exitCode: number; sandboxDenied: boolean; out: string }> {
  await c.sink.waitFor(() => c.sink.closed(id), 20_000, `${id} closed`);
  const ex = c.sink.forProcess(id).find((e) => e.method === 'process/exited')!;
  return { exitCode: ex.params.exitCode, sandboxDenied: ex.params.sandboxDenied, out: c.sink.outputText(id) };
}

/** Host pids running exactly `sleep <token>`. */
function pidsWith(token: string): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (fs.readFileSync(`/proc/${name}/cmdline`, 'utf8') === `sleep\0${token}\0`) out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

test('sandboxed pipe: sandboxType linuxSeccomp; write inside the workspace ok, outside → EROFS and sandboxDenied', async () => {
  const r = await c.call('process/start', sh('w1', `echo in > inside.txt && echo wrote; echo out > ${O}/x.txt`));
  assert.deepEqual(r, { processId: 'w1', sandboxType: 'linuxSeccomp' });
  const f = await finished('w1');
  assert.equal(fs.readFileSync(path.join(W, 'inside.txt'), 'utf8'), 'in\n');
  assert.equal(fs.existsSync(path.join(O, 'x.txt')), false);
  assert.match(f.out, /wrote\n.*Read-only file system/s);
  assert.equal(f.exitCode, 1);
  assert.equal(f.sandboxDenied, true);
  const read = await c.call('process/read', { processId: 'w1' });
  assert.equal(read.sandboxDenied, true);
  assert.equal(read.exitCode, 1);
  // Unsandboxed answer unchanged.
  assert.deepEqual(await c.call('process/start', startParams('w0', ['true'], { sandbox: null })), { processId: 'w0', sandboxType: 'none' });
  await finished('w0');
});

test('sandboxed: exit 0 after a blocked write → sandboxDenied false; non-zero without a denial → false', async () => {
  await c.call('process/start', sh('d0', `echo x > ${O}/y.txt; exit 0`));
  const f0 = await finished('d0');
  assert.match(f0.out, /Read-only file system/);
  assert.deepEqual([f0.exitCode, f0.sandboxDenied], [0, false]);
  await c.call('process/start', sh('d1', 'echo just failing; exit 3'));
  const f1 = await finished('d1');
  assert.deepEqual([f1.exitCode, f1.sandboxDenied, f1.out], [3, false, 'just failing\n']);
  assert.equal((await c.call('process/read', { processId: 'd1' })).sandboxDenied, false);
});

test('sandboxed: Codex read-only profile denies a write in the workspace too', async () => {
  await c.call('process/start', sh('r1', 'touch ro.txt', { sandbox: readOnly() }));
  const f = await finished('r1');
  assert.equal(fs.existsSync(path.join(W, 'ro.txt')), false);
  assert.deepEqual([f.exitCode, f.sandboxDenied], [1, true]);
});

test('sandboxed: the protected .git stays read-only inside the writable root', async () => {
  await c.call('process/start', sh('g1', 'echo hook > .git/hooks-post-checkout'));
  const f = await finished('g1');
  assert.equal(fs.existsSync(path.join(W, '.git', 'hooks-post-checkout')), false);
  assert.deepEqual([f.exitCode, f.sandboxDenied], [1, true]);
});

test('sandboxed: network restricted — a 127.0.0.1 listener on the host is unreachable; enabled reaches it', async () => {
  let connections = 0;
  const server = net.createServer((s) => {
    connections++;
    s.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  try {
    await c.call('process/start', sh('n1', `echo hi > /dev/tcp/127.0.0.1/${port} && echo connected`));
    const f = await finished('n1');
    assert.equal(connections, 0);
    assert.doesNotMatch(f.out, /connected/);
    assert.deepEqual([f.exitCode, f.sandboxDenied], [1, true]);
    await c.call('process/start', sh('n2', `echo hi > /dev/tcp/127.0.0.1/${port} && echo connected`, { sandbox: workspaceWrite('enabled') }));
    const g = await finished('n2');
    assert.deepEqual([g.exitCode, g.out], [0, 'connected\n']);
    assert.equal(connections, 1);
  } finally {
    server.close();
  }
});

test('sandboxed: exit codes (plain, signal death 128+n) and every output byte, as unsandboxed', async () => {
  const script = 'head -c 3000000 /dev/zero | tr "\\0" "a"; echo; echo err >&2; exit 42';
  await c.call('process/start', sh('x1', script));
  await c.call('process/start', startParams('x1u', ['/bin/bash', '-c', script], { cwd: uri(W) }));
  const [a, b] = [await finished('x1'), await finished('x1u')];
  assert.equal(a.exitCode, 42);
  assert.equal(a.out.length, 3_000_000 + 1 + 4);
  assert.deepEqual([a.exitCode, a.out.length], [b.exitCode, b.out.length]);
  await c.call('process/start', sh('x2', 'kill -TERM $$'));
  await c.call('process/start', startParams('x2u', ['/bin/bash', '-c', 'kill -TERM $$'], { cwd: uri(W) }));
  assert.equal((await finished('x2')).exitCode, 143);
  assert.equal((await finished('x2u')).exitCode, 143);
  // A missing program or cwd is a spawn error (-32603), as unsandboxed, not a sandbox message.
  await rejectsWith(c.call('process/start', sh('x3', '', { argv: ['no-such-program-xyz'] })), -32603, /No such file or directory/);
  await rejectsWith(c.call('process/start', sh('x4', 'true', { cwd: uri(path.join(W, 'nope')) })), -32603, /No such file or directory/);
});

test('sandboxed pipe: stdin via pipeStdin, interrupt reaches a shell trap, arg0', async () => {
  await c.call('process/start', sh('s1', '', { argv: ['cat'], pipeStdin: true }));
  await c.call('process/write', { processId: 's1', chunk: b64('hello sandbox\n'), writeId: '1' });
  await c.call('process/closeStdin', { processId: 's1' });
  assert.equal((await finished('s1')).out, 'hello sandbox\n');

  await c.call('process/start', sh('s2', 'trap "echo got INT; exit 7" INT; echo ready; while :; do sleep 0.05; done'));
  await c.sink.waitFor(() => c.sink.outputText('s2').includes('ready'));
  await c.call('process/signal', { processId: 's2', signal: 'interrupt' });
  const f = await finished('s2');
  assert.deepEqual([f.out, f.exitCode], ['ready\ngot INT\n', 7]);

  await c.call('process/start', sh('s3', '', { argv: ['/bin/bash', '-c', 'tr "\\0" " " < /proc/$$/cmdline'], arg0: 'renamed-zero' }));
  assert.match((await finished('s3')).out, /^renamed-zero -c /);
});

test('sandboxed: terminate kills everything in the sandbox, also a child that left the process group', async () => {
  const token = `987${process.pid}.5`; // cmdline is NUL-separated: search the argument
  await c.call('process/start', sh('t1', `sleep ${token} & setsid sleep ${token} & echo started; wait`));
  await c.sink.waitFor(() => c.sink.outputText('t1').includes('started'));
  await waitFor(() => pidsWith(token).length === 2, { what: 'both sleepers', timeout: 5_000 });
  const pids = pidsWith(token);
  assert.deepEqual(await c.call('process/terminate', { processId: 't1' }), { running: true });
  await finished('t1');
  await waitFor(() => pids.every((p) => !isAlive(p)), { what: 'sleepers gone', timeout: 5_000 });
});

test('sandboxed PTY: echo, stty size after resize, interrupt with a trap, terminate kills a grandchild', async () => {
  const token = `876${process.pid}.5`;
  await c.call(
    'process/start',
    sh('p1', `trap "echo got-INT" INT; echo tty=$(tty); read line; echo "line=$line"; stty size; read x; stty size; sleep ${token} & echo bg; while :; do wait; done`, {
      tty: true,
      rows: 30,
      cols: 100,
    }),
  );
  const text = () => c.sink.outputText('p1');
  // bwrap shows the terminal as /dev/console (its own /dev has no host pts).
  await c.sink.waitFor(() => /tty=\/dev\//.test(text()), 10_000, 'tty');
  await c.call('process/write', { processId: 'p1', chunk: b64('abc\r'), writeId: '1' });
  await c.sink.waitFor(() => /line=abc/.test(text()) && /30 100/.test(text()), 10_000, 'first size');
  await c.call('process/resize', { processId: 'p1', rows: 40, cols: 120 });
  await c.call('process/write', { processId: 'p1', chunk: b64('\r'), writeId: '2' });
  await c.sink.waitFor(() => /40 120/.test(text()) && /bg/.test(text()), 10_000, 'resized');
  await waitFor(() => pidsWith(token).length === 1, { what: 'grandchild', timeout: 5_000 });
  const [grandchild] = pidsWith(token);
  await c.call('process/signal', { processId: 'p1', signal: 'interrupt' });
  await c.sink.waitFor(() => /got-INT/.test(text()), 10_000, 'trap');
  assert.equal(c.sink.closed('p1'), false);
  assert.deepEqual(await c.call('process/terminate', { processId: 'p1' }), { running: true });
  await finished('p1');
  await waitFor(() => !isAlive(grandchild), { what: 'grandchild gone', timeout: 5_000 });
});

test('sandboxed PTY: Ctrl-C as a byte interrupts the command (not the sandbox), exit code as unsandboxed', async () => {
  // Exit code 5 can only come from the trap: had bwrap died of the SIGINT, the exit would be a signal death.
  await c.call('process/start', sh('p2', 'trap "echo trapped; exit 5" INT; echo go; sleep 30 & wait', { tty: true }));
  await c.sink.waitFor(() => c.sink.outputText('p2').includes('go'), 10_000, 'go');
  await c.call('process/write', { processId: 'p2', chunk: b64('\x03'), writeId: '1' });
  const f = await finished('p2');
  assert.match(f.out, /trapped/);
  assert.equal(f.exitCode, 5);
  await c.call('process/start', sh('p3', 'echo go; exec sleep 30', { tty: true }));
  await c.sink.waitFor(() => c.sink.outputText('p3').includes('go'), 10_000, 'go');
  await c.call('process/write', { processId: 'p3', chunk: b64('\x03'), writeId: '1' });
  assert.equal((await finished('p3')).exitCode, 130);
});

test('sandbox unusable: missing bwrap, or one that cannot create namespaces → -32600 naming the cause; nothing runs', async () => {
  const saved = process.env.EXEC_SERVER_BWRAP;
  const fake = path.join(dir, 'fake-bwrap');
  fs.writeFileSync(fake, '#!/bin/sh\necho "bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1\n', { mode: 0o755 });
  try {
    process.env.EXEC_SERVER_BWRAP = path.join(dir, 'no-such-bwrap');
    await rejectsWith(c.call('process/start', sh('u1', `touch ${O}/unconfined`)), -32600, /bubblewrap not found at .*no-such-bwrap.*bubblewrap/);
    process.env.EXEC_SERVER_BWRAP = fake;
    await rejectsWith(c.call('process/start', sh('u2', `touch ${O}/unconfined`, { tty: true })), -32600, /cannot create a sandbox here.*non-privileged user namespaces/);
    await rejectsWith(c.call('process/read', { processId: 'u1' }), -32600, 'unknown process id u1');
    await rejectsWith(c.call('process/read', { processId: 'u2' }), -32600, 'unknown process id u2');
    // sandbox: null is unaffected.
    await c.call('process/start', startParams('u3', ['true'], { sandbox: null }));
    await finished('u3');
  } finally {
    if (saved === undefined) delete process.env.EXEC_SERVER_BWRAP;
    else process.env.EXEC_SERVER_BWRAP = saved;
  }
  // Neither refused start left a process behind (the engine knows neither id), so nothing can run late.
  assert.equal(fs.existsSync(path.join(O, 'unconfined')), false);
});

test('sandboxed: the child environment is exactly env (+ envPolicy), as unsandboxed', async () => {
  await c.call('process/start', sh('e1', 'env | sort', { env: { PATH: ENV.PATH, FOO: 'bar' } }));
  const out = unb64(b64((await finished('e1')).out));
  const names = out.trim().split('\n').map((l) => l.split('=')[0]);
  // bash adds PWD, SHLVL and _ itself; nothing comes from bwrap or the server's environment.
  assert.deepEqual(names.filter((n) => !['PWD', 'SHLVL', '_'].includes(n)), ['FOO', 'PATH']);
});

test('sandboxed: seccomp filter — AF_INET sockets refused when network is restricted, ptrace/io_uring/bpf always; TIOCSTI on a PTY', async () => {
  const py = (code: string) => ['python3', '-c', code];
  const probe = [
    'import ctypes, socket',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'def sc(nr, *a):',
    '    r = libc.syscall(nr, *a); return "ok" if r >= 0 else "errno%d" % ctypes.get_errno()',
    'try:',
    '    socket.socket(socket.AF_INET, socket.SOCK_STREAM); print("inet ok")',
    'except OSError as e: print("inet errno%d" % e.errno)',
    'socket.socket(socket.AF_UNIX); print("unix ok")',
    'import platform',
    'x = platform.machine() == "x86_64"',
    'print("ptrace", sc(101 if x else 117, 0, 0, 0, 0))',
    'print("io_uring", sc(425, 1, ctypes.create_string_buffer(120)))',
    'print("bpf", sc(321 if x else 280, 0, 0, 0))',
  ].join('\n');
  await c.call('process/start', sh('sc1', '', { argv: py(probe) }));
  const r = await finished('sc1');
  assert.match(r.out, /inet errno1\n/);
  assert.match(r.out, /unix ok\n/);
  assert.match(r.out, /ptrace errno1\n/);
  assert.match(r.out, /io_uring errno1\n/);
  assert.match(r.out, /bpf errno1\n/);
  await c.call('process/start', sh('sc2', '', { argv: py(probe), sandbox: workspaceWrite('enabled') }));
  const e = await finished('sc2');
  assert.match(e.out, /inet ok\n/);
  assert.match(e.out, /ptrace errno1\n/);
  // Typing into the terminal with TIOCSTI is refused.
  await c.call('process/start', sh('sc3', '', { argv: py('import fcntl, termios\ntry:\n    fcntl.ioctl(0, termios.TIOCSTI, b"x"); print("sti ok")\nexcept OSError as e: print("sti errno%d" % e.errno)'), tty: true }));
  assert.match((await finished('sc3')).out, /sti errno1/);
  // Unsandboxed, the same probe creates an AF_INET socket (the filter is what refuses it).
  await c.call('process/start', startParams('sc4', py(probe), { cwd: uri(W) }));
  assert.match((await finished('sc4')).out, /inet ok\n/);
});

test('sandboxed attack: a sandbox that may write /tmp cannot rewrite the seccomp program or deny file the next sandbox loads', async () => {
  const uid = process.getuid!();
  const priv = path.join(os.tmpdir(), `exec-server-sandbox-${uid}`);
  const support = await sandboxSupport();
  assert.ok(support.ok && support.tools.seccomp);
  const program = support.tools.seccomp.restricted;
  assert.equal(path.dirname(program), priv);
  const before = fs.readFileSync(program);
  const tmpWrite = workspaceWrite();
  tmpWrite.permissions.file_system.entries.push({ path: specialPath('tmpdir'), access: 'write' } as never);
  const attack = `ls -la ${priv}; echo junk > ${program}; rm -f ${program} ${priv}/denied; echo done`;
  await c.call('process/start', sh('tm1', attack, { sandbox: tmpWrite }));
  await finished('tm1');
  assert.ok(fs.readFileSync(program).equals(before));
  assert.equal(fs.statSync(path.join(priv, 'denied')).mode & 0o777, 0);
  // And the next sandbox still has the filter.
  await c.call('process/start', sh('tm2', 'grep Seccomp: /proc/self/status'));
  assert.match((await finished('tm2')).out, /Seccomp:\s+2/);
});

test('sandboxed: a writable workspace below a hidden (`none`) directory works; its siblings stay hidden', async () => {
  fs.writeFileSync(path.join(dir, 'sibling-secret'), 'hidden');
  const sb = workspaceWrite();
  sb.permissions.file_system.entries.push({ path: { type: 'path', path: uri(dir) }, access: 'none' } as never);
  await c.call('process/start', sh('h1', `echo ok > nested.txt && cat nested.txt; cat ${dir}/sibling-secret; ls ${dir}`, { sandbox: sb }));
  const f = await finished('h1');
  assert.match(f.out, /^ok\n/);
  assert.doesNotMatch(f.out, /hidden/);
  assert.match(f.out, /Permission denied/);
  assert.equal(fs.readFileSync(path.join(W, 'nested.txt'), 'utf8'), 'ok\n');
});

test('sandboxed attack: network restricted — a host unix socket outside every root is not reachable by its path (read-only mounts do not stop connect), nor a host datagram socket; socketpair and child pipes still work', async () => {
  // An ssh-agent / docker-like listener outside the writable roots, visible read-only inside.
  const sockPath = path.join(O, 'agent.sock');
  // A /dev/log-like datagram socket: prints every datagram until END.
  const dgramPath = path.join(O, 'log.sock');
  const receiver = spawnTied('python3', ['-c', 'import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM); s.bind(sys.argv[1]); print("ready",flush=True)\nwhile True:\n  d=s.recv(100); print(d.decode(),flush=True)\n  if d==b"END": break', dgramPath]);
  let received = '';
  receiver.stdout!.on('data', (d: Buffer) => (received += d.toString()));
  await waitFor(() => received.includes('ready'), { what: 'datagram receiver ready', timeout: 10_000 });
  let reached = 0;
  const srv = net.createServer((s) => {
    reached++;
    s.on('error', () => {});
    s.end('HOST-SOCKET-ANSWER\n');
  });
  await new Promise<void>((r) => srv.listen(sockPath, r));
  try {
    const probe = [
      'import socket, subprocess',
      'def attempt(name, f):',
      '    try: print(name, f())',
      '    except OSError as e: print(name, "errno%d" % e.errno)',
      `def conn():\n    s = socket.socket(socket.AF_UNIX); s.connect(${JSON.stringify(sockPath)}); return s.recv(100).decode().strip()`,
      'attempt("connect", conn)',
      `def dgram():\n    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"FROM-SANDBOX", ${JSON.stringify(dgramPath)}); return "sent"`,
      'attempt("dgram", dgram)',
      `def dgram_pair():\n    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b"FROM-SANDBOX-PAIR", ${JSON.stringify(dgramPath)}); return "sent"`,
      'attempt("dgrampair", dgram_pair)',
      'def pair():\n    a, b = socket.socketpair(); a.send(b"x"); return "ok" if b.recv(1) == b"x" else "bad"',
      'attempt("socketpair", pair)',
      'attempt("subprocess", lambda: subprocess.run(["echo", "child-ok"], capture_output=True).stdout.decode().strip())',
    ].join('\n');
    await c.call('process/start', sh('us1', '', { argv: ['python3', '-c', probe] }));
    const r = await finished('us1');
    assert.match(r.out, /^connect errno1$/m, r.out);
    assert.doesNotMatch(r.out, /HOST-SOCKET-ANSWER/);
    assert.match(r.out, /^dgram errno1$/m, 'no datagram socket (sendto/sendmsg to a host path)');
    assert.match(r.out, /^dgrampair errno1$/m, 'not from socketpair either (a connected datagram socket can still sendto any path)');
    assert.match(r.out, /^socketpair ok$/m);
    assert.match(r.out, /^subprocess child-ok$/m);
    // Node spawns its children's pipes with socketpair (the reference's filter refuses it).
    await c.call('process/start', sh('us2', '', { argv: [process.execPath, '-e', 'process.stdout.write(require("child_process").execFileSync("echo", ["node-child-ok"]))'] }));
    assert.match((await finished('us2')).out, /node-child-ok/);
    assert.equal(reached, 0, 'the host socket never saw a connection');
    // Datagrams are queued in order: END from here comes after anything the sandbox sent.
    spawnSync('python3', ['-c', 'import socket,sys\nsocket.socket(socket.AF_UNIX,socket.SOCK_DGRAM).sendto(b"END", sys.argv[1])', dgramPath]);
    await waitFor(() => received.includes('END'), { what: 'END received', timeout: 10_000 });
    assert.equal(received, 'ready\nEND\n', 'the host datagram socket got nothing from the sandbox');
    // Network enabled: a unix socket is network, and reachable (as on the reference).
    await c.call('process/start', sh('us3', '', { argv: ['python3', '-c', probe], sandbox: workspaceWrite('enabled') }));
    assert.match((await finished('us3')).out, /^connect HOST-SOCKET-ANSWER$/m);
    assert.equal(reached, 1);
  } finally {
    srv.close();
    receiver.kill();
  }
});
