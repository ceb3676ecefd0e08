// An inter-process lock for tool installs: a file created with O_EXCL holding the owner's pid and
// process start time. Concurrent installers (two `npm test`s, a bench run) wait for one another;
// a lock whose owner is gone (SIGKILL, crash, power loss) is detected and taken over.
import { closeSync, linkSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';

/** The kernel's start time of a process (jiffies since boot), so a reused pid is not taken for the owner. */
function startTime(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22; the command name (field 2) may hold spaces, so count from the closing paren.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

function alive(owner) {
  if (owner.host !== os.hostname()) return true; // another machine on a shared cache: cannot tell, keep waiting
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    if (err.code === 'ESRCH') return false;
  }
  const now = startTime(owner.pid);
  return !(now && owner.start && now !== owner.start);
}

function readOwner(file) {
  try {
    return { text: readFileSync(file, 'utf8'), ...JSON.parse(readFileSync(file, 'utf8')) };
  } catch {
    return undefined; // gone, or being written this instant
  }
}

/**
 * Takes the lock at `file`, waiting while a live process holds it. `onWait(owner)` is called once
 * when the caller has to wait. Returns a release function.
 */
export async function acquireLock(file, { onWait, onStale, timeoutMs = 30 * 60_000 } = {}) {
  const me = JSON.stringify({ pid: process.pid, start: startTime(process.pid), host: os.hostname(), since: new Date().toISOString() });
  const deadline = Date.now() + timeoutMs;
  let told = false;
  let unreadable = 0;
  for (;;) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, me);
      closeSync(fd);
      return () => {
        // Only remove it if it is still ours.
        try {
          if (readFileSync(file, 'utf8') === me) rmSync(file, { force: true });
        } catch {}
      };
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    const owner = readOwner(file);
    if (owner && !alive(owner)) {
      // Stale: move it aside under a name only we use, and check we moved the one we judged
      // (another waiter may have replaced it with its own live lock in between).
      const aside = `${file}.stale-${process.pid}`;
      try {
        renameSync(file, aside);
        const moved = readFileSync(aside, 'utf8');
        if (moved === owner.text) {
          onStale?.(owner);
          rmSync(aside, { force: true });
        } else {
          // Not the stale one: put it back unless a new lock appeared meanwhile.
          try {
            linkSync(aside, file);
          } catch {}
          rmSync(aside, { force: true });
        }
      } catch {}
      continue;
    }
    if (!owner && ++unreadable < 20) {
      // Created but not written yet (between open and write): look again shortly.
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    if (!owner) {
      // Unreadable for a second: a torn write from a killed owner. Treat as stale.
      rmSync(file, { force: true });
      unreadable = 0;
      continue;
    }
    if (!told) {
      told = true;
      onWait?.(owner);
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for the lock ${file} (held by pid ${owner.pid})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
