// The span writer's optimized code is not thrown away by what a busy server meets only now and
// then: the id pool's replacement (every 2 048 spans), a time whose nanoseconds carry into the
// next second, a batch larger than a fresh buffer. Each of those, met first by optimized code,
// had no type feedback there: V8 deoptimized the span constructor or the span writer (with
// everything inlined into it) and compiled it again, 10-30 ms of compiler time apiece on the
// benchmark machine, in every fresh server (docs/performance.md, "Telemetry cost").
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { test } from 'node:test';

const SPANS = path.join(__dirname, '../../src/telemetry/server-spans.js');

/** Request spans written into a batcher for `ms` of wall time (so times carry across second boundaries), in a child run with --trace-deopt. */
const CHILD = `
const { ServerSpan, SpanBatcher, KIND_SERVER } = require(${JSON.stringify(SPANS)});
const exporter = { export: (req, n, done) => done({ code: 0 }), shutdown: async () => {} };
const batcher = new SpanBatcher(exporter, { resource: { 'service.name': 'deopt-test' }, scope: { name: 'exec-server' } }, { maxQueue: 2048, maxBatch: 512, delayMs: 5000 });
(async () => {
  const until = Date.now() + Number(process.argv[1]);
  let n = 0;
  while (Date.now() < until || n < 30000) {
    for (let i = 0; i < 500; i++, n++) new ServerSpan(batcher, 'fs/getMetadata', KIND_SERVER, 'fs/getMetadata', n + 2, undefined).end();
    // The finished exports' turn (as a server's event loop gives it): their buffers come back.
    await new Promise(setImmediate);
  }
  console.log('spans', n, 'exported', batcher.exported, 'dropped', batcher.dropped);
})();
`;

test('a fresh process writing request spans for 1.5 s never deoptimizes the span code', () => {
  const r = spawnSync(process.execPath, ['--trace-deopt', '-e', CHILD, '1500'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /spans \d+ exported \d+/);
  assert.match(r.stdout, / dropped 0\b/, 'every span written');
  const deopts = r.stdout
    .split('\n')
    .filter((l) => l.includes('bailout (kind') && /ServerSpan|writeRequestSpan|writeSpan|timeMs|slot|ended|ensure/.test(l))
    .map((l) => {
      const m = /reason: ([^)]*)\).*?<JSFunction (\S+)/.exec(l);
      return m ? `${m[2]}: ${m[1]}` : l;
    });
  assert.deepEqual(deopts, [], 'deoptimizations of the span code');
});
