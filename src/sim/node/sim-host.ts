/**
 * One incarnation of a simulated node's process: its clock (skewed and drifting within the bounds
 * below) and its timers, all on the simulator's event queue. A crashed incarnation is dead: its
 * timers never fire again, and everything else it holds checks `alive` before touching the world.
 */
import type { NodeClock, NodeTimers, TimerHandle } from '../../node/ports.js';
import type { Scheduler } from './scheduler.js';

/** Wall-clock epoch of virtual time 0 (any fixed instant: runs must not depend on the real date). */
export const SIM_EPOCH_MS = 1_800_000_000_000;
/** Bounds of a node's clock error: a constant offset of the wall clock, and a rate error of both clocks. */
export const MAX_CLOCK_SKEW_MS = 500;
export const MAX_CLOCK_DRIFT = 0.001;

export interface ClockModel {
  /** Offset of this node's wall clock from true time, |skewMs| <= MAX_CLOCK_SKEW_MS. */
  readonly skewMs: number;
  /** Rate error of both clocks: a node second lasts 1/(1 + drift) true seconds, |drift| <= MAX_CLOCK_DRIFT. */
  readonly drift: number;
}

export class NodeHost {
  alive = true;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;

  constructor(
    private readonly scheduler: Scheduler,
    readonly node: number,
    readonly incarnation: number,
    readonly clockModel: ClockModel,
  ) {
    const rate = 1 + clockModel.drift;
    this.clock = {
      monotonicMs: () => 10_000 + scheduler.now * rate,
      // Whole milliseconds, as Date.now() gives.
      wallMs: () => Math.floor(SIM_EPOCH_MS + clockModel.skewMs + scheduler.now * rate),
    };
    const toVirtual = (nodeMs: number): number => Math.max(0, nodeMs) / rate;
    this.timers = {
      every: (intervalMs: number, run: () => void): TimerHandle => {
        let handle = { cancel: () => undefined } as { cancel(): void };
        let cancelled = false;
        const arm = (): void => {
          handle = scheduler.after(toVirtual(intervalMs), () => {
            if (cancelled || !this.alive) return;
            arm();
            run();
          }, node);
        };
        arm();
        return {
          cancel: () => {
            cancelled = true;
            handle.cancel();
          },
        };
      },
      after: (delayMs: number, run: () => void): TimerHandle =>
        scheduler.after(toVirtual(delayMs), () => {
          if (this.alive) run();
        }, node),
      soon: (run: () => void): void => {
        scheduler.after(0, () => {
          if (this.alive) run();
        }, node);
      },
    };
  }
}
