// Against the reference server (no flowControl / binaryOutput extensions): the client's opt-ins
// are ignored by it, nothing is enabled, a process asked to run with a window and manual acks
// runs without one (every byte arrives though nothing is acknowledged), and output is JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { connectWebSocket } from '../../src/client/connect';
import { referenceServer, startWsServer } from '../support/reference';
import { LineChecker, numberedLines, tmpDir } from '../support/flow';

test('reference fallback: flow control and binary output are not enabled; a windowed, never-acknowledged process still streams every line', async () => {
  const dir = tmpDir();
  const ref = await startWsServer(referenceServer);
  const client = await connectWebSocket(ref.url, { clientName: 'fallback', reconnect: false });
  try {
    assert.equal(client.flowControlEnabled, false);
    assert.equal(client.binaryOutputEnabled, false);
    assert.equal(client.supports('process/ack'), false);
    const total = 200_000;
    const h = await client.startProcess({
      argv: numberedLines(total, path.join(dir, 'progress')),
      cwd: dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      outputWindow: 64 * 1024,
      manualAck: true,
    });
    assert.equal(h.outputWindow, 0, 'no window against a server without flow control');
    const lines = new LineChecker();
    h.onOutput((e) => lines.push(e.data));
    assert.equal(await h.exited, 0);
    await h.closed;
    assert.equal(lines.error, undefined);
    assert.equal(lines.lines, total);
  } finally {
    await client.close();
    await ref.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
