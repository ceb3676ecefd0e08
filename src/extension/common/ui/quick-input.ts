// The one answer of a quick input (QuickPick / InputBox): accept, hide, a Back button and an
// async load finishing late may each try to answer; only the first counts, and it disposes the
// input so nothing later (a hide caused by the dispose itself, a listing that arrives after the
// user left) resolves a second time or touches a disposed input.

/** `finish(v)` resolves once and disposes `input` (after `cleanup`); `done` tells late callbacks to stop. */
export interface OneAnswer<T> {
  finish(value: T): void;
  readonly done: boolean;
}

export function oneAnswer<T>(input: { dispose(): void }, resolve: (value: T) => void, cleanup?: () => void): OneAnswer<T> {
  let done = false;
  return {
    finish(value: T) {
      if (done) return;
      done = true;
      cleanup?.();
      resolve(value);
      input.dispose();
    },
    get done() {
      return done;
    },
  };
}
