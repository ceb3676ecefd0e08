// Summarizes a V8 .cpuprofile (from `node --cpu-prof`): top functions by self time and by
// inclusive time. Usage: node bench/cpuprofile-top.mjs FILE.cpuprofile [N]
// Profile the server under the benchmark with:
//   node bench/run.mjs --no-reference --only=stream --ours-node-flags="--cpu-prof --cpu-prof-dir=/tmp/prof"
import { readFileSync } from 'node:fs';

const [file, nArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/cpuprofile-top.mjs FILE.cpuprofile [N]');
  process.exit(2);
}
const n = Number(nArg ?? 25);
const prof = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((x) => [x.id, x]));
const dt = new Map();
// timeDeltas[i] is the time before samples[i]; attribute it to that sample's node.
prof.samples.forEach((id, i) => dt.set(id, (dt.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
const total = [...dt.values()].reduce((a, b) => a + b, 0);
const parent = new Map();
for (const x of prof.nodes) for (const c of x.children ?? []) parent.set(c, x.id);

const name = (x) => {
  const f = x.callFrame;
  const where = f.url ? `${f.url.replace(/^.*\//, '')}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'} ${where}`.trim();
};
const self = new Map();
const incl = new Map();
for (const [id, t] of dt) {
  const k = name(byId.get(id));
  self.set(k, (self.get(k) ?? 0) + t);
  // inclusive: count each distinct function once per sample stack
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const kk = name(byId.get(cur));
    if (seen.has(kk)) continue;
    seen.add(kk);
    incl.set(kk, (incl.get(kk) ?? 0) + t);
  }
}
const show = (title, m) => {
  console.log(`\n${title} (total ${(total / 1000).toFixed(0)} ms sampled)`);
  for (const [k, t] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) {
    console.log(`${((100 * t) / total).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(1).padStart(8)} ms  ${k}`);
  }
};
show('self time', self);
show('inclusive time', incl);
