// The bare-websocket ceiling for the stream scenario (`npm run bench`, column "bare ws"): a Node
// `ws` server with no protocol at all. A text message {argv, cwd} spawns the command the same way
// our server does (child_process pipes); every stdout read goes out as one binary message (a
// 14-byte header like our output frame's, then the bytes, written to the socket behind the
// websocket header without a copy, as ours does: src/transports/ws-direct-frame.ts), and a text
// message {exitCode} follows once the child closed. What this moves on the machine is the
// ceiling of "Node reads a pipe and writes it to a websocket", measured in the same alternating run.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'package.json'));
const { WebSocketServer } = require('ws');
const HEADER = 14;

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
wss.on('listening', () => console.log(`ws://127.0.0.1:${wss.address().port}`));
wss.on('connection', (ws) => {
  ws.on('message', (msg, isBinary) => {
    if (isBinary) return;
    const { argv, cwd } = JSON.parse(msg.toString());
    const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child.on('error', (e) => ws.send(JSON.stringify({ error: e.message })));
    const raw = ws._socket;
    const forward = (d) => {
      // FIN + binary, then the payload length (RFC 6455 §5.2), then our 14 header bytes; one writev per tick.
      const len = HEADER + d.length;
      const head = Buffer.alloc((len < 126 ? 2 : len < 65536 ? 4 : 10) + HEADER);
      head[0] = 0x82;
      if (len < 126) head[1] = len;
      else if (len < 65536) (head[1] = 126), head.writeUInt16BE(len, 2);
      else (head[1] = 127), head.writeUInt32BE(len, 6);
      if (!raw.writableCorked) {
        raw.cork();
        process.nextTick(() => raw.uncork());
      }
      raw.write(head);
      raw.write(d);
    };
    child.stdout.on('data', forward);
    child.stderr.resume();
    child.on('close', (code) => ws.send(JSON.stringify({ exitCode: code ?? 1 })));
  });
});
process.on('SIGTERM', () => process.exit(0));
