// The seccomp filter loaded into every bubblewrap sandbox (bwrap --seccomp FD): a classic BPF
// program built here, byte by byte, for x86_64 and aarch64. It refuses (EPERM) the kernel
// interfaces a sandboxed command has no business with and that widen the kernel's attack
// surface (ptrace, bpf, perf_event_open, userfaultfd, io_uring, keyrings, module and kexec
// loading, open_by_handle_at, TIOCSTI/TIOCLINUX ioctls), and, when the network is
// restricted: every socket family but AF_UNIX (defence in depth behind --unshare-net), and every
// way to reach a host's unix socket by its path. --unshare-net only covers abstract sockets (they
// belong to the network namespace); a socket FILE (ssh-agent, docker, D-Bus, tmux, VS Code IPC)
// stays connectable through a read-only mount, since connect() asks only for write permission on
// the socket inode and read-only mounts do not apply to sockets. The filter cannot see a path, so
// it refuses connect() altogether (the reference's filter does too) and every AF_UNIX socket
// type but stream and seqpacket, from socket() and socketpair() alike: a datagram socket, even a
// connected one, can sendto/sendmsg any socket path (e.g. /dev/log), and SOCK_RAW is one (the
// kernel turns it into SOCK_DGRAM); a stream or seqpacket socket sends only to its connected peer.
// Stream and seqpacket socketpair() stay allowed (the reference refuses socketpair, which breaks
// every Node/libuv program that spawns a child with pipes), and so do bind/listen.
// A syscall from another ABI (i386 `int 0x80`, x32) kills the process: its numbers differ
// and would slip past the list.

/** struct seccomp_data offsets. */
const OFF_NR = 0;
const OFF_ARCH = 4;
const OFF_ARG0 = 16; // low 32 bits (little-endian)
const OFF_ARG1 = 24;

const LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K = 0x06; // BPF_RET | BPF_K
const AND_K = 0x54; // BPF_ALU | BPF_AND | BPF_K

const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;

const AF_UNIX = 1;
const AF_INET = 2;
const AF_INET6 = 10;
// The only AF_UNIX socket types a restricted sandbox may create: both send only to a connected peer.
const SOCK_STREAM = 1;
const SOCK_SEQPACKET = 5;
const SOCK_TYPE_MASK = 0xf; // the rest of socket()'s type argument is SOCK_NONBLOCK | SOCK_CLOEXEC
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

interface ArchTable {
  audit: number;
  /** First number of an ABI that must not be used (x32 on x86_64). */
  foreignFrom?: number;
  socket: number;
  socketpair: number;
  connect: number;
  ioctl: number;
  denied: Record<string, number>;
}

/** Numbers from the kernel's unistd headers (asm/unistd_64.h; asm-generic/unistd.h for aarch64). */
const ARCHES: Record<string, ArchTable> = {
  x64: {
    audit: 0xc000003e, // AUDIT_ARCH_X86_64
    foreignFrom: 0x40000000, // __X32_SYSCALL_BIT
    socket: 41,
    socketpair: 53,
    connect: 42,
    ioctl: 16,
    denied: {
      ptrace: 101, process_vm_readv: 310, process_vm_writev: 311, kexec_load: 246, kexec_file_load: 320,
      init_module: 175, finit_module: 313, delete_module: 176, bpf: 321, perf_event_open: 298, userfaultfd: 323,
      keyctl: 250, add_key: 248, request_key: 249, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
      open_by_handle_at: 304, name_to_handle_at: 303,
    },
  },
  arm64: {
    audit: 0xc00000b7, // AUDIT_ARCH_AARCH64
    socket: 198,
    socketpair: 199,
    connect: 203,
    ioctl: 29,
    denied: {
      ptrace: 117, process_vm_readv: 270, process_vm_writev: 271, kexec_load: 104, kexec_file_load: 294,
      init_module: 105, finit_module: 273, delete_module: 106, bpf: 280, perf_event_open: 241, userfaultfd: 282,
      keyctl: 219, add_key: 217, request_key: 218, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
      open_by_handle_at: 265, name_to_handle_at: 264,
    },
  },
};

export const SECCOMP_DENIED_SYSCALLS = Object.keys(ARCHES.x64.denied);

interface Insn {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

/**
 * The filter for `arch` (a Node `process.arch` value), or undefined when there is no table
 * for it (the sandbox then runs without seccomp; environment/info says so).
 */
export function seccompProgram(arch: string, restrictNetwork: boolean | 'proxied'): Buffer | undefined {
  const t = ARCHES[arch];
  if (!t) return undefined;
  const p: Insn[] = [];
  const ins = (code: number, k: number, jt = 0, jf = 0) => p.push({ code, jt, jf, k });
  // Jumps are relative and forward only: each check below falls through on "no" and jumps
  // over the rest of its block on "yes"; the deny / allow returns are emitted inline.
  ins(LD_W_ABS, OFF_ARCH);
  ins(JEQ_K, t.audit, 1, 0);
  ins(RET_K, RET_KILL_PROCESS);
  ins(LD_W_ABS, OFF_NR);
  if (t.foreignFrom !== undefined) {
    ins(JGE_K, t.foreignFrom, 0, 1);
    ins(RET_K, RET_KILL_PROCESS);
  }
  for (const nr of Object.values(t.denied)) {
    ins(JEQ_K, nr, 0, 1);
    ins(RET_K, RET_ERRNO | EPERM);
  }
  // ioctl(fd, TIOCSTI | TIOCLINUX, …): typing into a terminal / console. Reloads nr afterwards.
  ins(JEQ_K, t.ioctl, 0, 5);
  ins(LD_W_ABS, OFF_ARG1);
  ins(JEQ_K, TIOCSTI, 1, 0);
  ins(JEQ_K, TIOCLINUX, 0, 1);
  ins(RET_K, RET_ERRNO | EPERM);
  ins(RET_K, RET_ALLOW);
  if (restrictNetwork === 'proxied') {
    // Managed proxy (../network): the network namespace holds only the relay's listeners, which
    // the command must connect() to over TCP. So connect() and AF_INET/AF_INET6 sockets stay
    // allowed, and AF_UNIX ones are refused instead (as the reference does in this mode): no new
    // unix socket can reach a host socket file. socketpair() as in restricted mode.
    ins(JEQ_K, t.socket, 0, 5);
    ins(LD_W_ABS, OFF_ARG0);
    ins(JEQ_K, AF_INET, 2, 0);
    ins(JEQ_K, AF_INET6, 1, 0);
    ins(RET_K, RET_ERRNO | EPERM);
    ins(RET_K, RET_ALLOW);
    ins(JEQ_K, t.socketpair, 0, 7);
    ins(LD_W_ABS, OFF_ARG0);
    ins(JEQ_K, AF_UNIX, 0, 4);
    ins(LD_W_ABS, OFF_ARG1);
    ins(AND_K, SOCK_TYPE_MASK);
    ins(JEQ_K, SOCK_STREAM, 2, 0);
    ins(JEQ_K, SOCK_SEQPACKET, 1, 0);
    ins(RET_K, RET_ERRNO | EPERM);
    ins(RET_K, RET_ALLOW);
  } else if (restrictNetwork) {
    // connect(): no path-based unix socket of the host (see the top of this file).
    ins(JEQ_K, t.connect, 0, 1);
    ins(RET_K, RET_ERRNO | EPERM);
    // socket(), socketpair(): AF_UNIX only, and only the types listed (an allow-list: the
    // kernel makes AF_UNIX SOCK_RAW a datagram socket, so refusing SOCK_DGRAM alone let it by).
    ins(JEQ_K, t.socket, 1, 0);
    ins(JEQ_K, t.socketpair, 0, 8);
    ins(LD_W_ABS, OFF_ARG0);
    ins(JEQ_K, AF_UNIX, 0, 4);
    ins(LD_W_ABS, OFF_ARG1);
    ins(AND_K, SOCK_TYPE_MASK);
    ins(JEQ_K, SOCK_STREAM, 2, 0);
    ins(JEQ_K, SOCK_SEQPACKET, 1, 0);
    ins(RET_K, RET_ERRNO | EPERM);
    ins(RET_K, RET_ALLOW);
  }
  ins(RET_K, RET_ALLOW);
  const buf = Buffer.alloc(p.length * 8);
  p.forEach((i, n) => {
    buf.writeUInt16LE(i.code, n * 8);
    buf.writeUInt8(i.jt, n * 8 + 2);
    buf.writeUInt8(i.jf, n * 8 + 3);
    buf.writeUInt32LE(i.k >>> 0, n * 8 + 4);
  });
  return buf;
}
