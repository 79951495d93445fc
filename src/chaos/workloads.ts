/**
 * Client workloads for the fault suite. Each logical client is a "process" that runs one operation
 * at a time and records it as invoke, then ok / fail / info (info: it may or may not have taken
 * effect, e.g. a write that timed out). Every loop is bounded by a deadline and a count.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { AtollClient } from '../client/index.js';
import { Rng } from '../raft/rng.js';
import type { HistoryEvent, OpFunction } from './history.js';

/** Keeps the history in memory for the checkers and streams it to a JSONL file. */
export class Recorder {
  readonly events: HistoryEvent[] = [];
  private nextOp = 1;
  private readonly file: WriteStream | undefined;
  readonly counts = { ok: 0, fail: 0, info: 0 };

  constructor(path?: string) {
    this.file = path ? createWriteStream(path) : undefined;
  }

  /** Records the invoke, runs `action`, and records how it ended. */
  async run<T>(
    process: number,
    f: OpFunction,
    key: string | undefined,
    input: unknown,
    action: () => Promise<{ type: 'ok' | 'fail' | 'info'; value?: unknown; error?: string; result?: T }>,
  ): Promise<T | undefined> {
    const op = this.nextOp++;
    this.push({ process, op, type: 'invoke', f, ...(key !== undefined ? { key } : {}), ...(input !== undefined ? { value: input } : {}), timeMs: performance.now() });
    const outcome = await action();
    this.counts[outcome.type]++;
    this.push({
      process,
      op,
      type: outcome.type,
      f,
      ...(key !== undefined ? { key } : {}),
      ...(outcome.value !== undefined ? { value: outcome.value } : {}),
      ...(outcome.error !== undefined ? { error: outcome.error } : {}),
      timeMs: performance.now(),
    });
    return outcome.result;
  }

  private push(event: HistoryEvent): void {
    this.events.push(event);
    this.file?.write(`${JSON.stringify(event, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`);
  }

  async close(): Promise<void> {
    if (!this.file) return;
    await new Promise<void>((resolve) => this.file?.end(resolve));
  }
}

/** How an error ends an operation: a write whose effect is unknown is info, else fail. */
function failure(error: unknown, write: boolean): { type: 'fail' | 'info'; error: string } {
  const code = (error as { code?: string }).code ?? 'UNKNOWN';
  const indeterminate = write && (error as { indeterminate?: boolean }).indeterminate !== false;
  return { type: indeterminate ? 'info' : 'fail', error: code };
}

const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

export interface WorkloadContext {
  readonly client: AtollClient;
  readonly recorder: Recorder;
  readonly untilMs: number;
  readonly seed: number;
  readonly opTimeoutMs: number;
}

/**
 * Registers: reads, unique writes and compare-and-set on a few keys in different buckets (so
 * different partitions). Checked for linearizability per key.
 */
export async function registerWorkload(context: WorkloadContext, processes: number, keys: readonly string[]): Promise<void> {
  await Promise.all(
    Array.from({ length: processes }, async (_, process) => {
      const rng = new Rng(context.seed * 31 + process);
      const lastRead = new Map<string, string | null>();
      for (let n = 0; n < 100_000 && performance.now() < context.untilMs; n++) {
        const key = rng.pick(keys);
        const roll = rng.float();
        if (roll < 0.5) {
          await context.recorder.run(process, 'read', key, undefined, async () => {
            try {
              const got = await context.client.get(key, { timeoutMs: context.opTimeoutMs });
              const value = got.found ? text(got.value) : null;
              lastRead.set(key, value);
              return { type: 'ok', value };
            } catch (error) {
              return failure(error, false);
            }
          });
        } else if (roll < 0.8 || !lastRead.has(key)) {
          const value = `p${process}-${n}`;
          await context.recorder.run(process, 'write', key, value, async () => {
            try {
              await context.client.put(key, value, { timeoutMs: context.opTimeoutMs });
              return { type: 'ok' };
            } catch (error) {
              return failure(error, true);
            }
          });
        } else {
          const expected = lastRead.get(key) ?? null;
          const value = `p${process}-${n}`;
          await context.recorder.run(process, 'cas', key, { expected, next: value }, async () => {
            try {
              const result =
                expected === null
                  ? await context.client.put(key, value, { ifAbsent: true, timeoutMs: context.opTimeoutMs })
                  : await context.client.put(key, value, { ifValue: expected, timeoutMs: context.opTimeoutMs });
              return { type: 'ok', value: result.applied };
            } catch (error) {
              return failure(error, true);
            }
          });
        }
      }
    }),
  );
}

/** Sets: every add writes a distinct key; after the run every acknowledged add must be readable. */
export async function setWorkload(context: WorkloadContext, processes: number, buckets: readonly string[]): Promise<void> {
  await Promise.all(
    Array.from({ length: processes }, async (_, index) => {
      const process = 100 + index;
      const rng = new Rng(context.seed * 17 + process);
      for (let n = 0; n < 100_000 && performance.now() < context.untilMs; n++) {
        const element = `${rng.pick(buckets)}/e${process}-${n}`;
        await context.recorder.run(process, 'add', 'set', element, async () => {
          try {
            await context.client.put(element, '1', { timeoutMs: context.opTimeoutMs });
            return { type: 'ok' };
          } catch (error) {
            return failure(error, true);
          }
        });
      }
    }),
  );
}

/**
 * Counters: increments by 1 on one key. Each increment carries a request id; when the outcome is
 * unknown (timeout, connection lost) the client retries with the same id, so the cluster's
 * deduplication must make it count exactly once. The final value must match what was acknowledged.
 */
export async function counterWorkload(context: WorkloadContext, processes: number, key: string): Promise<void> {
  await Promise.all(
    Array.from({ length: processes }, async (_, index) => {
      const process = 200 + index;
      for (let n = 0; n < 100_000 && performance.now() < context.untilMs; n++) {
        const requestId = `c${context.seed}-${process}-${n}`;
        await context.recorder.run(process, 'increment', key, 1, async () => {
          let mayHaveApplied = false;
          let lastError = 'UNKNOWN';
          for (let attempt = 0; attempt < 4; attempt++) {
            try {
              await context.client.increment(key, 1, { timeoutMs: context.opTimeoutMs, requestId });
              return { type: 'ok' };
            } catch (error) {
              const outcome = failure(error, true);
              lastError = outcome.error;
              if (outcome.type === 'info') mayHaveApplied = true;
              await new Promise((resolve) => setTimeout(resolve, 100));
            }
          }
          // Every retry reused the id, so the increment counts at most once either way.
          return { type: mayHaveApplied ? 'info' : 'fail', error: lastError };
        });
      }
    }),
  );
}

/** Final reads after healing: every set element present, each register, the counter. */
export async function finalReads(context: Omit<WorkloadContext, 'untilMs'>, registerKeys: readonly string[], setBuckets: readonly string[], counterKey: string): Promise<void> {
  const process = 999;
  const attempt = async <T>(read: () => Promise<T>): Promise<T> => {
    let lastError: unknown;
    for (let i = 0; i < 20; i++) {
      try {
        return await read();
      } catch (error) {
        lastError = error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    throw lastError;
  };
  for (const key of registerKeys) {
    await context.recorder.run(process, 'read', key, undefined, async () => {
      const got = await attempt(() => context.client.get(key, { timeoutMs: context.opTimeoutMs }));
      return { type: 'ok', value: got.found ? text(got.value) : null };
    });
  }
  const elements: string[] = [];
  for (const bucket of setBuckets) {
    for await (const entry of context.client.scanPrefix(bucket, { timeoutMs: 10_000 })) elements.push(entry.key);
  }
  await context.recorder.run(process, 'readAll', 'set', undefined, async () => ({ type: 'ok', value: elements }));
  await context.recorder.run(process, 'read', counterKey, undefined, async () => {
    const got = await attempt(() => context.client.get(counterKey, { timeoutMs: context.opTimeoutMs }));
    return { type: 'ok', value: got.found ? Number(text(got.value)) : 0 };
  });
}
