/**
 * Isolation transactions that meet range changes (issue 32). The isolation checker
 * (isolation-checker.ts) judges the random transactions of the isolation buckets; this file picks
 * what one of them covers so that, in seeds that split or merge, they are begun before, during and
 * after the change of their own partition:
 *
 * - buckets in every founding partition's moved side: x0 and x1 (fnv1a32 0.26 and 0.27 of the
 *   first quarter of the hash space) lie above the median bucket of partition 0, and x2125 and
 *   x4625 at the top of the third and fourth quarters, so a split of any founding partition that
 *   holds buckets of the workload moves one of them (a split cuts at the median stored bucket
 *   hash, src/keys/partition-table.ts chooseSplitPoint), and a second split (of the new partition)
 *   moves it again;
 * - a sibling bucket, x49 (0.045 of the first quarter), below every other bucket of partition 0:
 *   it stays when partition 0 splits. Four transactions in ten of x0, x1 or x49
 *   cover both x49's keys and x0's or x1's: one partition before a split of partition 0 and after a merge back, two
 *   sibling partitions in between (where a transaction must fail with a clear error, never read
 *   the sibling at its own snapshot revision: NodeTestBugs.txnScopeByInitialTable);
 * - one transaction in five pauses 0.3 to 2.5 s after it began and again before it commits, so a
 *   split or merge lands between its begin, its reads and its commit.
 */
import type { Rng } from '../../raft/rng.js';

/** When a transaction's begin was invoked and when its last call (the commit, or a read) answered, virtual ms (txn-realtime-checker.ts). */
export interface TxnTimes {
  readonly beginInvokeMs: number;
  readonly completeMs: number;
}

export const SIBLING_BUCKET = 'x49';
/** The isolation buckets: x0, x1, the sibling bucket and the two that cover the other founding partitions. */
export const ISOLATION_BUCKETS: readonly string[] = ['x0', 'x1', SIBLING_BUCKET, 'x2125', 'x4625'];

export interface IsolationTxnScope {
  readonly keys: string[];
  readonly prefixes: string[];
  /** Sleeps at a stage of a long transaction (undefined: a short one). */
  readonly pause: ((stage: 'begun' | 'commit') => Promise<void>) | undefined;
}

export function isolationTxnScope(rng: Rng, buckets: readonly string[], keysPerBucket: number, sleep: (ms: number) => Promise<void>): IsolationTxnScope {
  const bucket = rng.pick(buckets);
  // Without the sibling bucket (issue32Workloads pinned off): one bucket, no pause, no more draws.
  if (!buckets.includes(SIBLING_BUCKET)) return { keys: Array.from({ length: keysPerBucket }, (_, i) => `${bucket}/k${i}`), prefixes: [bucket], pause: undefined };
  const paired = ['x0', 'x1', SIBLING_BUCKET].every((b) => buckets.includes(b)) && ['x0', 'x1', SIBLING_BUCKET].includes(bucket) && rng.chance(0.4);
  const covered = !paired ? [bucket] : bucket === SIBLING_BUCKET ? [bucket, rng.pick(['x0', 'x1'])] : [bucket, SIBLING_BUCKET];
  const keys = covered.flatMap((b) => Array.from({ length: keysPerBucket }, (_, i) => `${b}/k${i}`));
  const long = rng.chance(0.2);
  const pauses = long ? [300 + rng.int(2_200), 300 + rng.int(2_200)] : [0, 0];
  return { keys, prefixes: covered, pause: long ? (stage) => sleep(stage === 'begun' ? pauses[0]! : pauses[1]!) : undefined };
}

/**
 * In seeds that split (and merge): `count` more clients that run only isolation transactions (with
 * the draws above) from a second before the first split is due until the fault window ends, so
 * that transactions are in flight whenever a split or merge applies. Their own random stream.
 */
export async function runRangeChangeClients(
  count: number,
  fromMs: number,
  untilMs: number,
  rng: Rng,
  clock: { now(): number; sleep(ms: number): Promise<void> },
  transaction: (rng: Rng) => Promise<void>,
): Promise<void> {
  const client = async (own: Rng): Promise<void> => {
    await clock.sleep(Math.max(0, fromMs - clock.now()) + own.int(200));
    for (let i = 0; i < 400 && clock.now() < untilMs; i++) {
      await transaction(own);
      await clock.sleep(5 + own.int(50));
    }
  };
  await Promise.all(Array.from({ length: count }, () => client(rng.fork())));
}
