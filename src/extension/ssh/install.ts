// Installing this project's CLI on a host that has no executor: the plan (ship node-pty's
// prebuilt native module when the host's OS/arch/libc match one we carry, else build it there
// with npm + node-gyp), the clear refusals (no Node, Node too old, no compiler, a platform
// node-pty does not run on), the payload (dist/cli.js, the libraries it loads on first use,
// dist/lib/, the native helpers of a Linux host's arch, and node-pty's JS and native part) and the
// installer that unpacks it on the host under ~/.exec-server/<version>, builds if needed,
// checks that a PTY really starts, and only then moves it into place and writes the
// ~/.exec-server/bin/exec-server launcher. The installer is Node code run by the host's own
// `node` (sent base64-encoded, so no login shell quoting can change it). Free of `vscode`.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { noLinks } from '../common';
import { INSTALL_DIR, type HostFacts } from './probe';
import { formatSshTarget, runSsh, shQuote, sshArgv, throwIfSshFailed, type SshOptions, type SshTarget } from './target';

/** package.json engines.node */
export const MIN_NODE_MAJOR = 20;

export type InstallRefusal = 'no-node' | 'node-too-old' | 'no-compiler' | 'wrong-platform' | 'no-bundle';

export class InstallError extends Error {
  constructor(
    readonly kind: InstallRefusal | 'build-failed' | 'check-failed' | 'install-failed',
    message: string,
  ) {
    // Shown in a notification; the message quotes the host (its PATH, node --version, the installer's stderr).
    super(noLinks(message));
    this.name = 'InstallError';
  }
}

/** Node's names for uname's: `Linux` → linux, `aarch64` → arm64 (undefined: unknown). */
export function nodePlatform(os: string): string | undefined {
  return ({ Linux: 'linux', Darwin: 'darwin', FreeBSD: 'freebsd', OpenBSD: 'openbsd', SunOS: 'sunos', AIX: 'aix' } as Record<string, string>)[os] ?? (/^(MINGW|MSYS|CYGWIN)/i.test(os) ? 'win32' : undefined);
}
export function nodeArch(machine: string): string | undefined {
  return ({ x86_64: 'x64', amd64: 'x64', aarch64: 'arm64', arm64: 'arm64', armv7l: 'arm', armv6l: 'arm', i686: 'ia32', i386: 'ia32', ppc64le: 'ppc64', s390x: 's390x', riscv64: 'riscv64' } as Record<string, string>)[machine];
}

/** linux-x64-glibc, darwin-arm64: what a native module must match. */
export function platformKey(platform: string, arch: string, libc?: string): string {
  return platform === 'linux' ? `${platform}-${arch}-${libc ?? 'glibc'}` : `${platform}-${arch}`;
}

/** What the extension carries (its install folder, or the repository in tests). */
export interface CliBundle {
  root: string;
  version: string;
  /** platformKey → folder holding pty.node (+ spawn-helper on macOS). */
  prebuilt: Map<string, string>;
  /** node-pty's sources and node-addon-api are there: a build on the host is possible. */
  canBuild: boolean;
}

function localLibc(): 'glibc' | 'musl' {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header?.glibcVersionRuntime ? 'glibc' : 'musl';
}

/** Finds dist/cli.js and node-pty under `root`; throws if the CLI itself is missing. */
export function findBundle(root: string, version: string): CliBundle {
  if (!existsSync(path.join(root, 'dist', 'cli.js'))) throw new InstallError('no-bundle', `the extension has no CLI to install (${path.join(root, 'dist', 'cli.js')} is missing)`);
  if (!existsSync(path.join(root, 'dist', 'lib'))) throw new InstallError('no-bundle', `the extension's CLI is incomplete (${path.join(root, 'dist', 'lib')}, the libraries it loads on first use, is missing)`);
  const pty = path.join(root, 'node_modules', 'node-pty');
  const prebuilt = new Map<string, string>();
  // node-pty built for this machine at npm install time (a development tree).
  if (existsSync(path.join(pty, 'build', 'Release', 'pty.node'))) prebuilt.set(platformKey(process.platform, process.arch, process.platform === 'linux' ? localLibc() : undefined), path.join(pty, 'build', 'Release'));
  // prebuilds/<platform>-<arch>: where a VSIX keeps its native parts (scripts/package-vsix.mjs;
  // Linux ones are glibc builds), and node-pty's own package its macOS/Windows ones.
  const pre = path.join(pty, 'prebuilds');
  if (existsSync(pre)) {
    for (const d of readdirSync(pre)) {
      const [platform, arch] = d.split('-');
      if (platform && arch && existsSync(path.join(pre, d, 'pty.node'))) prebuilt.set(platformKey(platform, arch, platform === 'linux' ? 'glibc' : undefined), path.join(pre, d));
    }
  }
  const canBuild = existsSync(path.join(pty, 'binding.gyp')) && existsSync(path.join(pty, 'src', 'unix', 'pty.cc')) && existsSync(path.join(root, 'node_modules', 'node-addon-api', 'package.json'));
  return { root, version, prebuilt, canBuild };
}

export type InstallPlan =
  | { mode: 'prebuilt'; key: string; from: string; node: string; summary: string }
  | { mode: 'build'; key: string; node: string; npm: string; summary: string };

/**
 * The installed CLI (`exec-server X.Y.Z` from --version) is older than `version`; an unreadable
 * answer counts as outdated, a newer one (another window's newer extension) does not.
 */
export function isOutdated(installedVersion: string | undefined, version: string): boolean {
  const parse = (v: string) => /(\d+)\.(\d+)\.(\d+)/.exec(v)?.slice(1).map(Number);
  const have = parse(installedVersion ?? '');
  const want = parse(version);
  if (!want) return false;
  if (!have) return true;
  for (let i = 0; i < 3; i++) if (have[i] !== want[i]) return have[i] < want[i];
  return false;
}

/** Node's version as [major, minor]; undefined if unreadable. */
export function parseNodeVersion(v: string | undefined): [number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)/.exec(v ?? '');
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/**
 * What installing on this host means, or an InstallError saying exactly why it cannot work.
 * `forceBuild`: build even where a prebuilt matches (tests; a host whose libc is unusual).
 */
export function planInstall(f: HostFacts, bundle: CliBundle, opts: { forceBuild?: boolean } = {}): InstallPlan {
  const platform = nodePlatform(f.os);
  const arch = nodeArch(f.arch);
  const where = `${f.os || 'unknown OS'} ${f.arch || 'unknown arch'}`;
  if (platform !== 'linux' && platform !== 'darwin') {
    throw new InstallError('wrong-platform', `the host runs ${where}: the CLI's terminals (node-pty) need Linux or macOS`);
  }
  if (!arch) throw new InstallError('wrong-platform', `the host's architecture ${f.arch || '(unknown)'} is not one Node supports`);
  if (!f.node) {
    throw new InstallError('no-node', `there is no Node.js on the host's PATH (${f.path || 'empty'}); install Node ${MIN_NODE_MAJOR} or newer there, or make it reachable for non-interactive ssh logins`);
  }
  const v = parseNodeVersion(f.nodeVersion);
  if (!v) throw new InstallError('no-node', `${f.node} on the host does not run (node --version printed ${JSON.stringify(f.nodeVersion ?? '')})`);
  if (v[0] < MIN_NODE_MAJOR) throw new InstallError('node-too-old', `Node ${f.nodeVersion} on the host (${f.node}) is too old: the CLI needs Node ${MIN_NODE_MAJOR} or newer`);
  const key = platformKey(platform, arch, platform === 'linux' ? f.libc : undefined);
  const from = bundle.prebuilt.get(key);
  if (from && !opts.forceBuild) return { mode: 'prebuilt', key, from, node: f.node, summary: `copy the CLI and its prebuilt ${key} terminal module` };
  if (!bundle.canBuild) {
    const have = [...bundle.prebuilt.keys()].join(', ') || 'none';
    throw new InstallError('wrong-platform', `the host is ${key}, the extension carries a terminal module (node-pty) only for ${have} and not the sources to build one`);
  }
  const compiler = f.tools['c++'] ?? f.tools['g++'] ?? f.tools['clang++'];
  const missing = [!f.tools.npm && 'npm', !compiler && 'a C++ compiler (c++, g++ or clang++)', !f.tools.make && 'make', !f.tools.python3 && 'python3'].filter(Boolean) as string[];
  if (missing.length) {
    throw new InstallError('no-compiler', `the host is ${key} (no prebuilt terminal module for it), and building one needs ${missing.join(', ')}, which the host lacks (e.g. apt-get install build-essential python3)`);
  }
  return { mode: 'build', key, node: f.node, npm: f.tools.npm!, summary: `copy the CLI and build its ${key} terminal module with npm/node-gyp` };
}

export interface PayloadFile {
  /** Relative to the install folder, '/'-separated. */
  path: string;
  data: Buffer;
  mode: number;
}

function walk(dir: string, keep: (rel: string) => boolean, rel = ''): string[] {
  const out: string[] = [];
  for (const n of readdirSync(path.join(dir, rel)).sort()) {
    const r = rel ? `${rel}/${n}` : n;
    if (statSync(path.join(dir, r)).isDirectory()) out.push(...walk(dir, keep, r));
    else if (keep(r)) out.push(r);
  }
  return out;
}

/** The files the host receives for `plan`. */
export function buildPayload(bundle: CliBundle, plan: InstallPlan): PayloadFile[] {
  const files: PayloadFile[] = [];
  const add = (to: string, from: string) => {
    const st = statSync(from);
    files.push({ path: to, data: readFileSync(from), mode: st.mode & 0o111 ? 0o755 : 0o644 });
  };
  const pty = path.join(bundle.root, 'node_modules', 'node-pty');
  add('cli.js', path.join(bundle.root, 'dist', 'cli.js'));
  // The OpenTelemetry bundle cli.js requires when telemetry is configured (--otlp-endpoint,
  // --prometheus): without it such a server would not start on the host.
  const telemetry = path.join(bundle.root, 'dist', 'telemetry.js');
  if (existsSync(telemetry)) add('telemetry.js', telemetry);
  // The libraries cli.js requires on first use (yaml, node-forge, jose: esbuild.mjs), beside it in lib/.
  const libs = path.join(bundle.root, 'dist', 'lib');
  for (const name of readdirSync(libs)) if (name.endsWith('.js')) add(`lib/${name}`, path.join(libs, name));
  files.push({ path: 'package.json', data: Buffer.from(JSON.stringify({ name: 'exec-server-host', version: bundle.version, private: true }, null, 2) + '\n'), mode: 0o644 });
  const ptyPkg = JSON.parse(readFileSync(path.join(pty, 'package.json'), 'utf8')) as Record<string, unknown>;
  delete ptyPkg.devDependencies;
  // A build runs node-gyp through npm (which carries its own node-gyp); node-pty's prebuild
  // check is skipped: the host never gets a prebuilds folder.
  ptyPkg.scripts = plan.mode === 'build' ? { install: 'node-gyp rebuild' } : {};
  files.push({ path: 'node_modules/node-pty/package.json', data: Buffer.from(JSON.stringify(ptyPkg, null, 2) + '\n'), mode: 0o644 });
  for (const r of walk(path.join(pty, 'lib'), (f) => f.endsWith('.js') && !f.endsWith('.test.js'))) add(`node_modules/node-pty/lib/${r}`, path.join(pty, 'lib', r));
  if (existsSync(path.join(pty, 'LICENSE'))) add('node_modules/node-pty/LICENSE', path.join(pty, 'LICENSE'));
  // The transparent-TCP helper of the host's arch (statically linked where it was built with a
  // static C library: then glibc or musl alike), where the CLI looks for it (native/ beside
  // cli.js); without it the host's server leaves the flag off.
  // The C heap module of the host's arch (../../server/c-heap.ts) is built against glibc: it does
  // not load on a musl host, whose server then keeps its C library's defaults.
  const [platform, arch] = plan.key.split('-');
  for (const name of [`transparent-tcp-${platform}-${arch}`, `malloc-release-${platform}-${arch}.node`]) {
    const file = path.join(bundle.root, 'dist', 'native', name);
    if (platform === 'linux' && existsSync(file)) add(`native/${name}`, file);
  }
  if (plan.mode === 'prebuilt') {
    for (const n of ['pty.node', 'spawn-helper']) if (existsSync(path.join(plan.from, n))) add(`node_modules/node-pty/build/Release/${n}`, path.join(plan.from, n));
  } else {
    add('node_modules/node-pty/binding.gyp', path.join(pty, 'binding.gyp'));
    // binding.gyp compiles only src/unix/* outside Windows.
    for (const r of walk(path.join(pty, 'src', 'unix'), () => true)) add(`node_modules/node-pty/src/unix/${r}`, path.join(pty, 'src', 'unix', r));
    const napi = path.join(bundle.root, 'node_modules', 'node-addon-api');
    for (const r of walk(napi, (f) => !f.endsWith('.md'))) add(`node_modules/node-addon-api/${r}`, path.join(napi, r));
  }
  return files;
}

/**
 * Runs on the host under its `node` (argv: mode, version, npm). stdin: one JSON header line
 * {files:[{path,size,mode}]} then the files' bytes. Progress on stderr ("step: …"), failures
 * as "error: <kind>: …" + exit 3, success "installed=<launcher>" on stdout.
 */
const INSTALLER = String.raw`
const fs = require('fs'), path = require('path'), os = require('os'), cp = require('child_process');
const [mode, version, npm] = process.argv.slice(1);
const say = (m) => process.stderr.write('step: ' + m + '\n');
const fail = (kind, m) => { process.stderr.write('error: ' + kind + ': ' + m + '\n'); process.exit(3); };
const chunks = [];
process.stdin.on('data', (d) => chunks.push(d));
process.stdin.on('end', () => {
  const all = Buffer.concat(chunks);
  const nl = all.indexOf(10);
  if (nl < 0) fail('install-failed', 'the payload has no header');
  const header = JSON.parse(all.subarray(0, nl).toString());
  const base = path.join(os.homedir(), '${INSTALL_DIR}');
  const target = path.join(base, version);
  const tmp = target + '.tmp-' + process.pid;
  // Leftovers of an install that was cancelled or cut off (its installer is gone).
  const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } };
  fs.mkdirSync(base, { recursive: true });
  for (const n of fs.readdirSync(base)) {
    const m = /\.(tmp|old)-(\d+)$/.exec(n);
    if (m && !alive(Number(m[2]))) fs.rmSync(path.join(base, n), { recursive: true, force: true });
  }
  fs.rmSync(tmp, { recursive: true, force: true });
  let off = nl + 1;
  say('unpacking ' + header.files.length + ' files into ' + tmp);
  for (const f of header.files) {
    if (path.isAbsolute(f.path) || f.path.split('/').includes('..')) fail('install-failed', 'bad path in the payload: ' + f.path);
    const to = path.join(tmp, f.path);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.writeFileSync(to, all.subarray(off, off + f.size), { mode: f.mode });
    off += f.size;
  }
  if (off !== all.length) fail('install-failed', 'the payload was cut short or is too long (' + all.length + ' bytes, expected ' + off + ')');
  const env = Object.assign({}, process.env, { PATH: path.dirname(process.execPath) + path.delimiter + (process.env.PATH || '') });
  if (mode === 'build') {
    const prefix = path.dirname(path.dirname(process.execPath));
    if (fs.existsSync(path.join(prefix, 'include', 'node', 'common.gypi'))) env.npm_config_nodedir = prefix;
    say('building node-pty with ' + npm + ' (node-gyp)');
    const r = cp.spawnSync(npm, ['run', 'install', '--foreground-scripts'], { cwd: path.join(tmp, 'node_modules', 'node-pty'), env, stdio: ['ignore', 2, 2] });
    if (r.status !== 0) { fs.rmSync(tmp, { recursive: true, force: true }); fail('build-failed', 'building node-pty failed (exit ' + (r.status ?? r.signal) + '); its output is above'); }
  }
  say('checking that a terminal starts');
  const check = "const p=require(" + JSON.stringify(path.join(tmp, 'node_modules', 'node-pty')) + ").spawn('/bin/sh',['-c','exit 7'],{});p.onExit((e)=>process.exit(e.exitCode===7?0:9))";
  const c = cp.spawnSync(process.execPath, ['-e', check], { env, encoding: 'utf8', timeout: 30000 });
  if (c.status !== 0) { fs.rmSync(tmp, { recursive: true, force: true }); fail('check-failed', 'the terminal module does not work on this host: ' + (c.stderr || '').trim().split('\n').slice(-3).join(' | ')); }
  const v = cp.spawnSync(process.execPath, [path.join(tmp, 'cli.js'), '--version'], { env, encoding: 'utf8', timeout: 30000 });
  if (v.status !== 0) { fs.rmSync(tmp, { recursive: true, force: true }); fail('check-failed', 'the CLI does not start: ' + (v.stderr || '').trim()); }
  const old = target + '.old-' + process.pid;
  if (fs.existsSync(target)) fs.renameSync(target, old);
  fs.renameSync(tmp, target);
  fs.rmSync(old, { recursive: true, force: true });
  const bin = path.join(base, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  const q = (s) => "'" + s.replace(/'/g, "'\\''") + "'";
  const launcher = path.join(bin, 'exec-server');
  fs.writeFileSync(launcher + '.tmp', '#!/bin/sh\n# Written by the Exec Server extension (Connect to Host).\nexec ' + q(process.execPath) + ' ' + q(path.join(target, 'cli.js')) + ' "$@"\n', { mode: 0o755 });
  fs.renameSync(launcher + '.tmp', launcher);
  process.stdout.write('installed=' + launcher + '\n');
});
`;

/** The remote command line that runs INSTALLER under `node` (base64: immune to shell quoting). */
export function installerCommand(node: string, mode: 'prebuilt' | 'build', version: string, npm = ''): string {
  const code = `eval(Buffer.from("${Buffer.from(INSTALLER).toString('base64')}","base64").toString())`;
  return [shQuote(node), '-e', shQuote(code), mode, shQuote(version), shQuote(npm || '-')].join(' ');
}

/** header line + bytes, as INSTALLER reads them. */
export function encodePayload(files: PayloadFile[]): Buffer {
  const header = JSON.stringify({ files: files.map((f) => ({ path: f.path, size: f.data.length, mode: f.mode })) });
  return Buffer.concat([Buffer.from(header + '\n'), ...files.map((f) => f.data)]);
}

/**
 * Installs the CLI on `t` following `plan`; resolves with the launcher's path on the host.
 * `onProgress` gets the installer's steps (and a build's output lines).
 */
export async function installOnHost(
  t: SshTarget,
  ssh: SshOptions,
  bundle: CliBundle,
  plan: InstallPlan,
  opts: { onProgress?(line: string): void; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<string> {
  const payload = encodePayload(buildPayload(bundle, plan));
  const cmd = installerCommand(plan.node, plan.mode, bundle.version, plan.mode === 'build' ? plan.npm : undefined);
  const r = await runSsh(ssh, sshArgv(t, ssh, cmd), {
    input: payload,
    // A node-gyp build of node-pty takes a minute or two on a small host.
    timeoutMs: opts.timeoutMs ?? (plan.mode === 'build' ? 600_000 : 120_000),
    target: formatSshTarget(t),
    signal: opts.signal,
    onStderr: (l) => opts.onProgress?.(l.replace(/^step: /, '')),
  });
  throwIfSshFailed(r, formatSshTarget(t));
  const err = /^error: ([a-z-]+): (.*)$/m.exec(r.stderr);
  if (r.code !== 0 || err) {
    const kind = (err?.[1] as InstallError['kind'] | undefined) ?? 'install-failed';
    const detail = err?.[2] ?? `the installer exited ${r.code ?? r.signal}: ${r.stderr.trim().split('\n').slice(-5).join(' | ')}`;
    throw new InstallError(['build-failed', 'check-failed'].includes(kind) ? kind : 'install-failed', `installing on ${formatSshTarget(t)} failed: ${detail}`);
  }
  const m = /^installed=(.+)$/m.exec(r.stdout);
  if (!m) throw new InstallError('install-failed', `the installer on ${formatSshTarget(t)} reported no launcher (stdout: ${JSON.stringify(r.stdout.slice(0, 200))})`);
  return m[1];
}
