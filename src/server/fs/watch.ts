// [extension] fs/watch + fs/unwatch + fs/changed notifications, owned by one connection.
// fs.watch only says "rename" or "change": the kind is decided by checking whether the
// path exists when the burst is flushed. Bursts are coalesced for ~50 ms per watch.
import fs from 'node:fs';
import path from 'node:path';
import { Messages, invalidRequest } from '../../protocol/errors';
import type { FsChangeKind, FsChangedNotification } from '../../protocol/types';
import { fsError } from '../os-errors';
import { pathToUri } from '../paths';

export const WATCH_COALESCE_MS = 50;
export const MAX_WATCHES = 256;

interface Watch {
  watcher: fs.FSWatcher;
  pending: Map<string, 'rename' | 'change'>;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Paths seen to exist, to tell "created" from "changed" after a rename event. */
  known: Set<string>;
}

export class Watches {
  private readonly watches = new Map<string, Watch>();
  private closed = false;

  constructor(private readonly emit: (n: FsChangedNotification) => void) {}

  async watch(watchId: string, p: string, recursive: boolean): Promise<{ watchId: string }> {
    if (this.watches.has(watchId)) throw invalidRequest(Messages.watchExists(watchId));
    if (this.watches.size >= MAX_WATCHES) throw invalidRequest(`at most ${MAX_WATCHES} watches may be active per connection`);
    let st: fs.Stats;
    try {
      st = await fs.promises.stat(p);
    } catch (e) {
      throw fsError(e);
    }
    if (this.watches.has(watchId)) throw invalidRequest(Messages.watchExists(watchId));
    if (this.closed) throw invalidRequest(Messages.connectionClosed); // closed while we were checking the path
    const base = st.isDirectory() ? p : path.dirname(p);
    const known = new Set<string>();
    if (st.isDirectory()) {
      for (const n of await fs.promises.readdir(p).catch(() => [] as string[])) known.add(path.join(p, n));
    } else known.add(p);
    if (this.closed || this.watches.has(watchId)) {
      throw invalidRequest(this.closed ? Messages.connectionClosed : Messages.watchExists(watchId));
    }
    let watcher: fs.FSWatcher;
    try {
      watcher = fs.watch(p, { recursive: recursive && st.isDirectory(), persistent: false });
    } catch (e) {
      throw fsError(e);
    }
    const w: Watch = { watcher, pending: new Map(), timer: undefined, known };
    watcher.on('change', (type, filename) => {
      const full = filename ? path.join(base, filename.toString()) : p;
      const prev = w.pending.get(full);
      w.pending.set(full, prev === 'rename' ? 'rename' : (type as 'rename' | 'change'));
      w.timer ??= setTimeout(() => void this.flush(watchId, w), WATCH_COALESCE_MS);
    });
    watcher.on('error', () => this.unwatch(watchId));
    this.watches.set(watchId, w);
    return { watchId };
  }

  private async flush(watchId: string, w: Watch): Promise<void> {
    w.timer = undefined;
    const batch = [...w.pending];
    w.pending.clear();
    const changes: { path: string; kind: FsChangeKind }[] = [];
    for (const [p, type] of batch) {
      const exists = await fs.promises.lstat(p).then(
        () => true,
        () => false,
      );
      let kind: FsChangeKind;
      if (!exists) kind = 'deleted';
      else if (type === 'rename' && !w.known.has(p)) kind = 'created';
      else kind = 'changed';
      if (exists) w.known.add(p);
      else w.known.delete(p);
      changes.push({ path: pathToUri(p), kind });
    }
    if (changes.length > 0 && this.watches.get(watchId) === w) this.emit({ watchId, changes });
  }

  unwatch(watchId: string): Record<string, never> {
    const w = this.watches.get(watchId);
    if (w) {
      this.watches.delete(watchId);
      if (w.timer) clearTimeout(w.timer);
      w.watcher.close();
    }
    return {};
  }

  closeAll(): void {
    this.closed = true;
    for (const id of [...this.watches.keys()]) this.unwatch(id);
  }
}
