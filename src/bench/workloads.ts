/**
 * The benchmark's workloads: which keys each touches and what one operation is. Keys are chosen by
 * a seeded generator, so two runs with the same seed send the same sequence of keys per worker.
 *
 * Key layout (the same for every system):
 * - `bench-<i>`, i < keys: the main key space. No `/`, so every key is its own bucket and the keys
 *   spread over all of Atoll's partitions.
 * - `bench-counter`: the one hot key of `incr`.
 * - `bench-prefix/<i>`, i < 100: one bucket of 100 keys for `prefix`.
 * - `bench-txn-<b>/a` and `/b`, b < keys: two keys of one bucket per transaction.
 */
import { AtollError } from '../errors.js';
import type { Rng } from '../raft/rng.js';
import type { BenchTarget } from './bench-target.js';

export const workloadNames = ['put', 'get', 'stale-get', 'mixed', 'incr', 'prefix', 'txn'] as const;
export type WorkloadName = (typeof workloadNames)[number];

export const prefixBucketKeyCount = 100;

export const benchKeys = Object.freeze({
  main: (index: number): string => `bench-${index}`,
  counter: 'bench-counter',
  prefixBucket: 'bench-prefix/',
  prefixKey: (index: number): string => `bench-prefix/${index}`,
  txnKey: (bucket: number, name: 'a' | 'b'): string => `bench-txn-${bucket}/${name}`,
});

export interface WorkloadSettings {
  /** Size of the main key space (and of the transaction buckets). */
  readonly keys: number;
  readonly valueSize: number;
  /** Share of reads in `mixed`, in [0, 1]. */
  readonly readRatio: number;
}

/** One operation; resolves when the system has answered. */
export type Operation = () => Promise<void>;

/** Keys a workload reads and so needs written before it is measured. */
export function preloadKeysOf(workload: WorkloadName, settings: WorkloadSettings): { main: number; prefix: number } {
  switch (workload) {
    case 'get':
    case 'stale-get':
    case 'mixed':
      return { main: settings.keys, prefix: 0 };
    case 'prefix':
      return { main: 0, prefix: prefixBucketKeyCount };
    case 'put':
    case 'incr':
    case 'txn':
      return { main: 0, prefix: 0 };
  }
}

/** A value of `size` printable bytes, made once and sent by every write. */
export function benchValue(size: number, rng: Rng): Buffer {
  const value = Buffer.alloc(size);
  for (let i = 0; i < size; i++) value[i] = 0x61 + rng.int(26);
  return value;
}

/** The operation generator of one worker: each call performs one operation of `workload`. */
export function operationOf(workload: WorkloadName, target: BenchTarget, settings: WorkloadSettings, rng: Rng, value: Uint8Array): Operation {
  const randomKey = (): string => benchKeys.main(rng.int(settings.keys));
  switch (workload) {
    case 'put':
      return () => target.put(randomKey(), value);
    case 'get':
      return async () => void (await target.get(randomKey(), 'linearizable'));
    case 'stale-get':
      return async () => void (await target.get(randomKey(), 'stale'));
    case 'mixed':
      return async () => (rng.chance(settings.readRatio) ? void (await target.get(randomKey(), 'linearizable')) : target.put(randomKey(), value));
    case 'incr':
      return () => target.increment(benchKeys.counter);
    case 'prefix':
      return async () => void (await target.readPrefix(benchKeys.prefixBucket));
    case 'txn':
      return () => {
        const bucket = rng.int(settings.keys);
        return target.readTwoWriteTwo(benchKeys.txnKey(bucket, 'a'), benchKeys.txnKey(bucket, 'b'), value);
      };
  }
}

export function parseWorkloads(text: string): WorkloadName[] {
  const names = text.split(',').map((name) => name.trim()).filter((name) => name !== '');
  for (const name of names) {
    if (!(workloadNames as readonly string[]).includes(name)) throw new AtollError('INVALID_ARGUMENT', `unknown workload ${JSON.stringify(name)}; choose from ${workloadNames.join(', ')}`);
  }
  if (names.length === 0) throw new AtollError('INVALID_ARGUMENT', 'name at least one workload');
  return [...new Set(names)] as WorkloadName[];
}
