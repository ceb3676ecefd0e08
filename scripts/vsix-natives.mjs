// The native part of node-pty for each VSIX target: where its files come from, how a Linux one
// is cross-compiled here, and a check that a file really is a binary of its target (ELF or
// Mach-O header) before it goes into a package.
//   linux-x64, linux-arm64: node-pty's build/Release when it is this machine's, else compiled
//     here with Debian's cross g++ (x86_64-linux-gnu-g++ / aarch64-linux-gnu-g++) against the
//     installed Node's own headers (<prefix>/include/node): nothing is downloaded. pty.node is a
//     Node-API module, so one build serves every Node and Electron version.
//   darwin-x64, darwin-arm64: node-pty 1.1's own prebuilds (pty.node + spawn-helper), shipped in
//     its npm package.
// A cross build is cached in .cache/node-pty/<target>-<key>/ (key: node-pty version, its
// sources, the compiler's version), so only the first packaging run compiles.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanEnv } from './tools/run-logged.mjs';
import { which } from './tools/tools.mjs';
import { C_HEAP_SOURCE, compileCHeapModule, compileHelper, HELPER_SOURCE } from '../native/build.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const pty = path.join(root, 'node_modules', 'node-pty');

/** The VSIX targets (vsce --target names); universal carries all four. */
export const TARGETS = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64'];

/** What a target's binaries must be: ELF or Mach-O, and the machine. */
export const BINARY_KIND = {
  'linux-x64': 'ELF x86-64',
  'linux-arm64': 'ELF aarch64',
  'darwin-x64': 'Mach-O x86-64',
  'darwin-arm64': 'Mach-O arm64',
};

/** 'ELF x86-64', 'Mach-O arm64', …, or undefined for anything else (a fat Mach-O included). */
export function binaryKind(buf) {
  if (buf.length >= 20 && buf.readUInt32BE(0) === 0x7f454c46 && buf[4] === 2 && buf[5] === 1) {
    return { 0x3e: 'ELF x86-64', 0xb7: 'ELF aarch64' }[buf.readUInt16LE(18)];
  }
  if (buf.length >= 8 && buf.readUInt32LE(0) === 0xfeedfacf) {
    return { 0x01000007: 'Mach-O x86-64', 0x0100000c: 'Mach-O arm64' }[buf.readUInt32LE(4)];
  }
  return undefined;
}

const CROSS = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' };

function fail(msg) {
  throw new Error(`package-vsix: ${msg}`);
}

/** The files of a target's native part: { name → absolute path } (pty.node, + spawn-helper on macOS). */
export function nativeFiles(target, log = (m) => console.error(m)) {
  if (!TARGETS.includes(target)) fail(`unknown target ${target}`);
  const [platform, arch] = target.split('-');
  let dir;
  if (platform === 'darwin') dir = path.join(pty, 'prebuilds', target);
  else if (platform === process.platform && arch === process.arch) dir = path.join(pty, 'build', 'Release');
  else dir = crossCompile(arch, log);
  const files = {};
  for (const n of ['pty.node', 'spawn-helper']) if (existsSync(path.join(dir, n))) files[n] = path.join(dir, n);
  if (!files['pty.node']) fail(`no pty.node for ${target} in ${dir}`);
  if (platform === 'darwin' && !files['spawn-helper']) fail(`no spawn-helper for ${target} in ${dir} (node-pty starts every macOS PTY through it)`);
  for (const [n, f] of Object.entries(files)) {
    const kind = binaryKind(readFileSync(f));
    if (kind !== BINARY_KIND[target]) fail(`${f} is ${kind ?? 'not an ELF/Mach-O binary'}, not ${BINARY_KIND[target]}: refusing to package it as ${target}'s ${n}`);
  }
  return files;
}

function nodeGyp() {
  const bundled = path.join(path.dirname(path.dirname(process.execPath)), 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  if (existsSync(bundled)) return [process.execPath, bundled];
  const onPath = which('node-gyp');
  if (onPath) return [onPath];
  fail(`node-gyp not found (looked for npm's own at ${bundled} and on PATH)`);
}

function sourcesHash() {
  const h = createHash('sha256');
  const add = (f) => h.update(path.relative(root, f)).update(readFileSync(f));
  add(path.join(pty, 'package.json'));
  add(path.join(pty, 'binding.gyp'));
  const walk = (d) => { for (const n of readdirSync(d).sort()) { const p = path.join(d, n); statSync(p).isDirectory() ? walk(p) : add(p); } };
  walk(path.join(pty, 'src', 'unix'));
  add(path.join(root, 'node_modules', 'node-addon-api', 'package.json'));
  return h;
}

/** Compiles node-pty's pty.node for linux-<arch> with Debian's cross toolchain; returns the folder holding it. */
function crossCompile(arch, log) {
  const triple = CROSS[arch];
  if (!triple) fail(`no cross toolchain known for linux-${arch}`);
  const cxx = which(`${triple}-g++`);
  const cc = which(`${triple}-gcc`);
  if (!cxx || !cc) fail(`building node-pty for linux-${arch} needs ${triple}-g++ (Debian package g++-${triple}): run node scripts/tools/install.mjs g++-${triple}`);
  const prefix = path.dirname(path.dirname(process.execPath));
  if (!existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) fail(`the Node headers are missing in ${prefix}/include/node (needed to compile node-pty for linux-${arch})`);
  const version = spawnSync(cxx, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0];
  const key = sourcesHash().update(version).digest('hex').slice(0, 16);
  const cached = path.join(root, '.cache', 'node-pty', `linux-${arch}-${key}`);
  if (existsSync(path.join(cached, 'pty.node'))) return cached;

  const started = Date.now();
  log(`package-vsix: compiling node-pty for linux-${arch} with ${path.basename(cxx)} (once; cached in ${path.relative(root, cached)})`);
  const work = mkdtempSync(path.join(os.tmpdir(), `exec-server-pty-${arch}-`));
  try {
    const dst = path.join(work, 'node_modules', 'node-pty');
    mkdirSync(dst, { recursive: true });
    for (const rel of ['package.json', 'binding.gyp', 'src/unix']) cpSync(path.join(pty, rel), path.join(dst, rel), { recursive: true });
    // binding.gyp asks `node -p "require('node-addon-api')…"` from node-pty's folder.
    cpSync(path.join(root, 'node_modules', 'node-addon-api'), path.join(work, 'node_modules', 'node-addon-api'), { recursive: true });
    const [cmd, ...pre] = nodeGyp();
    const env = cleanEnv({ CC: cc, CXX: cxx, LINK: cxx, AR: which(`${triple}-ar`) || 'ar', PATH: `${path.dirname(process.execPath)}:${cleanEnv().PATH}` });
    const r = spawnSync(cmd, [...pre, 'rebuild', `--arch=${arch}`, `--nodedir=${prefix}`, '--release', '-j', '2'], { cwd: dst, env, encoding: 'utf8', timeout: 600_000 });
    if (r.status !== 0) fail(`node-gyp for linux-${arch} failed (exit ${r.status ?? r.error?.message ?? r.signal}):\n${`${r.stdout}${r.stderr}`.trim().split('\n').slice(-25).join('\n')}`);
    const built = path.join(dst, 'build', 'Release', 'pty.node');
    const kind = existsSync(built) ? binaryKind(readFileSync(built)) : undefined;
    if (kind !== BINARY_KIND[`linux-${arch}`]) fail(`the linux-${arch} build produced ${kind ?? 'no pty.node'}, not ${BINARY_KIND[`linux-${arch}`]}`);
    const tmp = `${cached}.tmp-${process.pid}`;
    mkdirSync(tmp, { recursive: true });
    cpSync(built, path.join(tmp, 'pty.node'));
    writeFileSync(path.join(tmp, 'built.json'), JSON.stringify({ compiler: version, nodeHeaders: prefix, at: new Date().toISOString() }, null, 2) + '\n');
    try {
      renameSync(tmp, cached);
    } catch (err) {
      // Another packaging run finished the same build first: use its copy.
      rmSync(tmp, { recursive: true, force: true });
      if (!existsSync(path.join(cached, 'pty.node'))) throw err;
    }
    log(`package-vsix: node-pty for linux-${arch} built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    return cached;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The native files of the server's own (native/), each compiled for a Linux target's arch. */
const SERVER_NATIVES = {
  // The transparent-TCP helper (networkProxyTransparentTcp): a Linux VSIX without it would leave
  // the capability off without saying so.
  transparentTcp: { name: (arch) => `transparent-tcp-linux-${arch}`, source: HELPER_SOURCE, compile: compileHelper },
  // The C heap's release (src/server/c-heap.ts), for the CLI that Connect to Host installs.
  cHeap: { name: (arch) => `malloc-release-linux-${arch}.node`, source: C_HEAP_SOURCE, compile: compileCHeapModule },
};

/**
 * A native file of the server's for linux-<arch> (the server looks for it in dist/native/ beside
 * its bundle): this machine's from `npm run build`, another arch's compiled here with Debian's
 * cross gcc (cached like node-pty's). Fails when it cannot be had.
 */
export function serverNativeFile(kind, arch, log = (m) => console.error(m)) {
  const { name: nameOf, source, compile } = SERVER_NATIVES[kind];
  const name = nameOf(arch);
  let file;
  if (process.platform === 'linux' && arch === process.arch) {
    file = path.join(root, 'dist', 'native', name);
    if (!existsSync(file)) fail(`${path.relative(root, file)} is missing: npm run build compiles it (it needs a C compiler)`);
  } else {
    const triple = CROSS[arch];
    const cc = triple && which(`${triple}-gcc`);
    if (!cc) fail(`building ${name} needs ${triple}-gcc (Debian package gcc-${triple}, part of g++-${triple})`);
    const version = spawnSync(cc, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0];
    const key = createHash('sha256').update(readFileSync(source)).update(version).digest('hex').slice(0, 16);
    const dir = path.join(root, '.cache', 'server-natives', `linux-${arch}-${key}`);
    file = path.join(dir, name);
    if (!existsSync(file)) {
      log(`package-vsix: compiling ${name} with ${path.basename(cc)}`);
      mkdirSync(dir, { recursive: true });
      const failed = compile(cc, file);
      if (failed) fail(`compiling ${name} failed: ${failed}`);
    }
  }
  const binKind = binaryKind(readFileSync(file));
  if (binKind !== BINARY_KIND[`linux-${arch}`]) fail(`${file} is ${binKind ?? 'not a binary'}, not ${BINARY_KIND[`linux-${arch}`]}`);
  return file;
}
