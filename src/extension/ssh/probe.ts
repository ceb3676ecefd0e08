// What Connect to Host learns about a host before it starts anything there: one small POSIX
// script run by `sh -s` over ssh (fed on stdin, so the user's login shell — bash, zsh, fish —
// only sees `sh -s`) reports the OS, architecture, libc, an `exec-server` or `codex` on PATH,
// the CLI this extension installed (~/.exec-server), Node and the tools a native build needs.
// Then: which executor to start, as the remote command of the saved environment. Free of `vscode`.
import { noLinks } from '../common';
import { runSsh, shQuote, sshArgv, throwIfSshFailed, formatSshTarget, SshError, type SshOptions, type SshTarget } from './target';

/** Where the extension installs its CLI on a host (relative to the remote $HOME). */
export const INSTALL_DIR = '.exec-server';

const BEGIN = '__exec_server_probe_begin__';
const END = '__exec_server_probe_end__';

/**
 * Prints key=value lines between two markers (a login script that prints a banner on stdout
 * cannot confuse the parser). Every check is guarded: a missing tool prints nothing.
 */
export const PROBE_SCRIPT = `
echo ${BEGIN}
echo "os=$(uname -s 2>/dev/null)"
echo "arch=$(uname -m 2>/dev/null)"
echo "home=$HOME"
echo "path=$PATH"
if [ "$(uname -s 2>/dev/null)" = Linux ]; then
  if (ldd --version 2>&1 | grep -qi musl) || ls /lib/ld-musl-* >/dev/null 2>&1; then echo "libc=musl"; else echo "libc=glibc"; fi
fi
p=$(command -v exec-server 2>/dev/null) && echo "execServer=$p"
i="$HOME/${INSTALL_DIR}/bin/exec-server"
if [ -x "$i" ]; then echo "installed=$i"; echo "installedVersion=$("$i" --version 2>/dev/null | head -n 1)"; fi
c=$(command -v codex 2>/dev/null) && { echo "codex=$c"; "$c" exec-server --help >/dev/null 2>&1 && echo "codexExecServer=yes"; }
n=$(command -v node 2>/dev/null) && {
  echo "node=$n"
  echo "nodeVersion=$("$n" --version 2>/dev/null)"
  echo "nodePrefix=$("$n" -p 'require("path").dirname(require("path").dirname(process.execPath))' 2>/dev/null)"
}
for t in npm c++ g++ clang++ make python3; do p=$(command -v $t 2>/dev/null) && echo "tool.$t=$p"; done
echo ${END}
`;

export interface HostFacts {
  /** uname -s: Linux, Darwin, … */
  os: string;
  /** uname -m: x86_64, aarch64, … */
  arch: string;
  libc?: 'glibc' | 'musl';
  home: string;
  path: string;
  execServer?: string;
  installed?: string;
  installedVersion?: string;
  codex?: string;
  codexExecServer: boolean;
  node?: string;
  nodeVersion?: string;
  nodePrefix?: string;
  /** Absolute paths of npm, c++, g++, clang++, make, python3 where present. */
  tools: Record<string, string>;
}

/** Reads the probe's output; throws when the markers are missing (the script did not run). */
export function parseProbeOutput(stdout: string): HostFacts {
  const start = stdout.indexOf(BEGIN);
  const end = stdout.indexOf(END, start + 1);
  if (start < 0 || end < 0) throw new Error(`the host did not run the probe script (output: ${JSON.stringify(stdout.slice(0, 200))})`);
  const kv = new Map<string, string>();
  for (const line of stdout.slice(start + BEGIN.length, end).split(/\r?\n/)) {
    const eq = line.indexOf('=');
    if (eq > 0) kv.set(line.slice(0, eq), line.slice(eq + 1));
  }
  const get = (k: string) => (kv.get(k) ? kv.get(k) : undefined);
  const tools: Record<string, string> = {};
  for (const [k, v] of kv) if (k.startsWith('tool.') && v) tools[k.slice(5)] = v;
  const libc = get('libc');
  return {
    os: get('os') ?? '',
    arch: get('arch') ?? '',
    libc: libc === 'musl' || libc === 'glibc' ? libc : undefined,
    home: get('home') ?? '',
    path: get('path') ?? '',
    execServer: get('execServer'),
    installed: get('installed'),
    installedVersion: get('installedVersion'),
    codex: get('codex'),
    codexExecServer: get('codexExecServer') === 'yes',
    node: get('node'),
    nodeVersion: get('nodeVersion'),
    nodePrefix: get('nodePrefix'),
    tools,
  };
}

/** Runs the probe on `t` over ssh. Rejects with SshError when ssh cannot log in. */
export async function probeHost(t: SshTarget, ssh: SshOptions, opts: { acceptNewHostKey?: boolean; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<HostFacts> {
  const r = await runSsh(ssh, sshArgv(t, ssh, 'sh -s', { acceptNewHostKey: opts.acceptNewHostKey }), {
    input: PROBE_SCRIPT,
    timeoutMs: opts.timeoutMs ?? 60_000,
    target: formatSshTarget(t),
    signal: opts.signal,
  });
  throwIfSshFailed(r, formatSshTarget(t));
  if (r.code !== 0 && !r.stdout.includes(END)) {
    // bash/zsh: "sh: command not found"; cmd.exe (a Windows host): "'sh' is not recognized".
    if (/\bsh: (command )?not found|'sh' is not recognized|sh: No such file/i.test(r.stderr)) {
      throw new SshError('failed', formatSshTarget(t), `the host has no POSIX shell \`sh\` on its PATH (a Windows host?); Connect to Host works with Linux and macOS hosts. ${r.stderr}`);
    }
    throw new SshError('failed', formatSshTarget(t), `the probe script exited ${r.code ?? r.signal}: ${r.stderr}`);
  }
  return parseProbeOutput(r.stdout);
}

export interface Executor {
  kind: 'exec-server' | 'installed' | 'codex';
  /** The program found (absolute path on the host). */
  path: string;
  /** The remote command line that serves the protocol on stdio. */
  remoteCommand: string;
  /** For the UI: "exec-server at /usr/local/bin/exec-server". */
  description: string;
}

/**
 * The executor to start: an `exec-server` on PATH, else the CLI this extension installed, else
 * `codex exec-server` (Codex's own executor speaks the same protocol). Undefined: none found.
 */
export function chooseExecutor(f: HostFacts): Executor | undefined {
  const listen = '--listen stdio://';
  // description goes into the "connected" notification: paths and --version are the host's words.
  if (f.execServer) return { kind: 'exec-server', path: f.execServer, remoteCommand: `${shQuote(f.execServer)} ${listen}`, description: noLinks(`exec-server at ${f.execServer}`) };
  if (f.installed) {
    const v = f.installedVersion ? ` (${f.installedVersion})` : '';
    return { kind: 'installed', path: f.installed, remoteCommand: `${shQuote(f.installed)} ${listen}`, description: noLinks(`the installed CLI at ${f.installed}${v}`) };
  }
  if (f.codex && f.codexExecServer) return { kind: 'codex', path: f.codex, remoteCommand: `${shQuote(f.codex)} exec-server ${listen}`, description: noLinks(`codex exec-server (${f.codex})`) };
  return undefined;
}
