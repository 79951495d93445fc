/**
 * A node's key index memory (--key-index-mb) is one budget its partitions share
 * (src/mvcc/key-index.ts KeyIndexBudget): a partition with more keys than an equal share keeps
 * its index while the node has room (a tenant's etcd keyspace is one bucket, so one partition),
 * and a replica the node drops gives its bytes back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { keyIndexEntryBytes } from '../../src/mvcc/key-index.js';
import { partitionOf } from '../../src/keys/partition-table.js';
import { driverOf, expectAllLed, InProcessCluster, waitFor } from './in-process-cluster.js';

const PARTITIONS = 4;
const KEYS = 40;

describe('the key index budget of a node', () => {
  let cluster: InProcessCluster | undefined;
  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  it('lets one partition index more keys than an equal share, and takes back the bytes of a replica the node drops', async () => {
    // An equal share would hold 12 keys a partition; the node has room for 48.
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000, partitions: PARTITIONS, keyIndexBytes: PARTITIONS * 12 * keyIndexEntryBytes('kb/00') });
    await cluster.start();
    const started = cluster;
    for (const id of [1, 2, 3]) await expectAllLed(started.node(id), 10_000);
    const partition = partitionOf('kb/0', PARTITIONS, 'murmur3_32');
    // Written at the partition's leader (the in-process network forwards nothing).
    const leader = started.leaderId(partition)!;
    for (let index = 0; index < KEYS; index++) await started.node(leader).put({ key: `kb/${index}`, value: new TextEncoder().encode(`v${index}`) }, { deadlineMs: Date.now() + 5_000 });
    for (const id of [1, 2, 3]) {
      const replica = started.groups(id).get(partition)!;
      // Every node applied every write (the followers a little later).
      expect(await waitFor(() => replica.mvcc.status().revision >= KEYS, 10_000)).toBe(true);
      expect(replica.mvcc.keyIndexStatus()).toMatchObject({ complete: true, keys: KEYS });
      expect(replica.mvcc.keyIndexStatus().bytes).toBeGreaterThan(12 * keyIndexEntryBytes('kb/00'));
    }
    // Node 3 drops the replica (as a move away does): its index is emptied, its bytes given back.
    const dropped = started.groups(3).get(partition)!;
    driverOf(started.node(3)).removeGroup(partition);
    expect(dropped.mvcc.keyIndexStatus()).toMatchObject({ complete: false, keys: 0, bytes: 0 });
  });
});
