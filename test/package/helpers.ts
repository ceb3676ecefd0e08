// Shared by the package tests: the VSIX targets, a binary's kind read from its header, the
// installed tools' paths, and packing + unpacking VSIXs with scripts/package-vsix.mjs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../support/cli';

export const TARGETS = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64'] as const;
export type Target = (typeof TARGETS)[number];
export const KIND: Record<Target, string> = { 'linux-x64': 'ELF x86-64', 'linux-arm64': 'ELF aarch64', 'darwin-x64': 'Mach-O x86-64', 'darwin-arm64': 'Mach-O arm64' };
/** node-pty inside an unpacked VSIX. */
export const PTY = 'extension/node_modules/node-pty';

/**
 * What an executable or shared object is, from its first bytes: ELF (class 64, little endian,
 * e_machine at 18), thin Mach-O 64 (magic, cputype at 4), a fat Mach-O, a Windows PE; undefined
 * for anything that is not a binary.
 */
export function binaryKind(file: string): string | undefined {
  const buf = Buffer.alloc(64);
  const fd = openSync(file, 'r');
  const n = readSync(fd, buf, 0, 64, 0);
  closeSync(fd);
  if (n >= 20 && buf.subarray(0, 4).equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) {
    const machine = buf.readUInt16LE(18);
    const name = ({ 0x3e: 'x86-64', 0xb7: 'aarch64', 0x28: 'arm', 0x03: 'i386' } as Record<number, string>)[machine] ?? `machine 0x${machine.toString(16)}`;
    return `ELF${buf[4] === 1 ? '32' : ''} ${name}`;
  }
  if (n >= 8 && buf.readUInt32LE(0) === 0xfeedfacf) {
    const cpu = buf.readUInt32LE(4);
    return `Mach-O ${({ 0x01000007: 'x86-64', 0x0100000c: 'arm64' } as Record<number, string>)[cpu] ?? `cpu 0x${cpu.toString(16)}`}`;
  }
  if (n >= 4 && (buf.readUInt32BE(0) === 0xcafebabe || buf.readUInt32BE(0) === 0xcafebabf)) return 'Mach-O fat';
  if (n >= 4 && (buf.readUInt32LE(0) === 0xfeedface || buf.readUInt32BE(0) === 0xfeedface)) return 'Mach-O 32';
  if (n >= 2 && buf[0] === 0x4d && buf[1] === 0x5a) return 'PE';
  return undefined;
}

export function walk(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...walk(dir, r));
    else out.push(r);
  }
  return out.sort();
}

/** An installed tool's path (the install stage put it there; tests only look it up). */
export function tool(key: string, name: string): string {
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/tools/install.mjs'), '--find', '--print', key, name], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0 || !r.stdout.trim()) throw new Error(`${name} is not installed (node scripts/tools/install.mjs ${name}): ${r.stderr.trim()}`);
  return r.stdout.trim();
}

/**
 * Packs `targets` in one run of the packer (as `npm run package` does; the arm64 cross build is
 * cached in .cache/) and unpacks each: target (or 'universal') → its folder under `work`.
 */
export function packAndUnpack(work: string, targets: string[]): Record<string, string> {
  if (!existsSync(path.join(repoRoot, 'dist/extension.js')) || !existsSync(path.join(repoRoot, 'dist/cli.js'))) {
    const b = spawnSync(process.execPath, [path.join(repoRoot, 'esbuild.mjs')], { cwd: repoRoot, encoding: 'utf8' });
    assert.equal(b.status, 0, b.stderr);
  }
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/package-vsix.mjs'), '--target', targets.join(','), '--out-dir', path.join(work, 'out')], { cwd: repoRoot, encoding: 'utf8', timeout: 110_000 });
  const output = `${r.stdout}${r.stderr}`;
  assert.equal(r.status, 0, output);
  const unpacked: Record<string, string> = {};
  for (const t of targets) {
    const file = path.join(work, 'out', t === 'universal' ? 'exec-server.vsix' : `exec-server-${t}.vsix`);
    assert.ok(existsSync(file), `${file} written:\n${output}`);
    assert.ok(statSync(file).size < 2 * 1024 * 1024, `${t}: smaller than 2 MiB`);
    unpacked[t] = path.join(work, t);
    const u = spawnSync('unzip', ['-q', '-d', unpacked[t], file], { encoding: 'utf8' });
    assert.equal(u.status, 0, u.stderr);
  }
  return unpacked;
}
