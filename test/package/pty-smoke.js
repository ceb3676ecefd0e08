// The PTY smoke run of one VSIX's node-pty, in whatever Node runs this file (the arm64 one under
// qemu-user for the linux-arm64 VSIX): node-pty loaded from argv[2] (an unpacked VSIX's
// extension/node_modules/node-pty), a shell started in a PTY, its output read, the PTY resized,
// input written, the exit code taken. Prints one JSON line: what happened, with the path of
// every native module this process loaded (Module._extensions['.node'] sees each).
// Plain JavaScript without imports: it runs as it is, outside the test build.
'use strict';
const Module = require('module');
const loaded = [];
const dlopen = Module._extensions['.node'];
Module._extensions['.node'] = function (mod, filename) {
  loaded.push(filename);
  return dlopen.call(this, mod, filename);
};
const out = { arch: process.arch, platform: process.platform, loaded, output: '' };
const done = (extra) => {
  process.stdout.write(JSON.stringify({ ...out, ...extra }) + '\n');
  process.exit(0);
};
let pty;
try {
  pty = require(process.argv[2]);
} catch (e) {
  done({ error: `require: ${e.message}` });
}
const timer = setTimeout(() => done({ error: 'timed out after 60 s' }), 60_000);
// stty size: rows and columns as the PTY reports them; the read waits for our input, which we
// write only after the resize, so the second stty size must see the new size.
const p = pty.spawn('/bin/sh', ['-c', 'stty size; IFS= read -r line; stty size; echo "got:$line"; exit 7'], { cols: 80, rows: 24, cwd: '/', env: { PATH: '/usr/bin:/bin' } });
let resized = false;
p.onData((d) => {
  out.output += d;
  if (!resized && /24 80/.test(out.output)) {
    resized = true;
    p.resize(100, 40);
    p.write('hello\r');
  }
});
p.onExit(({ exitCode, signal }) => {
  clearTimeout(timer);
  // node-pty emits exit only after the PTY's reader closed (lib/unixTerminal.js): all output is in.
  done({ exitCode, signal, pid: p.pid });
});
