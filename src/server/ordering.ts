// Per-resource request ordering within one connection. The reference handles a
// connection's requests one at a time, so a client may pipeline `fs/open` + `fs/readBlock`
// or `process/start` + `process/write` and rely on the order. This server runs requests
// concurrently (a long-poll must not stall everything behind it) but keeps that guarantee
// where it matters: requests on the same resource key run in arrival order, with
// reader/writer semantics. "free" requests (process/read) wait for earlier writers but
// never hold anything up.
export type Access = 'write' | 'read' | 'free';

interface KeyState {
  /** The latest writer still in progress (undefined once settled). */
  writer: Promise<void> | undefined;
  /** Readers still in progress since that writer. */
  readers: Set<Promise<void>>;
}

export class KeyedOrder {
  private readonly keys = new Map<string, KeyState>();

  run<T>(key: string | undefined, access: Access, fn: () => T | Promise<T>): Promise<T> {
    if (key === undefined) return runNow(fn);
    let st = this.keys.get(key);
    if (!st) {
      st = { writer: undefined, readers: new Set() };
      this.keys.set(key, st);
    }
    const prior: Promise<void>[] = [];
    if (st.writer) prior.push(st.writer);
    if (access === 'write') prior.push(...st.readers);

    let release!: () => void;
    const done = new Promise<void>((r) => (release = r));
    if (access === 'write') {
      st.writer = done;
      st.readers = new Set();
    } else if (access === 'read') {
      st.readers.add(done);
    }
    const state = st;
    const finish = () => {
      release();
      if (state.writer === done) state.writer = undefined;
      state.readers.delete(done);
      if (!state.writer && state.readers.size === 0 && this.keys.get(key) === state) this.keys.delete(key);
    };
    // Nothing to wait for: run now (keeps the common case as fast as an unordered call).
    return (prior.length === 0 ? runNow(fn) : Promise.all(prior).then(() => fn())).finally(finish);
  }

  get size(): number {
    return this.keys.size;
  }
}

function runNow<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (e) {
    return Promise.reject(e);
  }
}
