// A watchdog the test command runs beside the tests. This machine's ~/.bashrc runs `pyenv init`,
// whose `pyenv rehash` takes a lock file (`$PYENV_ROOT/shims/.pyenv-shim`) and removes it on exit;
// a test that SIGKILLs a shell during its rehash leaves the lock behind, and every later shell
// that reads ~/.bashrc (a terminal's, `bash -lc`, bash on a socket) then waits 60 s for it. A lock
// older than 10 s with no rehash running is stale: it is removed and said so on stderr.
// Exits when the process that started it (argv[2]) is gone.
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';

const parent = Number(process.argv[2]);
const lock = path.join(process.env.PYENV_ROOT ?? path.join(os.homedir(), '.pyenv'), 'shims', '.pyenv-shim');
const STALE_MS = 10_000;

function rehashRunning() {
  for (const n of readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue;
    try {
      if (readFileSync(`/proc/${n}/cmdline`, 'latin1').includes('pyenv-rehash')) return true;
    } catch {
      // gone
    }
  }
  return false;
}

setInterval(() => {
  try {
    process.kill(parent, 0);
  } catch {
    process.exit(0);
  }
  let st;
  try {
    st = statSync(lock);
  } catch {
    return;
  }
  if (Date.now() - st.mtimeMs > STALE_MS && !rehashRunning()) {
    rmSync(lock, { force: true });
    process.stderr.write(`test watchdog: removed a stale pyenv rehash lock (${lock}, ${Math.round((Date.now() - st.mtimeMs) / 1000)} s old; a killed shell left it)\n`);
  }
}, 2_000);
