// What runs inside a container: the probe (Connect to Host's POSIX script, fed to `sh -s` through
// `<cli> exec -i`), the executor it found as an argv (`exec-server --listen stdio://`, the CLI
// installed earlier, or `codex exec-server …`), and installing this project's CLI when there is
// none: the same payload as for an ssh host (dist/cli.js + node-pty, ../ssh/install.ts) staged in
// a local temp folder, copied in with `<cli> cp`, then checked inside by the container's own
// `node` (a PTY starts, `cli.js --version` answers) before it moves into ~/.exec-server/<version>
// and the launcher is written. Refusals say what is missing in the container (Node ≥ 20). Free of `vscode`.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildPayload, findBundle, MIN_NODE_MAJOR, parseNodeVersion, planInstall, InstallError, type CliBundle, type InstallPlan } from '../ssh';
import { INSTALL_DIR, parseProbeOutput, PROBE_SCRIPT, type HostFacts } from '../ssh';
import { noLinks } from '../common';
import { ContainerCliError, runCli, runCliOk } from './cli';
import { cpArgv, describeTarget, execArgv, type ContainerTarget } from './target';

export type { HostFacts as ContainerFacts };

export interface ContainerExecutor {
  kind: 'exec-server' | 'installed' | 'codex';
  /** The argv run inside the container; it serves the protocol on stdio. */
  argv: string[];
  /** For the UI: "exec-server at /usr/local/bin/exec-server". */
  description: string;
}

const LISTEN = ['--listen', 'stdio://'];

/** The executor to start (same order as for ssh hosts), or undefined. */
export function chooseContainerExecutor(f: HostFacts): ContainerExecutor | undefined {
  if (f.execServer) return { kind: 'exec-server', argv: [f.execServer, ...LISTEN], description: noLinks(`exec-server at ${f.execServer}`) };
  if (f.installed) return { kind: 'installed', argv: [f.installed, ...LISTEN], description: noLinks(`the installed CLI at ${f.installed}${f.installedVersion ? ` (${f.installedVersion})` : ''}`) };
  if (f.codex && f.codexExecServer) return { kind: 'codex', argv: [f.codex, 'exec-server', ...LISTEN], description: noLinks(`codex exec-server (${f.codex})`) };
  return undefined;
}

/** "Linux x86_64, Node v20.1.0" */
export function factsSummary(f: HostFacts): string {
  return [`${f.os || '?'} ${f.arch || '?'}`, f.node ? `Node ${f.nodeVersion ?? '?'}` : 'no Node'].join(', ');
}

/** Runs the probe script in the container. Rejects with ContainerCliError naming the CLI and its stderr. */
export async function probeContainer(t: ContainerTarget, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<HostFacts> {
  const r = await runCli(t.program, execArgv(t, ['sh', '-s']), { input: PROBE_SCRIPT, timeoutMs: opts.timeoutMs ?? 60_000, signal: opts.signal });
  try {
    return parseProbeOutput(r.stdout);
  } catch {
    if (/executable file not found|no such file or directory|not found/i.test(r.stderr) && /\bsh\b/.test(r.stderr)) {
      throw new ContainerCliError(t.program, `${describeTarget(t)} has no POSIX shell (sh): Connect to Container needs sh and Node ${MIN_NODE_MAJOR}+ in the container`, r.stderr);
    }
    throw new ContainerCliError(t.program, `cannot run a command in ${describeTarget(t)} (exit ${r.code ?? r.signal})`, r.stderr);
  }
}

export class ContainerInstallError extends Error {
  constructor(
    readonly kind: 'no-node' | 'node-too-old' | 'no-home' | 'cannot-install',
    message: string,
  ) {
    super(noLinks(message));
    this.name = 'ContainerInstallError';
  }
}

/** The install plan for this container, or ContainerInstallError / InstallError saying why it cannot work. */
export function planContainerInstall(t: ContainerTarget, f: HostFacts, bundle: CliBundle): InstallPlan {
  const where = describeTarget(t);
  if (!f.node) {
    throw new ContainerInstallError('no-node', `${where} has no Node.js on its PATH (${f.path || 'empty'}): this project's CLI needs Node ${MIN_NODE_MAJOR} or newer in the container. Use an image with Node ${MIN_NODE_MAJOR}+, or put an exec-server (or codex) on the container's PATH`);
  }
  const v = parseNodeVersion(f.nodeVersion);
  if (!v) throw new ContainerInstallError('no-node', `${f.node} in ${where} does not run (node --version printed ${JSON.stringify(f.nodeVersion ?? '')})`);
  if (v[0] < MIN_NODE_MAJOR) throw new ContainerInstallError('node-too-old', `Node ${f.nodeVersion} in ${where} (${f.node}) is too old: the CLI needs Node ${MIN_NODE_MAJOR} or newer in the container`);
  if (!f.home.startsWith('/')) throw new ContainerInstallError('no-home', `${where} has no home folder ($HOME is ${JSON.stringify(f.home)}) to install the CLI into`);
  try {
    return planInstall(f, bundle);
  } catch (e) {
    if (e instanceof InstallError) throw new ContainerInstallError('cannot-install', e.message.replace(/the host/g, 'the container'));
    throw e;
  }
}

/**
 * Runs inside the container under its `node` (argv: staged folder, final folder, bin folder,
 * mode, npm). Builds node-pty when asked, checks that a PTY starts and the CLI answers, then
 * moves the folder into place and writes the launcher. "installed=<launcher>" on success,
 * "error: <kind>: …" and exit 3 on failure.
 */
export const FINISH_SCRIPT = String.raw`
const fs = require('fs'), path = require('path'), cp = require('child_process');
const [tmp, target, bin, mode, npm] = process.argv.slice(1);
const fail = (kind, m) => { process.stderr.write('error: ' + kind + ': ' + m + '\n'); fs.rmSync(tmp, { recursive: true, force: true }); process.exit(3); };
const env = Object.assign({}, process.env, { PATH: path.dirname(process.execPath) + path.delimiter + (process.env.PATH || '') });
if (mode === 'build') {
  process.stderr.write('step: building node-pty with ' + npm + '\n');
  const r = cp.spawnSync(npm, ['run', 'install', '--foreground-scripts'], { cwd: path.join(tmp, 'node_modules', 'node-pty'), env, stdio: ['ignore', 2, 2] });
  if (r.status !== 0) fail('build-failed', 'building node-pty failed (exit ' + (r.status ?? r.signal) + ')');
}
process.stderr.write('step: checking that a terminal starts\n');
const check = "const p=require(" + JSON.stringify(path.join(tmp, 'node_modules', 'node-pty')) + ").spawn('/bin/sh',['-c','exit 7'],{});p.onExit((e)=>process.exit(e.exitCode===7?0:9))";
const c = cp.spawnSync(process.execPath, ['-e', check], { env, encoding: 'utf8', timeout: 30000 });
if (c.status !== 0) fail('check-failed', 'the terminal module does not work in this container: ' + (c.stderr || '').trim().split('\n').slice(-3).join(' | '));
const v = cp.spawnSync(process.execPath, [path.join(tmp, 'cli.js'), '--version'], { env, encoding: 'utf8', timeout: 30000 });
if (v.status !== 0) fail('check-failed', 'the CLI does not start: ' + (v.stderr || '').trim());
const old = target + '.old-' + process.pid;
if (fs.existsSync(target)) fs.renameSync(target, old);
fs.renameSync(tmp, target);
fs.rmSync(old, { recursive: true, force: true });
fs.mkdirSync(bin, { recursive: true });
const q = (s) => "'" + s.replace(/'/g, "'\\''") + "'";
const launcher = path.join(bin, 'exec-server');
fs.writeFileSync(launcher + '.tmp', '#!/bin/sh\n# Written by the Exec Server extension (Connect to Container).\nexec ' + q(process.execPath) + ' ' + q(path.join(target, 'cli.js')) + ' "$@"\n', { mode: 0o755 });
fs.renameSync(launcher + '.tmp', launcher);
process.stdout.write('installed=' + launcher + '\n');
`;

/** Writes the payload files under a new local temp folder; returns it. */
export function stagePayload(bundle: CliBundle, plan: InstallPlan, parent = os.tmpdir()): string {
  const dir = mkdtempSync(path.join(parent, 'exec-server-ctr-'));
  const root = path.join(dir, 'cli');
  for (const f of buildPayload(bundle, plan)) {
    const to = path.join(root, ...f.path.split('/'));
    mkdirSync(path.dirname(to), { recursive: true });
    writeFileSync(to, f.data, { mode: f.mode });
  }
  return dir;
}

/**
 * Installs the CLI into `t` (HOME from the probe); resolves with the launcher's path in the
 * container. `onProgress`: what is being done.
 */
export async function installInContainer(
  t: ContainerTarget,
  facts: HostFacts,
  bundle: CliBundle,
  plan: InstallPlan,
  opts: { onProgress?(line: string): void; signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<string> {
  const where = describeTarget(t);
  const base = path.posix.join(facts.home, INSTALL_DIR);
  const target = path.posix.join(base, bundle.version);
  const tmp = `${target}.tmp-${process.pid}-${Date.now()}`;
  const stage = stagePayload(bundle, plan);
  const timeoutMs = opts.timeoutMs ?? (plan.mode === 'build' ? 600_000 : 120_000);
  try {
    opts.onProgress?.(`creating ${base} in the container`);
    // The folder as $1 of a fixed script: a name never becomes shell code.
    await runCliOk(t.program, execArgv(t, ['sh', '-c', 'mkdir -p -- "$1"', 'sh', tmp]), `creating ${tmp} in ${where}`, { timeoutMs, signal: opts.signal });
    opts.onProgress?.(`copying the CLI into ${where}`);
    await runCliOk(t.program, cpArgv(t, path.join(stage, 'cli'), tmp), `copying the CLI into ${where}`, { timeoutMs, signal: opts.signal });
    const r = await runCli(t.program, execArgv(t, [plan.node, '-e', FINISH_SCRIPT, tmp, target, path.posix.join(base, 'bin'), plan.mode, plan.mode === 'build' ? plan.npm : '-']), {
      timeoutMs,
      signal: opts.signal,
      onStderr: (l) => opts.onProgress?.(l.replace(/^step: /, '')),
    });
    const err = /^error: ([a-z-]+): (.*)$/m.exec(r.stderr);
    if (r.code !== 0 || err) throw new ContainerInstallError('cannot-install', `installing in ${where} failed: ${err?.[2] ?? `exit ${r.code ?? r.signal}`}`);
    const m = /^installed=(.+)$/m.exec(r.stdout);
    if (!m) throw new ContainerInstallError('cannot-install', `installing in ${where} reported no launcher`);
    return m[1];
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

export { findBundle };
