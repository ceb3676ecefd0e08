// Kills a process and everything it started: its descendants (found through /proc, snapshotted
// before anything dies, so PTY children in their own sessions are included) and its process group.
import { readdirSync, readFileSync } from 'node:fs';
import { waitUntil } from './wait.mjs';

function parentMap() {
  const parents = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // Field 4 of /proc/<pid>/stat is the ppid; the command name (field 2) may hold spaces.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(name), ppid);
    } catch {}
  }
  return parents;
}

export function descendants(root) {
  const parents = parentMap();
  const out = [];
  const queue = [root];
  while (queue.length) {
    const p = queue.shift();
    for (const [pid, ppid] of parents) if (ppid === p) {
      out.push(pid);
      queue.push(pid);
    }
  }
  return out;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signal(pid, sig) {
  try {
    process.kill(pid, sig);
  } catch {}
}

export async function killTree(root, graceMs = 3000) {
  const pids = [root, ...descendants(root)];
  signal(-root, 'SIGTERM'); // the process group (code-server was started detached)
  for (const pid of pids) signal(pid, 'SIGTERM');
  await waitUntil(() => !pids.some(alive), { timeout: graceMs, what: 'the tree to exit on SIGTERM' }).catch(() => undefined); // then SIGKILL
  // Anything started meanwhile is killed too.
  for (const pid of [...pids, ...descendants(root)]) signal(pid, 'SIGKILL');
  signal(-root, 'SIGKILL');
}
