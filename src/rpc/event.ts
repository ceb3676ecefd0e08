// Minimal Event/Disposable/Emitter in the style of vscode-jsonrpc: no Node or VS Code types,
// so server, client and extension share it (VS Code's own Disposable is structurally compatible).

export interface Disposable {
  dispose(): void;
}
export type Event<T> = (listener: (e: T) => void) => Disposable;

/**
 * Where a listener's exception goes. Logged, never rethrown: rethrowing (even on a microtask)
 * turns one faulty listener into an uncaught exception that ends the process — and with it the
 * server, leaving its children orphaned. Hosts may replace it (e.g. to log to their channel).
 */
export let onListenerError: (err: unknown) => void = (err) => {
  console.error('exec-server: an event listener threw:', err);
};

export function setListenerErrorHandler(handler: (err: unknown) => void): void {
  onListenerError = handler;
}

export class Emitter<T> {
  private listeners: ((e: T) => void)[] = [];
  private disposed = false;

  readonly event: Event<T> = (listener) => {
    if (this.disposed) return { dispose() {} };
    this.listeners.push(listener);
    return {
      dispose: () => {
        const i = this.listeners.indexOf(listener);
        if (i >= 0) this.listeners.splice(i, 1);
      },
    };
  };

  fire(e: T): void {
    // Copy so a listener may unsubscribe while we iterate.
    for (const l of this.listeners.length === 1 ? this.listeners : [...this.listeners]) {
      try {
        l(e);
      } catch (err) {
        // A faulty listener must not break delivery to the others, nor the process.
        try {
          onListenerError(err);
        } catch {
          /* the handler itself failed: nothing more to do */
        }
      }
    }
  }

  get hasListeners(): boolean {
    return this.listeners.length > 0;
  }

  dispose(): void {
    this.disposed = true;
    this.listeners = [];
  }
}

export class DisposableStore implements Disposable {
  private items: Disposable[] = [];
  add<T extends Disposable>(d: T): T {
    this.items.push(d);
    return d;
  }
  dispose(): void {
    const items = this.items;
    this.items = [];
    for (const d of items.reverse()) {
      try {
        d.dispose();
      } catch {
        /* keep disposing the rest */
      }
    }
  }
}
