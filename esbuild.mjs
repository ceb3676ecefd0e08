// Builds the two bundles from one tree (vscode-js-debug style):
//   dist/cli.js       — the standalone `exec-server` CLI (plain Node, no `vscode` inside)
//   dist/extension.js — the VS Code extension (vscode and node-pty stay external)
// Usage: node esbuild.mjs [--watch] [--minify]
import * as esbuild from 'esbuild';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { C_HEAP_SOURCE, compileCHeapModule, compileHelper, HELPER_SOURCE, nodeIncludeDir } from './native/build.mjs';

const watch = process.argv.includes('--watch');
const minify = process.argv.includes('--minify');
const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));

/**
 * A bundle's text with every non-ASCII UTF-16 unit replaced by one ASCII character. esbuild
 * escapes non-ASCII characters in code and strings (its default `charset: 'ascii'`) but keeps
 * comments as written, and one such character makes V8 hold the whole source as a two-byte
 * string for the life of the process (docs/performance.md, memory). One unit for one keeps every
 * column of the source map.
 */
function asciiComments(text) {
  const lookalike = { '\u2192': '>', '\u2190': '<', '\u2014': '-', '\u2013': '-', '\u2026': '.', '\u2265': '>', '\u2264': '<', '\u00a7': 'S', '\u00b5': 'u', '\u00d7': 'x' };
  return text.replace(/[^\x00-\x7f]/g, (c) => lookalike[c] ?? '?');
}

/**
 * One ES-module view per Node builtin. esbuild turns each `import fs from 'node:fs'` (default or
 * namespace import) into `__toESM(require("node:fs"))`, which copies every property of the
 * module onto a new object as a getter: ~100 such imports at start copied fs's, path's, os's,
 * net's properties over and over, enough to make V8 optimize `__copyProps` with TurboFan, whose
 * first use faults ~3.6 MiB of the `node` binary's code into the idle server's RSS
 * (docs/performance.md, memory). The view of a builtin is the same for every importer, so it is
 * made once. The helper's name has `__toESM`'s length and it is defined on the line of the
 * bundle's "use strict" (which stays its first statement), so no source-map position moves.
 */
const BUILTIN_ESM_HELPER = 'var __esmNB = ((views) => (mod) => views.get(mod) ?? (views.set(mod, __toESM(mod)), views.get(mod)))(new Map());';
const BUILTIN_ESM_CALL = /__toESM\(require\("node:([a-z0-9_/]+)"\)\)/g;
function builtinViewsOnce(text) {
  const out = text.replace(BUILTIN_ESM_CALL, (_, name) => `__esmNB(require("node:${name}"))`);
  return out === text ? text : defineAtStart(out, BUILTIN_ESM_HELPER, '__esmNB');
}

/** `bundle` with `helper` (a one-line definition of `name`) on the line of its "use strict", which stays its first statement. */
function defineAtStart(bundle, helper, name) {
  const strict = /^(#!.*\n)?"use strict";/.exec(bundle);
  if (!strict) throw new Error(`esbuild: a bundle without "use strict" at its start: nowhere to define ${name}`);
  return bundle.slice(0, strict[0].length) + helper + bundle.slice(strict[0].length);
}

/**
 * The builtins the CLI needs only for some requests or settings (TLS listeners and the proxy's
 * interception, http/request, compressed retained output, name resolution, transparent TCP, the
 * idle collector) and ws's client side and compression, which the server never uses: loaded on
 * first use. tls, https and zlib then stay out of a server that needs none of them (idle CLI
 * −0.3 MiB, docs/performance.md, memory); dns, dgram, v8 and vm still load at start (Node's own
 * listen and child_process, the idle collector's start), and are listed so that the bundle adds
 * no load of its own. A lazy module is a Proxy that loads the module at its first property
 * read; the build fails if the bundle uses one other than by reading a property.
 */
const LAZY_BUILTINS = ['tls', 'https', 'zlib', 'dns', 'dgram', 'vm', 'v8'];
const LAZY_BUILTIN_HELPER = 'var __lazyNB = (load) => { let m; return new Proxy({}, { get: (_, k) => (m ??= load())[k], has: (_, k) => k in (m ??= load()) }); };';
function lazyBuiltins(text) {
  const names = LAZY_BUILTINS.join('|');
  const lazied = [];
  const out = text
    .replace(new RegExp(`^var (\\w+) = __esmNB\\(require\\("node:(${names})"\\)\\);$`, 'gm'), (_, v, m) => (lazied.push(v), `var ${v} = __lazyNB(() => __esmNB(require("node:${m}")));`))
    .replace(new RegExp(`^( *)var (\\w+) = require\\("(?:node:)?(${names})"\\);$`, 'gm'), (_, ind, v, m) => (lazied.push(v), `${ind}var ${v} = __lazyNB(() => require("${m}"));`));
  if (lazied.length === 0) return text;
  for (const v of lazied) {
    const uses = out.match(new RegExp(`(?<![\\w$.])${v.replace(/\$/g, '\\$')}(?![\\w$])(?!\\.)`, 'g')) ?? [];
    // The declaration is the one use that is not a property read.
    if (uses.length !== 1) throw new Error(`esbuild: ${v} (a lazily loaded builtin) is used other than by reading a property: load it eagerly or read its properties`);
  }
  return defineAtStart(out, LAZY_BUILTIN_HELPER, '__lazyNB');
}

/**
 * Writes a build's output (the one build and every rebuild of --watch alike): each file next to
 * its target, then renamed over it, so a test (or the CLI) that starts `node dist/cli.js` while
 * another process rebuilds never reads a half-written bundle (esbuild's own write truncates the
 * file first; concurrent readers saw 0 and 256 KiB); bundles through asciiComments and
 * builtinViewsOnce, then `finish` (the CLI's: lazyBuiltins).
 */
const writeOutput = (finish = (js) => js) => ({
  name: 'write-output',
  setup(build) {
    build.onEnd((result) => {
      for (const f of result.outputFiles ?? []) {
        mkdirSync(path.dirname(f.path), { recursive: true });
        const tmp = `${f.path}.${process.pid}.tmp`;
        writeFileSync(tmp, f.path.endsWith('.js') ? finish(builtinViewsOnce(asciiComments(f.text))) : f.contents);
        renameSync(tmp, f.path);
      }
    });
  },
});

/**
 * The libraries only some requests need, each a bundle of its own in dist/lib/, required on first
 * use (yaml: skills' front matter; node-forge: a credential-masking proxy's certificates; jose:
 * signed-bearer-token auth). In the main bundles their ~960 KB of source was held and pre-parsed
 * by every server that never used them: 1.8 MiB of the idle CLI's RSS (docs/performance.md).
 */
const LAZY_LIBS = ['yaml', 'node-forge', 'jose'];
const lazyLibs = {
  name: 'lazy-libs',
  setup(build) {
    // A relative path: Node resolves it against the requiring bundle, dist/cli.js or dist/extension.js.
    build.onResolve({ filter: new RegExp(`^(${LAZY_LIBS.join('|')})$`) }, (args) => ({ path: `./lib/${args.path}.js`, external: true }));
  },
};
const resolveFromHere = createRequire(import.meta.url).resolve;

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: 'linked',
  minify,
  logLevel: 'warning',
  // node-pty is a native module: it is loaded from node_modules at run time.
  // ws's optional native helpers are not used: utf-8-validate stays out (Node's isUtf8 does it),
  // bufferutil is our word-at-a-time masking (src/transports/ws-mask.ts).
  external: ['node-pty', 'utf-8-validate'],
  alias: { bufferutil: './src/transports/ws-mask.ts' },
  define: { __EXEC_SERVER_VERSION__: JSON.stringify(pkg.version) },
  write: false,
  plugins: [writeOutput()],
};

const builds = [
  { ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' }, plugins: [writeOutput(lazyBuiltins), lazyLibs] },
  { ...common, entryPoints: ['src/extension/ui/extension.ts'], outfile: 'dist/extension.js', external: [...common.external, 'vscode'], plugins: [...common.plugins, lazyLibs] },
  // Each lazily required library (above), as Node's require would resolve it.
  ...LAZY_LIBS.map((lib) => ({ ...common, entryPoints: [resolveFromHere(lib)], outfile: `dist/lib/${lib}.js` })),
  // The OpenTelemetry SDK, required at run time only when telemetry is on (src/telemetry/load.ts).
  { ...common, entryPoints: ['src/telemetry/otel.ts'], outfile: 'dist/telemetry.js' },
].filter((b) => existsSync(b.entryPoints[0]));

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  // Guard the design rule: the server/CLI bundle must never pull in `vscode`.
  if (existsSync('dist/cli.js') && /require\(["']vscode["']\)/.test(readFileSync('dist/cli.js', 'utf8'))) {
    console.error('esbuild: dist/cli.js requires "vscode" — only the ui/ folders of src/extension may import it');
    process.exit(1);
  }
}

/**
 * Compiles a native file of the server's (native/) into dist/native/`name` with the host's C
 * compiler, unless it is newer than its source. Where it cannot be built (no compiler, or what
 * `missing` names) the build goes on with a warning saying what the server then lacks; a
 * compiler error fails the build.
 */
let cCompiler;
function buildNative(name, source, compile, { what, without, missing }) {
  const out = `dist/native/${name}`;
  if (existsSync(out) && statSync(out).mtimeMs >= statSync(source).mtimeMs) return;
  cCompiler ??= ['cc', 'gcc', 'clang'].find((c) => spawnSync(c, ['--version'], { stdio: 'ignore' }).status === 0) ?? null;
  const lack = cCompiler ? missing?.() : 'no C compiler (cc, gcc, clang)';
  if (lack) return console.warn(`esbuild: ${lack}: ${out} not built; ${without}`);
  mkdirSync('dist/native', { recursive: true });
  const failed = compile(cCompiler, out);
  if (failed) {
    console.error(`esbuild: compiling ${what} failed: ${failed}`);
    process.exit(1);
  }
}

if (!watch && process.platform === 'linux') {
  // The transparent-TCP helper (native/transparent-tcp.c; networkProxyTransparentTcp), where the
  // server looks for it (src/server/network/transparent.ts).
  buildNative(`transparent-tcp-linux-${process.arch}`, HELPER_SOURCE, (cc, out) => compileHelper(cc, out, { allowDynamic: true }), {
    what: 'the transparent-TCP helper',
    without: 'transparent TCP will not be offered',
  });
  // The C heap's release (native/malloc-release.c), an N-API module the CLI loads
  // (src/server/c-heap.ts); it needs Node's headers.
  const napiHeader = path.join(nodeIncludeDir(), 'node_api.h');
  buildNative(`malloc-release-linux-${process.arch}.node`, C_HEAP_SOURCE, compileCHeapModule, {
    what: 'the C heap module',
    without: "the CLI keeps glibc's heap defaults",
    missing: () => (existsSync(napiHeader) ? undefined : `no ${napiHeader}`),
  });
}
