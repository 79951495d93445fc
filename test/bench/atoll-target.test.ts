/** `atoll bench --sharded N`: the incr workload writes through a sharded counter instead of one key. */
import { describe, expect, it } from 'vitest';
import type { AtollClient } from '../../src/client/index.js';
import { AtollTarget } from '../../src/bench/atoll-target.js';

function fakeClient() {
  const calls: string[] = [];
  const client = {
    increment: async (key: string) => void calls.push(`increment ${key}`),
    shardedCounter: (name: string, options: { shards: number }) => {
      calls.push(`sharded ${name} ${options.shards}`);
      return { increment: async (delta: number) => void calls.push(`shard-increment ${name} ${delta}`) };
    },
  };
  return { client: client as unknown as AtollClient, calls };
}

describe('AtollTarget increments', () => {
  it('hit the one hot key without --sharded', async () => {
    const { client, calls } = fakeClient();
    const target = new AtollTarget(client, 1000);
    await target.increment('bench-counter/n');
    await target.increment('bench-counter/n');
    expect(calls).toEqual(['increment bench-counter/n', 'increment bench-counter/n']);
  });

  it('go through one sharded counter of N shards with --sharded N', async () => {
    const { client, calls } = fakeClient();
    const target = new AtollTarget(client, 1000, 8);
    await target.increment('bench-counter/n');
    await target.increment('bench-counter/n');
    expect(calls).toEqual(['sharded bench-counter-n 8', 'shard-increment bench-counter-n 1', 'shard-increment bench-counter-n 1']);
  });
});
