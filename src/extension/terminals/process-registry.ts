// The processes this window started or watches (terminals, Run Command, API runs, agent
// processes), for the Processes tree and its interrupt/terminate actions. Free of `vscode`.
import type { ProcessHandle } from '../../client/api';
import { Emitter } from '../../rpc/event';

export type ProcessOrigin = 'terminal' | 'command' | 'api' | 'agent';

export interface TrackedProcess {
  /** Unique within the window (environment + processId). */
  readonly key: string;
  readonly environment: string;
  readonly label: string;
  readonly origin: ProcessOrigin;
  readonly handle: ProcessHandle;
  readonly startedAt: number;
}

export class ProcessRegistry {
  private readonly items = new Map<string, TrackedProcess>();
  private readonly changeEmitter = new Emitter<void>();
  readonly onDidChange = this.changeEmitter.event;

  /** Tracks a process until it is closed (all output delivered). */
  add(environment: string, label: string, origin: ProcessOrigin, handle: ProcessHandle): TrackedProcess {
    const key = `${environment}\u0000${handle.processId}`;
    const item: TrackedProcess = { key, environment, label, origin, handle, startedAt: Date.now() };
    this.items.set(key, item);
    this.changeEmitter.fire();
    const drop = () => {
      if (this.items.get(key) === item) {
        this.items.delete(key);
        this.changeEmitter.fire();
      }
    };
    handle.closed.then(drop, drop);
    return item;
  }

  get(key: string): TrackedProcess | undefined {
    return this.items.get(key);
  }

  list(environment?: string): TrackedProcess[] {
    return [...this.items.values()].filter((p) => environment === undefined || p.environment === environment);
  }

  /** Forgets the processes of an environment whose connection is gone. */
  forgetEnvironment(environment: string): void {
    let changed = false;
    for (const [k, p] of this.items) {
      if (p.environment === environment) {
        this.items.delete(k);
        changed = true;
      }
    }
    if (changed) this.changeEmitter.fire();
  }

  dispose(): void {
    this.items.clear();
    this.changeEmitter.dispose();
  }
}
