#!/usr/bin/env node
// Sends the same JSON-RPC lines to the reference `codex exec-server --listen stdio` and to
// this project's engine (in-process, from out/ — run `node scripts/test.mjs --no-typecheck x`
// first to transpile), then prints the responses side by side (by id) and marks differences.
// Usage: node scripts/compare-reference.mjs < requests.jsonl   (initialize is sent for you)
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const require = createRequire(import.meta.url);
const lines = [];
for await (const l of readline.createInterface({ input: process.stdin })) if (l.trim()) lines.push(l);
const init = ['{"id":"init","method":"initialize","params":{"clientName":"compare"}}', '{"method":"initialized","params":{}}'];
const volatile = (r) => JSON.stringify(r).replace(/"sessionId":"[^"]+"/, '"sessionId":"*"');

async function runReference() {
  // Installs the reference into the cache if missing (REFERENCE=<bin>, CODEX_HOME=<its home>).
  const keys = Object.fromEntries(execFileSync(process.execPath, [path.join(root, 'scripts/tools/install.mjs'), 'reference'], { encoding: 'utf8' })
    .split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  mkdirSync(keys.CODEX_HOME, { recursive: true });
  const child = spawn(keys.REFERENCE, ['exec-server', '--listen', 'stdio'], {
    env: { ...process.env, CODEX_HOME: keys.CODEX_HOME },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const out = new Map();
  readline.createInterface({ input: child.stdout }).on('line', (l) => {
    const m = JSON.parse(l);
    if (m.id !== undefined) out.set(String(m.id), m.error ? { error: m.error } : { result: m.result });
  });
  for (const l of [...init, ...lines]) child.stdin.write(l + '\n');
  await new Promise((r) => setTimeout(r, Number(process.env.WAIT_MS ?? 1500)));
  child.kill();
  return out;
}

async function runOurs() {
  const { ExecServer } = require(path.join(root, 'out/src/server/exec-server.js'));
  const server = new ExecServer();
  const conn = server.connect({ notify() {} }, { label: 'compare' });
  const out = new Map();
  for (const l of [...init, ...lines]) {
    const m = JSON.parse(l);
    if (m.id === undefined) {
      conn.notification(m.method, m.params);
      continue;
    }
    try {
      out.set(String(m.id), { result: await conn.requestUntyped(m.method, m.params) });
    } catch (e) {
      out.set(String(m.id), { error: e.toJSON ? e.toJSON() : { code: 0, message: String(e) } });
    }
  }
  await server.shutdown();
  return out;
}

const [ref, ours] = await Promise.all([runReference(), runOurs()]);
for (const l of lines) {
  const m = JSON.parse(l);
  if (m.id === undefined) continue;
  const a = volatile(ref.get(String(m.id)));
  const b = volatile(ours.get(String(m.id)));
  console.log(`${a === b ? 'SAME' : 'DIFF'} ${m.method} #${m.id}\n  ref : ${a?.slice(0, 400)}\n  ours: ${b?.slice(0, 400)}`);
}
process.exit(0);
