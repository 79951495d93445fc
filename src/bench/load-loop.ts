/**
 * The closed load loop: `concurrency` workers, each with one request in flight, each starting its
 * next operation when the last one answered. It stops starting operations at a time limit or after
 * an operation count, whichever comes first (at least one is required), and resolves once every
 * operation it started has answered (each is bounded by its own call timeout).
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import type { Operation } from './workloads.js';

export interface LoopLimits {
  readonly concurrency: number;
  /** Start no operation after this moment (performance.now() milliseconds). */
  readonly untilMs?: number;
  /** Start at most this many operations in all. */
  readonly maxOperations?: number;
}

export interface OperationOutcome {
  readonly latencyUs: number;
  /** Undefined when the operation succeeded. */
  readonly error?: unknown;
}

/** Runs the loop; `operationOf(worker)` makes each worker's operation generator. */
export async function runLoadLoop(limits: LoopLimits, operationOf: (worker: number) => Operation, onOutcome: (outcome: OperationOutcome) => void): Promise<void> {
  assert.ok(Number.isSafeInteger(limits.concurrency) && limits.concurrency >= 1, 'concurrency must be a positive integer');
  assert.ok(limits.untilMs !== undefined || limits.maxOperations !== undefined, 'a load loop needs a time or an operation limit');
  const untilMs = limits.untilMs ?? Infinity;
  const maxOperations = limits.maxOperations ?? Infinity;
  let started = 0;
  const mayStart = (): boolean => started < maxOperations && performance.now() < untilMs;

  const worker = async (operation: Operation): Promise<void> => {
    while (mayStart()) {
      started++;
      const startMs = performance.now();
      try {
        await operation();
        onOutcome({ latencyUs: (performance.now() - startMs) * 1000 });
      } catch (error) {
        onOutcome({ latencyUs: (performance.now() - startMs) * 1000, error });
      }
    }
  };
  await Promise.all(Array.from({ length: limits.concurrency }, (_, index) => worker(operationOf(index))));
}
