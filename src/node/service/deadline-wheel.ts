/**
 * One timer for the deadlines of many requests, instead of a timer set and cancelled per request
 * (the server's call scopes, src/server/deadline-wheel.ts; the node's, request-deadline.ts, for
 * requests that arrive without one, on the node's own timers so the simulator drives them): deadlines are grouped into slots of `slotMs`, and a single timer is
 * armed for the earliest slot that holds one. A deadline fires at most `slotMs` late, never early.
 *
 * Cost per request: one entry object and a Set insert and delete; a slot's Set and its place in
 * the heap are shared by every deadline in that slot (about a hundred requests per slot at a few
 * thousand requests a second).
 *
 * Invariants (checked by test/server/deadline-wheel.test.ts):
 * - Every slot number in `slots` is in `heap` exactly once, and the heap holds nothing else, so
 *   both are bounded by the number of distinct slots between now and the longest deadline
 *   (limits.maxCallTimeoutMs / slotMs + 1): a slot leaves both only when it fires, and a cancelled
 *   entry leaves its slot's Set at once.
 * - A timer is armed exactly when some entry is live (added, neither fired nor cancelled), for a
 *   slot no later than the earliest live one; slots whose entries were all cancelled are dropped
 *   when the timer reaches them, or all at once when nothing is live.
 */
import assert from 'node:assert/strict';
import { requestPathCounters } from '../../api/request-path-counters.js';

export interface WheelTimers {
  /** A monotonic clock in ms: deadlines are kept as delays from it, so a wall-clock step moves none. */
  nowMs(): number;
  /** Runs `run` after `delayMs`; the handle cancels it. */
  after(delayMs: number, run: () => void): { cancel(): void };
}

export interface WheelEntry {
  /** Removes the deadline; `fire` will not run. Idempotent. */
  cancel(): void;
}

class Entry implements WheelEntry {
  done = false;

  constructor(
    readonly wheel: DeadlineWheel,
    readonly slot: Set<Entry>,
    readonly fire: () => void,
  ) {}

  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.slot.delete(this);
    this.wheel.entryCancelled();
  }
}

export class DeadlineWheel {
  /** Slot number (ceil(monotonic due time / slotMs)) -> the entries due then. */
  private readonly slots = new Map<number, Set<Entry>>();
  /** Binary min-heap of the slot numbers in `slots`. */
  private readonly heap: number[] = [];
  private armed: { slot: number; handle: { cancel(): void } } | undefined;
  /** Entries added and neither fired nor cancelled. */
  private live = 0;

  constructor(
    private readonly timers: WheelTimers,
    private readonly slotMs = 10,
  ) {
    assert(Number.isInteger(slotMs) && slotMs > 0, 'slotMs must be a positive integer');
  }

  /** Runs `fire` once `delayMs` from now has passed, unless cancelled first. */
  add(delayMs: number, fire: () => void): WheelEntry {
    assert(Number.isFinite(delayMs), 'a deadline must be a finite time');
    requestPathCounters.deadlines++;
    const slotNumber = Math.ceil((this.timers.nowMs() + Math.max(0, delayMs)) / this.slotMs);
    let slot = this.slots.get(slotNumber);
    if (slot === undefined) {
      slot = new Set();
      this.slots.set(slotNumber, slot);
      this.push(slotNumber);
    }
    const entry = new Entry(this, slot, fire);
    slot.add(entry);
    this.live++;
    if (this.armed === undefined || slotNumber < this.armed.slot) this.arm();
    return entry;
  }

  /** With nothing left to fire, no timer stays armed (it would keep a process or a simulation busy). */
  entryCancelled(): void {
    this.live--;
    assert(this.live >= 0, 'every cancel matches an add');
    if (this.live > 0) return;
    // Nothing live: every slot is empty, so all of them go, and the timer with them.
    this.slots.clear();
    this.heap.length = 0;
    this.armed?.handle.cancel();
    this.armed = undefined;
  }

  /** Deadlines not yet fired or cancelled (tests and diagnostics). */
  get pending(): number {
    let count = 0;
    for (const slot of this.slots.values()) count += slot.size;
    assert.equal(count, this.live, 'the live count is the entries in the slots');
    return count;
  }

  /** Whether a timer is armed (tests): exactly when something is pending. */
  get timerArmed(): boolean {
    return this.armed !== undefined;
  }

  /** Slots held (each at most once in the heap): bounded by the span of deadlines / slotMs. */
  get slotCount(): number {
    assert.equal(this.heap.length, this.slots.size, 'every slot is in the heap exactly once');
    return this.slots.size;
  }

  private arm(): void {
    this.armed?.handle.cancel();
    this.armed = undefined;
    const first = this.heap[0];
    if (first === undefined) return;
    const delayMs = Math.max(1, first * this.slotMs - this.timers.nowMs());
    this.armed = { slot: first, handle: this.timers.after(delayMs, () => this.fireDue()) };
  }

  private fireDue(): void {
    this.armed = undefined;
    const nowSlot = Math.floor(this.timers.nowMs() / this.slotMs);
    const due: Entry[] = [];
    while (this.heap.length > 0 && (this.heap[0] as number) <= nowSlot) {
      const slotNumber = this.pop();
      const slot = this.slots.get(slotNumber);
      this.slots.delete(slotNumber);
      if (slot !== undefined) for (const entry of slot) due.push(entry);
    }
    for (const entry of due) entry.done = true;
    this.live -= due.length;
    if (this.live > 0) this.arm();
    // Fired after the wheel is consistent again: a callback may add or cancel deadlines.
    for (const entry of due) {
      try {
        entry.fire();
      } catch {
        // A deadline callback must not stop the others; the callers' own code reports failures.
      }
    }
  }

  private push(slotNumber: number): void {
    const heap = this.heap;
    let index = heap.push(slotNumber) - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if ((heap[parent] as number) <= slotNumber) break;
      heap[index] = heap[parent] as number;
      index = parent;
    }
    heap[index] = slotNumber;
  }

  private pop(): number {
    const heap = this.heap;
    const top = heap[0] as number;
    const last = heap.pop() as number;
    if (heap.length > 0) {
      let index = 0;
      for (;;) {
        const left = 2 * index + 1;
        if (left >= heap.length) break;
        const right = left + 1;
        const child = right < heap.length && (heap[right] as number) < (heap[left] as number) ? right : left;
        if ((heap[child] as number) >= last) break;
        heap[index] = heap[child] as number;
        index = child;
      }
      heap[index] = last;
    }
    return top;
  }
}
