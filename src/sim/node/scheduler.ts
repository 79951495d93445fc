/**
 * The simulator's one event queue in virtual time. Events run in time order, ties in the order
 * they were scheduled; after each event every promise continuation it started settles before the
 * next event runs (nothing in a simulated node waits on real I/O, so one macrotask turn drains
 * them all). A node that is paused (a GC pause, SIGSTOP) has its events held until it resumes.
 */

export interface SimEvent {
  readonly at: number;
  readonly seq: number;
  /** The node whose process runs the event (held while it is paused); undefined for the harness. */
  readonly owner: number | undefined;
  readonly run: () => void;
}

/** A handle to cancel a scheduled event. */
export interface Scheduled {
  cancel(): void;
}

export class Scheduler {
  /** Virtual milliseconds since the run started. */
  now = 0;
  private seq = 0;
  // Invariant: heap is a binary min-heap ordered by (at, seq).
  private readonly heap: SimEvent[] = [];
  private readonly cancelled = new Set<number>();
  private readonly pausedUntil = new Map<number, number>();
  /** Events run so far (the run's bound). */
  executed = 0;

  at(time: number, run: () => void, owner?: number): Scheduled {
    const event: SimEvent = { at: Math.max(time, this.now), seq: this.seq++, owner, run };
    this.push(event);
    return { cancel: () => this.cancelled.add(event.seq) };
  }

  after(delayMs: number, run: () => void, owner?: number): Scheduled {
    return this.at(this.now + Math.max(0, delayMs), run, owner);
  }

  /** Holds the node's events until `untilMs` (virtual time); its clock keeps running. */
  pause(node: number, untilMs: number): void {
    this.pausedUntil.set(node, Math.max(untilMs, this.pausedUntil.get(node) ?? 0));
  }

  isPaused(node: number): boolean {
    return (this.pausedUntil.get(node) ?? 0) > this.now;
  }

  get pending(): number {
    return this.heap.length;
  }

  /**
   * Runs events up to virtual time `untilMs` (or until `stop()` says so, checked between events),
   * at most `maxEvents` in all. Returns false when the event budget ran out.
   */
  async runUntil(untilMs: number, maxEvents: number, stop: () => boolean = () => false): Promise<boolean> {
    // What the caller started before this call settles before time moves.
    await settle();
    while (this.heap.length > 0 && (this.heap[0] as SimEvent).at <= untilMs) {
      if (stop()) return true;
      if (this.executed >= maxEvents) return false;
      const event = this.pop();
      if (this.cancelled.delete(event.seq)) continue;
      const held = event.owner === undefined ? 0 : (this.pausedUntil.get(event.owner) ?? 0);
      if (held > event.at) {
        // Re-queued in the order they come out, so a paused node's events keep their order.
        this.push({ ...event, at: held, seq: this.seq++ });
        continue;
      }
      this.now = event.at;
      this.executed++;
      event.run();
      await settle();
    }
    if (!stop()) this.now = Math.max(this.now, untilMs);
    return true;
  }

  private push(event: SimEvent): void {
    const heap = this.heap;
    heap.push(event);
    let at = heap.length - 1;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!before(event, heap[parent] as SimEvent)) break;
      heap[at] = heap[parent] as SimEvent;
      at = parent;
    }
    heap[at] = event;
  }

  private pop(): SimEvent {
    const heap = this.heap;
    const top = heap[0] as SimEvent;
    const last = heap.pop() as SimEvent;
    if (heap.length > 0) {
      let at = 0;
      for (;;) {
        const left = 2 * at + 1;
        if (left >= heap.length) break;
        const right = left + 1;
        const child = right < heap.length && before(heap[right] as SimEvent, heap[left] as SimEvent) ? right : left;
        if (!before(heap[child] as SimEvent, last)) break;
        heap[at] = heap[child] as SimEvent;
        at = child;
      }
      heap[at] = last;
    }
    return top;
  }
}

function before(a: SimEvent, b: SimEvent): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/**
 * Lets every pending promise continuation run: the microtask queue is drained completely before
 * the event loop reaches setImmediate's phase, and no simulated code waits on anything else.
 */
export function settle(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}
