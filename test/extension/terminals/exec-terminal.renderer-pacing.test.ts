// An Exec Server terminal paced to its renderer (TERMINAL_PACING), against a real child over our
// websocket server, with a stand-in for xterm.js that answers each probe (DSR 5) some time after
// the write that carried it: the text not yet confirmed stays under the watermark, the child is
// throttled to the renderer's pace, every numbered line arrives once and in order, the answers
// never reach the child's stdin, and a late answer after the exit does not close a terminal that
// waits for a key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { connectWebSocket } from '../../../src/client/connect';
import { ExecTerminal } from '../../../src/extension/terminals/exec-terminal';
import { RENDERER_PROBE, RENDERER_REPLY, TERMINAL_PACING } from '../../../src/extension/terminals/output-coalescer';
import { LineChecker, ourWsServer, progress, tmpDir } from '../../support/flow';
import { waitFor } from '../../support/wait';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

/** Lines 1..total ("%09d\n", progress every 100 lines), then one line of stdin copied to `stdinFile`. */
function linesThenStdin(total: number, progressFile: string, stdinFile: string): string[] {
  const py = [
    'import os, sys',
    'out = sys.stdout.buffer',
    `for i in range(1, ${total} + 1):`,
    "    out.write(b'%09d\\n' % i)",
    '    if i % 100 == 0:',
    '        out.flush()',
    `        with open(${JSON.stringify(progressFile + '.tmp')}, 'w') as f: f.write(str(i))`,
    `        os.replace(${JSON.stringify(progressFile + '.tmp')}, ${JSON.stringify(progressFile)})`,
    'out.flush()',
    'line = sys.stdin.buffer.readline()',
    `open(${JSON.stringify(stdinFile)}, 'wb').write(line)`,
  ].join('\n');
  return ['python3', '-c', py];
}

test('renderer pacing: a terminal is handed no more than its renderer confirmed, throttles the child, and keeps the answers out of stdin', async () => {
  const dir = tmpDir();
  const s = await ourWsServer();
  const client = await connectWebSocket(s.url, { clientName: 'renderer-pacing', reconnect: false });
  try {
    const total = 60_000; // 600 kB
    const progressFile = path.join(dir, 'progress');
    const stdinFile = path.join(dir, 'stdin');
    const term = new ExecTerminal({
      mode: 'pipe',
      coalescer: TERMINAL_PACING,
      start: (_dims, flow) => client.startProcess({ argv: linesThenStdin(total, progressFile, stdinFile), cwd: dir, env: ENV, tty: false, pipeStdin: true, ...flow }),
    });
    // The stand-in renderer: parses each write 15 ms after it arrives (~1 MB/s for 16 Ki writes), answering its probe then.
    const lines = new LineChecker();
    let written = 0;
    let confirmed = 0;
    let maxUnconfirmed = 0;
    let maxAhead = 0;
    let closed = false;
    const pending = new Set<ReturnType<typeof setTimeout>>();
    term.onDidClose(() => (closed = true));
    term.onDidWrite((t) => {
      const probes = t.split(RENDERER_PROBE).length - 1;
      const text = t.split(RENDERER_PROBE).join('');
      lines.push(Buffer.from(text.replace(/^abc\r\n$/, ''), 'latin1')); // the echo of the typed line is not output
      if (!probes) return;
      written += text.length;
      maxUnconfirmed = Math.max(maxUnconfirmed, written - confirmed);
      if (progress(progressFile) < total) maxAhead = Math.max(maxAhead, progress(progressFile) - lines.lines);
      const h = setTimeout(() => {
        pending.delete(h);
        confirmed += text.length;
        term.handleInput(RENDERER_REPLY.repeat(probes));
      }, 15);
      pending.add(h);
    });
    term.open({ rows: 24, columns: 80 });
    await waitFor(() => lines.lines >= total || lines.error, { timeout: 60_000, interval: 20, what: 'every line', detail: () => `${lines.lines} of ${total} lines` });
    assert.equal(lines.error, undefined);
    assert.equal(lines.lines, total, 'every line arrived');
    term.handleInput('abc\r'); // typed between the renderer's answers
    const r = await term.result;
    assert.equal(r.exitCode, 0);
    assert.equal(fs.readFileSync(stdinFile, 'latin1'), 'abc\n', 'stdin got the typed line and none of the answers');
    const high = 100_000 + 16 * 1024 * 2; // the watermark, plus the write that crossed it (CRLF may double it)
    assert.ok(maxUnconfirmed <= high, `up to ${maxUnconfirmed} characters were not yet confirmed`);
    // Throttled: the child stays within the window, the pipe and what waits here of the terminal.
    assert.ok(maxAhead * 10 <= 100_000 + 64 * 1024 + 2 * (100_000 + 64 * 1024) + high, `the child ran ${maxAhead} lines ahead`);
    // The exit message came with a probe; its answer arrives after the exit and must not close the terminal.
    await waitFor(() => pending.size === 0, { what: 'the renderer\'s last answers' });
    assert.equal(closed, false, 'a late answer is not a key press');
    term.handleInput('x');
    assert.equal(closed, true, 'a key closes it');
  } finally {
    await client.close();
    await s.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
