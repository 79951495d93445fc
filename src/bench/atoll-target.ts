/** The benchmark's operations on Atoll, through the public client (pipelined over one stream per node). */
import type { AtollClient, ShardedCounter } from '../client/index.js';
import { transactionRetries, type BenchTarget, type ReadConsistency } from './bench-target.js';

export class AtollTarget implements BenchTarget {
  readonly system = 'atoll' as const;

  /** `transactionTimeoutMs` bounds a whole transaction, its conflict retries included. */
  /** The sharded counters `incr` writes to with --sharded N, by counter name. */
  private readonly counters = new Map<string, ShardedCounter>();

  constructor(
    private readonly client: AtollClient,
    private readonly transactionTimeoutMs: number,
    /** With a shard count, `increment` goes to a sharded counter of that many shards. */
    private readonly shards?: number,
  ) {}

  async put(key: string, value: Uint8Array): Promise<void> {
    await this.client.put(key, value);
  }

  async get(key: string, consistency: ReadConsistency): Promise<boolean> {
    return (await this.client.get(key, { consistency })).found;
  }

  async increment(key: string): Promise<void> {
    if (this.shards === undefined) {
      await this.client.increment(key, 1);
      return;
    }
    let counter = this.counters.get(key);
    if (counter === undefined) {
      counter = this.client.shardedCounter(key.replaceAll('/', '-'), { shards: this.shards });
      this.counters.set(key, counter);
    }
    await counter.increment(1);
  }

  async readPrefix(prefix: string): Promise<number> {
    return (await this.client.getByPrefix(prefix, { limit: 1_000 })).items.length;
  }

  async readTwoWriteTwo(keyA: string, keyB: string, value: Uint8Array): Promise<void> {
    const bucket = keyA.slice(0, keyA.indexOf('/'));
    await this.client.transaction(
      bucket,
      async (tx) => {
        await Promise.all([tx.get(keyA), tx.get(keyB)]);
        await tx.put(keyA, value);
        await tx.put(keyB, value);
      },
      { retries: transactionRetries, timeoutMs: this.transactionTimeoutMs },
    );
  }

  close(): void {
    this.client.close();
  }
}
