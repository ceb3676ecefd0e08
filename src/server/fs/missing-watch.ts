// fs/watchMissing (sent by the real Codex client, protocol §6a): "tell me when any of these
// missing paths appears". As the reference: answers {watching: true} ({watching: false} if
// the watchId is already active) and later sends one `fs/missingChanged {watchId}`.
// Each missing path is watched through its nearest existing ancestor directory; when an
// intermediate directory appears, the watch moves down to it.
import fs from 'node:fs';
import path from 'node:path';

export const MAX_MISSING_WATCHES = 256;
const RECHECK_DEBOUNCE_MS = 50;

interface MissingWatch {
  missing: string[];
  watchers: Map<string, fs.FSWatcher>;
  timer: ReturnType<typeof setTimeout> | undefined;
}

function nearestExistingDir(p: string): string | undefined {
  let dir = path.dirname(p);
  for (let i = 0; i < 4096; i++) {
    try {
      if (fs.statSync(dir).isDirectory()) return dir;
    } catch {
      // keep climbing
    }
    const up = path.dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
  return undefined;
}

const exists = (p: string) => {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

export class MissingWatches {
  private readonly watches = new Map<number, MissingWatch>();

  constructor(private readonly emit: (watchId: number) => void) {}

  watch(watchId: number, missing: string[]): { watching: boolean } {
    if (this.watches.has(watchId) || this.watches.size >= MAX_MISSING_WATCHES) return { watching: false };
    const w: MissingWatch = { missing, watchers: new Map(), timer: undefined };
    this.watches.set(watchId, w);
    this.refresh(watchId, w);
    return { watching: true };
  }

  /** Re-checks the paths: notify once if one appeared, else (re)attach ancestor watchers. */
  private refresh(watchId: number, w: MissingWatch): void {
    if (this.watches.get(watchId) !== w) return;
    if (w.missing.some(exists)) {
      this.dispose(watchId);
      this.emit(watchId);
      return;
    }
    const wanted = new Set(w.missing.map(nearestExistingDir).filter((d): d is string => d !== undefined));
    for (const [dir, watcher] of w.watchers) {
      if (!wanted.has(dir)) {
        watcher.close();
        w.watchers.delete(dir);
      }
    }
    for (const dir of wanted) {
      if (w.watchers.has(dir)) continue;
      try {
        const watcher = fs.watch(dir, { persistent: false }, () => {
          w.timer ??= setTimeout(() => {
            w.timer = undefined;
            this.refresh(watchId, w);
          }, RECHECK_DEBOUNCE_MS);
        });
        watcher.on('error', () => undefined);
        w.watchers.set(dir, watcher);
      } catch {
        // unwatchable ancestor (permissions, vanished): nothing to report
      }
    }
  }

  private dispose(watchId: number): void {
    const w = this.watches.get(watchId);
    if (!w) return;
    this.watches.delete(watchId);
    if (w.timer) clearTimeout(w.timer);
    for (const watcher of w.watchers.values()) watcher.close();
  }

  closeAll(): void {
    for (const id of [...this.watches.keys()]) this.dispose(id);
  }
}
