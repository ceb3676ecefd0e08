// Shared by tests that check whether a child process (server, PTY child, sleeper) is still running.

/** Is a pid alive? (signal 0: existence check, nothing is delivered) */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
