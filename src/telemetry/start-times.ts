// The start times of the requests in flight, in one Float64Array: a request's record keeps the
// index of its slot, a small integer. Kept as a field of the record, the start time was a double
// boxed in a heap number of its own on every request (docs/performance.md, "Telemetry cost":
// the 1 % server's cost against "off" measured over pairs of fresh servers before and after).

/** Slots at first; doubled whenever every slot is taken (requests in flight). */
const INITIAL_SLOTS = 256;

export class StartTimes {
  private times = new Float64Array(0);
  /** Free slot indices, a stack: `free[0..top)`. */
  private free = new Int32Array(0);
  private top = 0;

  /** A slot holding `startMs` until released. */
  take(startMs: number): number {
    if (this.top === 0) this.grow();
    const slot = this.free[--this.top];
    this.times[slot] = startMs;
    return slot;
  }

  /** The start time held by `slot`, which is free again afterwards (call once per take). */
  release(slot: number): number {
    this.free[this.top++] = slot;
    return this.times[slot];
  }

  /** Slots taken (requests in flight). */
  get taken(): number {
    return this.times.length - this.top;
  }

  /** Called with every slot taken (top is 0): the new slots are the only free ones. */
  private grow(): void {
    const n = this.times.length;
    const size = Math.max(INITIAL_SLOTS, 2 * n);
    const times = new Float64Array(size);
    times.set(this.times);
    const free = new Int32Array(size);
    // Lowest index on top: a server with few requests in flight keeps using the same few slots.
    for (let i = 0; i < size - n; i++) free[i] = size - 1 - i;
    this.times = times;
    this.free = free;
    this.top = size - n;
  }
}
