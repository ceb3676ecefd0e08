// Activation cost of the bundled extension outside VS Code: a fresh Node process loads
// dist/extension.js against a stand-in `vscode` module (every member is a callable no-op
// that returns another stand-in) and calls activate(). Prints require + activate time.
// It measures our code's own cost (module evaluation and activate()), not VS Code's host.
// Usage: node bench/activation.mjs [runs]   (after npm run build)
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const child = `
const Module = require('module');
const stand = () => new Proxy(function () {}, {
  get: (t, k) => (k === 'then' ? undefined : k === Symbol.iterator ? [][Symbol.iterator] : k === Symbol.toPrimitive ? () => '' : stand()),
  apply: () => stand(),
  construct: () => stand(),
  set: () => true, // assignments (item.text = …) are accepted and forgotten
});
// esbuild's __toESM copies own members and inherits the rest: give the module a stand-in prototype.
const fake = Object.create(new Proxy({}, { get: (t, k) => (k === 'then' || k === '__esModule' ? undefined : stand()) }));
const resolve = Module._resolveFilename;
Module._resolveFilename = function (req, ...rest) { return req === 'vscode' ? 'vscode' : resolve.call(this, req, ...rest); };
require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: fake };
const ctx = { subscriptions: [], secrets: stand(), globalState: stand(), workspaceState: stand(), extensionPath: ${JSON.stringify(repo)}, extensionUri: stand(), globalStorageUri: stand(), logUri: stand(), environmentVariableCollection: stand(), extension: stand() };
const t0 = process.hrtime.bigint();
const ext = require(${JSON.stringify(path.join(repo, 'dist', 'extension.js'))});
const t1 = process.hrtime.bigint();
ext.activate(ctx);
const t2 = process.hrtime.bigint();
console.log(JSON.stringify({ requireMs: Number(t1 - t0) / 1e6, activateMs: Number(t2 - t1) / 1e6 }));
process.exit(0);
`;
const runs = Number(process.argv[2] ?? 7);
const samples = [];
for (let i = 0; i < runs; i++) samples.push(JSON.parse(execFileSync(process.execPath, ['-e', child], { encoding: 'utf8' }).trim()));
const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
const req = median(samples.map((s) => s.requireMs));
const act = median(samples.map((s) => s.activateMs));
const total = median(samples.map((s) => s.requireMs + s.activateMs));
console.log(`extension activation (${runs} fresh processes, median): require ${req.toFixed(1)} ms + activate() ${act.toFixed(1)} ms = ${total.toFixed(1)} ms`);
