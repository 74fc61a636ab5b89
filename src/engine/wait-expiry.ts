// When parked waits expire: every wait in one binary min-heap on its deadline, and one clock timer
// for the earliest. 10,000 parked waits then cost a heap slot each, not a timer and its closures
// each; a wait that leaves early is taken out of the heap at once (O(log n)), so nothing it holds
// outlives it.
import type { Clock } from './clock.js';

/** What the heap keeps: a deadline (the clock's ms) and the slot the heap maintains (-1: not in it). */
export interface Expiring {
  readonly deadline: number;
  slot: number;
}

export class Expiry<T extends Expiring> {
  private heap: T[] = [];
  private armed: { at: number; cancel: () => void } | null = null;

  constructor(
    private readonly clock: Clock,
    /** Called once for each item whose deadline passed; it must remove the item (or it is removed). */
    private readonly expired: (item: T) => void,
  ) {}

  get size(): number {
    return this.heap.length;
  }

  add(item: T): void {
    item.slot = this.heap.length;
    this.heap.push(item);
    if (this.up(item.slot) === 0) this.arm();
  }

  remove(item: T): void {
    const i = item.slot;
    if (i < 0 || this.heap[i] !== item) return;
    item.slot = -1;
    const last = this.heap.pop() as T;
    if (i < this.heap.length) {
      this.heap[i] = last;
      last.slot = i;
      this.down(this.up(i));
    }
    if (i === 0) this.arm();
  }

  /** One timer on the earliest deadline; none when the heap is empty. */
  private arm(): void {
    const top = this.heap[0];
    if (this.armed !== null && this.armed.at === top?.deadline) return;
    this.armed?.cancel();
    this.armed = null;
    if (top === undefined) return;
    const at = top.deadline;
    this.armed = { at, cancel: this.clock.timer(Math.max(0, at - this.clock.now()), () => this.fire(at)) };
  }

  private fire(at: number): void {
    if (this.armed?.at === at) this.armed = null;
    const now = this.clock.now();
    for (let top = this.heap[0]; top !== undefined && top.deadline <= now; top = this.heap[0]) {
      this.expired(top);
      if (top.slot >= 0) this.remove(top);
    }
    this.arm();
  }

  private up(i: number): number {
    const h = this.heap;
    const item = h[i] as T;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = h[parent] as T;
      if (p.deadline <= item.deadline) break;
      h[i] = p;
      p.slot = i;
      i = parent;
    }
    h[i] = item;
    item.slot = i;
    return i;
  }

  private down(i: number): void {
    const h = this.heap;
    const item = h[i] as T;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= h.length) break;
      if (c + 1 < h.length && (h[c + 1] as T).deadline < (h[c] as T).deadline) c++;
      const child = h[c] as T;
      if (child.deadline >= item.deadline) break;
      h[i] = child;
      child.slot = i;
      i = c;
    }
    h[i] = item;
    item.slot = i;
  }
}
