/**
 * Client workloads for the fault suite. Each logical client is a "process" that runs one operation
 * at a time and records it as invoke, then ok / fail / info (info: it may or may not have taken
 * effect, e.g. a write that timed out). Every loop is bounded by a deadline and a count.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { AtollClient, Transaction } from '../client/index.js';
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

/**
 * A bank: accounts in one bucket (so one partition, where transactions live), each opened with the
 * same balance before the faults start. Transfers move money between two accounts in one
 * transaction; snapshot reads read every balance in one. Checked by the bank checker: every
 * snapshot, the final one after healing included, must show the opening total and no negative
 * balance, which holds only if each transfer is entirely visible or entirely absent.
 */
export interface Bank {
  readonly bucket: string;
  /** Every account's key, in `bucket`. */
  readonly accounts: readonly string[];
  readonly openingBalance: number;
}

export function makeBank(bucket: string, accountCount: number, openingBalance: number): Bank {
  const accounts = Array.from({ length: accountCount }, (_, index) => `${bucket}/acct-${index}`);
  return { bucket, accounts, openingBalance };
}

/** The total every snapshot of the bank must show. */
export function bankTotal(bank: Bank): number {
  return bank.accounts.length * bank.openingBalance;
}

/** Largest amount one transfer moves: a fraction of an opening balance, so some transfers are refused as overdrafts. */
const MAX_TRANSFER = 50;

/**
 * Opens every account in one transaction, before the faults start. Each put is `ifAbsent`, so a
 * rerun after an unknown outcome leaves accounts that already exist alone.
 */
export async function openBank(client: AtollClient, bank: Bank, timeoutMs: number): Promise<void> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      await client.transaction(
        bank.bucket,
        async (tx) => {
          for (const account of bank.accounts) await tx.put(account, String(bank.openingBalance), { ifAbsent: true });
        },
        { timeoutMs },
      );
      return;
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw lastError;
}

/**
 * Several processes, each mixing transfers (random accounts and amount, snapshot or serializable
 * isolation) with snapshot reads of every balance. A transfer reads both balances, refuses an
 * overdraft (recorded as fail: nothing was written), and moves the money with two increments that
 * commit together. A conflict that outlived the retries is fail (nothing changed); any other failed
 * commit is info (it may have applied); a failed begin or read is fail.
 */
export async function bankWorkload(context: WorkloadContext, processes: number, bank: Bank): Promise<void> {
  await Promise.all(
    Array.from({ length: processes }, async (_, index) => {
      const process = 300 + index;
      const rng = new Rng(context.seed * 13 + process);
      for (let n = 0; n < 100_000 && performance.now() < context.untilMs; n++) {
        if (rng.chance(0.2)) await readBalances(context, process, bank);
        else await transfer(context, process, bank, rng);
      }
    }),
  );
}

async function transfer(context: WorkloadContext, process: number, bank: Bank, rng: Rng): Promise<void> {
  const from = rng.pick(bank.accounts);
  const to = rng.pick(bank.accounts.filter((account) => account !== from));
  const amount = 1 + rng.int(MAX_TRANSFER);
  const isolation = rng.chance(0.5) ? 'serializable' : 'snapshot';
  await context.recorder.run(process, 'transfer', bank.bucket, { from, to, amount, isolation }, async () => {
    // Whether the body has run to its end, so that a later error is (most likely) the commit's.
    let committing = false;
    try {
      const outcome = await context.client.transaction(
        bank.bucket,
        async (tx) => {
          committing = false;
          const fromBalance = await balanceIn(tx, from);
          // Read as a bank would; under serializable isolation the read joins the read set.
          await tx.get(to);
          if (fromBalance < amount) {
            tx.rollback();
            return;
          }
          await tx.increment(from, -amount);
          await tx.increment(to, amount);
          committing = true;
        },
        { isolation, retries: 5, timeoutMs: context.opTimeoutMs * 2 },
      );
      return outcome.committed ? { type: 'ok' } : { type: 'fail', error: 'INSUFFICIENT_FUNDS' };
    } catch (error) {
      const outcome = failure(error, committing);
      // Only a conflict proves a commit changed nothing: the client resends a commit whose outcome
      // it does not know, and a definite failure of the resend says nothing about the first send.
      return committing && outcome.error !== 'TXN_CONFLICT' ? { ...outcome, type: 'info' } : outcome;
    }
  });
}

async function balanceIn(tx: Transaction, account: string): Promise<number> {
  const got = await tx.get(account);
  return got.found ? Number(got.text()) : 0;
}

/** Every balance at one snapshot: a read-only transaction, which commits without a round trip. */
function snapshotBalances(client: AtollClient, bank: Bank, timeoutMs: number): Promise<Record<string, number>> {
  return client
    .transaction(bank.bucket, async (tx) => Object.fromEntries((await tx.getByPrefix(bank.bucket)).map((entry) => [entry.key, Number(entry.text())])), { timeoutMs })
    .then((outcome) => outcome.value);
}

async function readBalances(context: WorkloadContext, process: number, bank: Bank): Promise<void> {
  await context.recorder.run(process, 'readBalances', bank.bucket, undefined, async () => {
    try {
      return { type: 'ok', value: await snapshotBalances(context.client, bank, context.opTimeoutMs * 2) };
    } catch (error) {
      return failure(error, false);
    }
  });
}

/** What the final reads after healing read back. */
export interface FinalReadTargets {
  readonly registerKeys: readonly string[];
  readonly setBuckets: readonly string[];
  readonly counterKey: string;
  readonly bank: Bank;
}

/** Final reads after healing: every set element present, each register, the counter, the bank. */
export async function finalReads(context: Omit<WorkloadContext, 'untilMs'>, targets: FinalReadTargets): Promise<void> {
  const { registerKeys, setBuckets, counterKey, bank } = targets;
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
  await context.recorder.run(process, 'readBalances', bank.bucket, undefined, async () => ({
    type: 'ok',
    value: await attempt(() => snapshotBalances(context.client, bank, context.opTimeoutMs)),
  }));
}
