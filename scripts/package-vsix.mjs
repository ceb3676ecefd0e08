// Builds the VSIXs from staging folders (fresh temp dirs): package.json's "files" list is for the
// npm package of the CLI, and vsce refuses a .vscodeignore next to it. A stage holds only what
// the extension loads (see .vscodeignore): the bundle, node-pty's JS and native module, the
// manifest, README and media, and what Connect to Host installs on a host. Run after `npm run build`.
//
//   node scripts/package-vsix.mjs [--target T[,T…]] [--out FILE | --out-dir DIR] [--base-url URL]
//     T: linux-x64, linux-arm64, darwin-x64, darwin-arm64 (`vsce package --target T`, each with
//        only its own pty.node), universal (all four, for sideloading), all (default: the five).
//     Writes DIR/exec-server-T.vsix, and DIR/exec-server.vsix for universal (DIR: dist); --out
//     names the file of a single target.
// Every VSIX keeps node-pty's native files in node_modules/node-pty/prebuilds/<platform>-<arch>/
// and has no build/Release: node-pty's loader (lib/utils.js loadNativeModule) tries
// build/Release, build/Debug, then prebuilds/<process.platform>-<process.arch>, so a VSIX loads
// only the binary of the machine it runs on and never tries a foreign one first.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nativeFiles, serverNativeFile, TARGETS } from './vsix-natives.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const argOf = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const usage = (msg) => {
  console.error(`package-vsix: ${msg}`);
  process.exit(2);
};
const targetArgs = process.argv.flatMap((a, i) => (process.argv[i - 1] === '--target' ? a.split(',') : []));
const targets = [...new Set((targetArgs.length ? targetArgs : ['all']).flatMap((t) => (t === 'all' ? [...TARGETS, 'universal'] : [t])))];
for (const t of targets) if (t !== 'universal' && !TARGETS.includes(t)) usage(`unknown target ${JSON.stringify(t)} (known: ${[...TARGETS, 'universal', 'all'].join(', ')})`);
if (argOf('--out') && targets.length !== 1) usage(`--out names one file; ${targets.length} targets asked (use --out-dir)`);
const outDir = path.resolve(argOf('--out-dir') ?? path.join(root, 'dist'));
const outFile = (t) => (argOf('--out') ? path.resolve(argOf('--out')) : path.join(outDir, t === 'universal' ? 'exec-server.vsix' : `exec-server-${t}.vsix`));

// A private stage and an atomic rename: two packaging runs at once must not trip each other.
const stage = mkdtempSync(path.join(os.tmpdir(), 'exec-server-vsix-'));
process.on('exit', () => rmSync(stage, { recursive: true, force: true }));
// node-pty's tests and source maps are not needed at run time (nor node-addon-api's docs).
const wanted = (src) => !/\.test\.js(\.map)?$|\.js\.map$|node-addon-api\/.*\.md$/.test(src);
const copy = (rel) => {
  const from = path.join(root, rel);
  if (!existsSync(from)) throw new Error(`package-vsix: ${rel} is missing (run npm run build first?)`);
  mkdirSync(path.dirname(path.join(stage, rel)), { recursive: true });
  cpSync(from, path.join(stage, rel), { recursive: true, filter: wanted });
};

const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
delete pkg.files;
delete pkg.bin;
delete pkg.devDependencies;
// ws and jose are bundled into dist/extension.js; node-pty is loaded at run time.
pkg.dependencies = { 'node-pty': pkg.dependencies['node-pty'] };
pkg.scripts = {};
writeFileSync(path.join(stage, 'package.json'), JSON.stringify(pkg, null, 2) + '\n');

for (const rel of ['.vscodeignore', 'dist/extension.js', 'dist/telemetry.js', 'media/icon.png', 'media/exec-server.svg']) copy(rel);
// The libraries dist/extension.js and dist/cli.js require on first use (esbuild.mjs, LAZY_LIBS).
for (const name of readdirSync(path.join(root, 'dist/lib'))) if (name.endsWith('.js')) copy(`dist/lib/${name}`);
// The Get Started walkthrough's step pages (package.json contributes.walkthroughs).
for (const name of readdirSync(path.join(root, 'media/walkthrough'))) if (name.endsWith('.md')) copy(`media/walkthrough/${name}`);
// The README is the VSIX's Details page. VS Code's extension editor (and the Marketplace) shows
// an image only from an https URL: its sanitizer keeps http(s) image sources only and its page
// allows `img-src https: data:` (code-server 4.139's workbench: images left relative, even shipped
// in the VSIX, showed none; with an https base all did — test/e2e/details-page.mjs). So the README's relative images and links need a public base URL, which vsce
// prepends itself: its own guess for a GitHub/GitLab `repository` in package.json, else
// --baseImagesUrl/--baseContentUrl, given here as `--base-url URL` or EXEC_SERVER_VSIX_BASE_URL
// (e.g. https://raw.githubusercontent.com/<owner>/<repo>/<tag>/). With neither, the images are
// named in text (vsce would refuse them) and the script says so.
const baseUrl = argOf('--base-url') ?? (process.env.EXEC_SERVER_VSIX_BASE_URL || undefined);
if (baseUrl !== undefined && !/^https:\/\/[^/]+\/.*\/$/.test(baseUrl)) {
  console.error(`package-vsix: the base URL must be an https URL ending in "/" (got ${JSON.stringify(baseUrl)})`);
  process.exit(2);
}
const repository = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url ?? '';
const vsceGuessesBase = /github(\.com\/|:)[^/]+\/[^/]+|gitlab(\.com\/|:)[^/]+\/[^/]+/.test(repository);
const vsceLinkArgs = baseUrl ? ['--baseContentUrl', baseUrl, '--baseImagesUrl', baseUrl] : [];
let readme = readFileSync(path.join(root, 'README.md'), 'utf8');
if (!baseUrl && !vsceGuessesBase) {
  console.error('package-vsix: no public base URL (EXEC_SERVER_VSIX_BASE_URL, --base-url, or a GitHub/GitLab repository in package.json): the Details page names the README\'s images in text');
  readme = readme
    .replace(/!\[([^\]]*)\]\((?!https:)[^)]*\)/g, (_m, alt) => `*[image: ${alt || 'figure'} — see the repository]*`)
    .replace(/<img\b[^>]*>/gi, '*[image — see the repository]*')
    // Relative links (docs/…, src/…) have no target inside a VSIX either: keep their text.
    .replace(/(?<!!)\[([^\]]+)\]\((?!https?:|#)[^)]*\)/g, (_m, text) => text);
}
writeFileSync(path.join(stage, 'README.md'), readme);
if (existsSync(path.join(root, 'LICENSE'))) copy('LICENSE');
const pty = 'node_modules/node-pty';
for (const rel of ['lib', 'LICENSE']) copy(`${pty}/${rel}`);
// Connect to Host installs the CLI on hosts without an executor (src/extension/ssh/install.ts):
// the CLI bundle, the prebuilt native files this VSIX carries, and what a node-gyp build of
// node-pty needs on a host none of them matches.
copy('dist/cli.js');
for (const rel of ['binding.gyp', 'src/unix']) copy(`${pty}/${rel}`);
copy('node_modules/node-addon-api');
// node-pty's own dependency (node-addon-api) is only needed to compile it.
const ptyPkg = JSON.parse(readFileSync(path.join(root, pty, 'package.json'), 'utf8'));
delete ptyPkg.dependencies;
writeFileSync(path.join(stage, pty, 'package.json'), JSON.stringify(ptyPkg, null, 2) + '\n');

// Every native part first (a failed cross build packages nothing), then one VSIX per target.
const natives = Object.fromEntries(TARGETS.filter((t) => targets.includes(t) || targets.includes('universal')).map((t) => [t, nativeFiles(t)]));
const linuxTargets = Object.keys(natives).filter((t) => t.startsWith('linux-'));
const helpers = Object.fromEntries(linuxTargets.map((t) => [t, serverNativeFile('transparentTcp', t.slice('linux-'.length))]));
const cHeaps = Object.fromEntries(linuxTargets.map((t) => [t, serverNativeFile('cHeap', t.slice('linux-'.length))]));
const vsce = path.join(root, 'node_modules', '@vscode', 'vsce', 'vsce');
for (const target of targets) {
  const carried = target === 'universal' ? TARGETS : [target];
  const dir = path.join(stage, pty, 'prebuilds');
  rmSync(dir, { recursive: true, force: true });
  for (const t of carried) {
    mkdirSync(path.join(dir, t), { recursive: true });
    for (const [n, from] of Object.entries(natives[t])) cpSync(from, path.join(dir, t, n));
  }
  // The transparent-TCP helper and the C heap module of each Linux target (the server finds them in dist/native/).
  const nativeDir = path.join(stage, 'dist', 'native');
  rmSync(nativeDir, { recursive: true, force: true });
  for (const t of carried.filter((c) => helpers[c])) {
    mkdirSync(nativeDir, { recursive: true });
    cpSync(helpers[t], path.join(nativeDir, `transparent-tcp-${t}`));
    cpSync(cHeaps[t], path.join(nativeDir, `malloc-release-${t}.node`));
  }
  const out = outFile(target);
  const tmpOut = `${out}.${process.pid}.tmp`;
  mkdirSync(path.dirname(out), { recursive: true });
  const targetArg = target === 'universal' ? [] : ['--target', target];
  const r = spawnSync(process.execPath, [vsce, 'package', ...targetArg, '--allow-missing-repository', '--skip-license', ...vsceLinkArgs, '-o', tmpOut], { cwd: stage, stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0) {
    rmSync(tmpOut, { force: true });
    console.error(`package-vsix: vsce package for ${target} failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status || 1);
  }
  renameSync(tmpOut, out);
  console.log(`package-vsix: ${out} (${target}: ${carried.join(', ')})`);
}
