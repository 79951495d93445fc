/**
 * Opens and deletes this node's partition replicas on its storage. Which partitions a node holds
 * is data: the replicas it has on disk (each group's configuration lives in its Raft log and
 * snapshots), plus, once, when a brand-new node founds the cluster, the ones the static placement
 * seeds (placement.ts). A replica a move adds starts empty (openEmpty) and fills from a snapshot; a
 * replica moved away is deleted whole (deleteOps): state machine, log and hard state together.
 */
import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import type { BucketHashName } from '../../keys/bucket-hash.js';
import type { Limits } from '../../limits.js';
import { KeyIndexBudget, MvccStore } from '../../mvcc/index.js';
import type { VersionCache } from '../../mvcc/version-cache.js';
import type { Rng } from '../../raft/rng.js';
import type { ConfState } from '../../raft/types.js';
import { concatBytes, prefixRange } from '../../storage/bytes.js';
import { nodeKeyPrefix, partitionKeyPrefix } from '../../storage/keyspace.js';
import type { StorageEngine, WriteOperation } from '../../storage/storage-engine.js';
import { NODE_DEFAULTS, type AtollNodeConfig } from '../node-config.js';
import { discardInterruptedInstall, PartitionReplica, type GroupSettings, type StagedSnapshots } from '../replica/partition-replica.js';
import { leaseDurationMs } from '../replica/read-barrier.js';
import { deleteLeftoverSpools, spoolRange } from '../snapshot/snapshot-spool.js';
import { stagedDeleteOps } from '../snapshot/snapshot-staging.js';
import { RaftLogKeys } from '../raftlog/raft-log-codec.js';
import { PersistentLogStorage } from '../raftlog/raft-log-store.js';
import { absorbedBy, MergeApplier } from './merge-apply.js';
import { tombstoneOps } from './merge-tombstones.js';
import { SplitApplier } from './split-apply.js';
import { splitGroupsOnDisk } from './split-groups.js';
import { healKey, SplitHeal, type HealLoop } from './split-heal.js';
import type { NodeClock } from '../ports.js';

/**
 * Written (synced, with the seeded groups' founding records) the first time a node opens: from
 * then on the node opens only the replicas on its disk, never the static placement's again (a
 * replica moved away must not come back at the next start).
 */
const SEEDED_KEY = concatBytes(nodeKeyPrefix(), new TextEncoder().encode('placement-seeded'));

/** At most this many keys of one replica are deleted (in one batch); a bigger one is a broken invariant. */
const DELETE_SCAN_LIMIT = 10_000_000;

export interface ReplicaStoreOptions {
  readonly id: number;
  readonly config: AtollNodeConfig;
  readonly engine: StorageEngine;
  readonly limits: Limits;
  readonly versionCache: VersionCache;
  readonly clock: NodeClock;
  readonly random: Rng;
  readonly logger: Logger;
  /** The cluster's bucket hash (its descriptor): MVCC checks each key's bucket belongs here by it. */
  readonly hashFunction: BucketHashName;
  /** Snapshots staged by the node's receiver (snapshot-receiver.ts), for the replicas' installs. */
  readonly stagedSnapshots?: StagedSnapshots;
  /** Adds a group a split created to the node's loop (RaftDriver.addGroup); without it splits are refused... never proposed. */
  readonly addGroup?: (replica: PartitionReplica) => void;
  /** The node's loop: replicas a snapshot install finds it skipped the split of join it (split-heal.ts). */
  readonly loop?: HealLoop;
  /**
   * A merge applied here (merge-apply.ts): the right partition's replica leaves the loop and the
   * routing table. Without it merge entries are a broken invariant (nothing proposes them).
   */
  readonly mergedAway?: (right: PartitionReplica, into: number) => void;
}

export class ReplicaStore {
  private readonly settings: GroupSettings;
  /** The leader lease's length (read-barrier.ts), for --read-mode lease. */
  private readonly leaseMs: number;

  /** Applies split entries for every replica this store opens (split-apply.ts). */
  private readonly splits: SplitApplier;
  /** Opens the partitions a snapshot install skipped the split of (split-heal.ts). */
  readonly heal: SplitHeal;
  /** Applies merge freezes and merges for every replica this store opens (merge-apply.ts). */
  private readonly merges: MergeApplier;
  /**
   * The node's key index memory, shared by every partition's store (key-index.ts): a partition
   * with many keys uses what the others leave. A replica the node's loop drops gives its bytes back
   * (RaftDriverOptions.onGroupDropped, MvccStore.releaseKeyIndex).
   */
  readonly keyIndexBudget: KeyIndexBudget;

  constructor(private readonly options: ReplicaStoreOptions) {
    this.keyIndexBudget = new KeyIndexBudget(options.config.keyIndexBytes ?? NODE_DEFAULTS.keyIndexBytes);
    const { config } = options;
    this.heal = new SplitHeal({
      engine: options.engine,
      logger: options.logger,
      initialPartitions: config.partitions,
      openEmpty: (id) => this.open(id, true),
      nowMs: () => options.clock.monotonicMs(),
      disabled: config.testBugs?.splitHealDisabled === true,
    });
    if (options.loop !== undefined) this.heal.attach(options.loop);
    this.splits = new SplitApplier({
      engine: options.engine,
      initialPartitions: config.partitions,
      replicationFactor: config.replicationFactor,
      logger: options.logger,
      openStore: (id) => this.openStore(id),
      openReplica: (id) => this.open(id, false),
      addGroup: (replica) => {
        assert.ok(options.addGroup !== undefined, 'a node that applies splits adds their groups');
        options.addGroup(replica);
      },
    });
    this.merges = new MergeApplier({
      initialPartitions: config.partitions,
      logger: options.logger,
      replica: (id) => options.loop?.groups.get(id),
      raftDeleteOps: (id) => this.deleteOps(id, { keepStateMachine: true }),
      tombstoneOps,
      mergedAway: (right, into) => {
        assert.ok(options.mergedAway !== undefined, 'a node that applies merges takes the merged partition out');
        this.heal.forget(right.id);
        options.mergedAway(right, into);
      },
      ...(options.loop !== undefined && config.testBugs?.mergeLeavesLeftovers !== true && { enqueue: (task: () => void) => options.loop?.enqueue(task), hosted: () => options.loop?.groups.values() ?? [] }),
      deleteLeftover: (right, into) => this.deleteLeftover(right.id, into),
    });
    this.settings = {
      electionTicks: config.electionTicks,
      // A heartbeat round every second tick (200 ms at the default tick), not every tick: an awake
      // group's rounds were half the Raft messages of a put at 1,024 partitions (issue 18). Still
      // five rounds per election timeout, and the lease (leaseDurationMs) outlasts two of them.
      heartbeatTicks: 2,
      // Quiesce as soon as a group has been idle for two ticks (the quiesce request tells the
      // followers the commit): with many partitions each sees a write only now and then, and an
      // awake group heartbeats every second tick.
      quiesceAfterTicks: 2,
      commitNotices: config.coalesceRaftMessages === true,
      snapshotEveryEntries: config.snapshotEveryEntries,
      logEntriesKeptAfterSnapshot: config.logEntriesKeptAfterSnapshot ?? 1_000,
    };
    // The negative control stretches the lease past the voters' refusal window (three election timeouts).
    this.leaseMs = config.testBugs?.leaseIgnoresMargin === true ? 3 * config.electionTicks * config.tickMs : leaseDurationMs(config.electionTicks, config.tickMs);
  }

  /**
   * Every replica this node holds: those on disk; on a node's very first start (no seed mark and
   * nothing on disk) also the partitions `seed` names, founded with that membership. A node that
   * holds data from before placement was data (no mark, some replica on disk) opens what it has.
   */
  async openAll(seed: (partition: number) => number[]): Promise<PartitionReplica[]> {
    const { engine, config, id } = this.options;
    const seeded = (await engine.get(SEEDED_KEY)) !== undefined;
    const replicas: PartitionReplica[] = [];
    const missing: number[] = [];
    for (let partition = 0; partition < config.partitions; partition++) {
      const replica = await this.open(partition, false);
      if (replica !== undefined) replicas.push(replica);
      else missing.push(partition);
    }
    // Partitions splits created (ids past the equal table's, split-entry.ts): found on disk.
    for (const partition of await splitGroupsOnDisk(engine, config.partitions)) {
      const replica = await this.open(partition, false);
      if (replica !== undefined) replicas.push(replica);
    }
    // Empty replicas of partitions an install skipped the split of, whose open a crash may have cut off.
    replicas.push(...(await this.heal.reopen(new Set(replicas.map((replica) => replica.id)))));
    const ops: WriteOperation[] = [];
    if (!seeded && replicas.length === 0) {
      for (const partition of missing) {
        const voters = seed(partition);
        if (!voters.includes(id)) continue;
        const replica = await this.open(partition, true, { founders: { voters, learners: [] }, ops });
        if (replica !== undefined) replicas.push(replica);
      }
    }
    if (!seeded) ops.push({ type: 'put', key: SEEDED_KEY, value: Uint8Array.of(1) });
    await engine.write(ops, { sync: true });
    replicas.sort((a, b) => a.id - b.id);
    return this.dropAbsorbed(replicas);
  }

  /**
   * Opens `partition`'s replica from disk; undefined when the disk holds no Raft state for it and
   * `evenIfEmpty` is false. With `evenIfEmpty`, an empty replica (no log, no members: it waits
   * for its leader's snapshot), or with `bootstrap` a new group of those founders, whose records
   * the caller writes (synced) before the node runs.
   */
  async open(partition: number, evenIfEmpty: boolean, bootstrap?: { founders: ConfState; ops: WriteOperation[] }): Promise<PartitionReplica | undefined> {
    const { engine, config, limits, versionCache, logger, clock, random } = this.options;
    let replica: PartitionReplica | undefined;
    const windowBytes = Math.floor((config.raftLogMemoryBytes ?? NODE_DEFAULTS.raftLogMemoryBytes) / Math.max(1, config.partitions));
    const storage = await PersistentLogStorage.load(engine, partition, {
      snapshotData: (meta) => (replica as PartitionReplica).snapshotData(meta),
    }, { windowBytes });
    if (!evenIfEmpty && storage.lastIndex() === 0 && storage.snapshotMeta().index === 0) return undefined;
    const mvcc = await this.openStore(partition);
    const nonAtomicSnapshotInstall = config.testBugs?.nonAtomicSnapshotInstall === true;
    const interrupted = nonAtomicSnapshotInstall ? undefined : await discardInterruptedInstall(storage, mvcc);
    // Chunks a crash left staged are of no use: the transfer starts again (snapshot-staging.ts).
    const staged = await stagedDeleteOps(engine, partition);
    if (staged.length > 0) await engine.write(staged);
    // So are the chunks of an export a crash left spooled: the leader exports again when Raft asks.
    const spooled = await deleteLeftoverSpools(engine, partition);
    if (spooled > 0) logger.info({ partition, keys: spooled }, 'deleted a snapshot spool a crash left behind');
    if (interrupted !== undefined) {
      logger.warn({ partition, index: interrupted }, 'a crash interrupted a snapshot install: discarded it; the leader sends it again');
    }
    // The founding records go into the caller's synced batch; the replica reads them from memory.
    if (bootstrap !== undefined && storage.lastIndex() === 0) bootstrap.ops.push(...storage.stageBootstrap(bootstrap.founders));
    replica = new PartitionReplica(
      partition,
      this.options.id,
      storage,
      mvcc,
      this.settings,
      random.fork(),
      (reason) => logger.warn({ partition, reason }, 'refused a snapshot from the leader; the transfer restarts'),
      {
        nowMs: () => clock.monotonicMs(),
        nonAtomicSnapshotInstall,
        applyBeforeCommit: config.testBugs?.applyBeforeCommit === true,
        noticeCommitBeyondMatch: config.testBugs?.noticeCommitBeyondMatch === true,
        ...(config.readMode !== 'safe' ? { lease: { nowMs: () => clock.monotonicMs(), leaseMs: this.leaseMs } } : {}),
        ...(this.options.stagedSnapshots && { stagedSnapshots: this.options.stagedSnapshots }),
        spool: { engine, logger },
        splits: this.splits,
        merges: this.merges,
        splitHeal: this.heal,
      },
    );
    return replica;
  }

  /** Opens `partition`'s MVCC store (clearing its entries in the node's version cache). */
  private async openStore(partition: number): Promise<MvccStore> {
    const { engine, config, limits, versionCache } = this.options;
    versionCache.clear(partition);
    return MvccStore.open({
      engine,
      prefix: partitionKeyPrefix('mvcc', partition),
      partition: { id: partition, count: config.partitions, hash: this.options.hashFunction },
      limits,
      ...(config.testBugs?.noDedup ? { dedupDisabled: true } : {}),
      ...(config.testBugs?.dedupForgetsOnSnapshot ? { dedupForgetsOnSnapshot: true } : {}),
      ...(config.testBugs?.serializableSkipsPrefixValidation ? { serializableSkipsPrefixValidation: true } : {}),
      ...(config.testBugs?.splitKeepsMovedKeys ? { splitKeepsMovedKeys: true } : {}),
      versionCache: { cache: versionCache, storeId: partition },
      // The node's key index budget, shared over its partitions (split partitions included).
      keyIndexMaxBytes: this.keyIndexBudget,
    });
  }

  /**
   * Deletes a replica a merge absorbed while this node did not apply the merge (merge-apply.ts
   * absorbedBy), with its merged-start record, in one synced batch.
   */
  async deleteLeftover(partition: number, into: number): Promise<void> {
    const ops = [...(await this.deleteOps(partition)), ...tombstoneOps(partition, into)];
    await this.options.engine.write(ops, { sync: true });
    this.options.logger.info({ partition, into, keys: ops.length }, 'deleted a replica a merge absorbed');
  }

  /**
   * Drops the replicas among `replicas` that a merge absorbed (a crash may have come between an
   * install that covered them and their deletion): called at start, before the loop runs them.
   */
  async dropAbsorbed(replicas: PartitionReplica[]): Promise<PartitionReplica[]> {
    const absorbed = new Map<PartitionReplica, number>();
    if (this.options.config.testBugs?.mergeLeavesLeftovers === true) return replicas;
    for (const left of replicas) for (const right of absorbedBy(left, replicas)) absorbed.set(right, left.id);
    for (const [right, into] of absorbed) await this.deleteLeftover(right.id, into);
    return replicas.filter((replica) => !absorbed.has(replica));
  }

  /**
   * The operations that delete every record of `partition` on this node (its Raft log, hard state
   * and snapshot record, and its state machine), for one synced batch: after it, the node holds
   * nothing of the partition and does not open it at the next start. `keepStateMachine`: all but
   * the MVCC records (a merge moves and deletes those itself, merge-plan.ts).
   */
  async deleteOps(partition: number, options: { readonly keepStateMachine?: boolean } = {}): Promise<WriteOperation[]> {
    const { engine, versionCache } = this.options;
    versionCache.clear(partition);
    this.heal.forget(partition);
    // The heal record, if the replica was opened for a skipped split (split-heal.ts).
    const ops: WriteOperation[] = [{ type: 'del', key: healKey(partition) }];
    const mvccPrefix = partitionKeyPrefix('mvcc', partition);
    const ranges = [new RaftLogKeys(partition).groupRange(), prefixRange(partitionKeyPrefix('staging', partition)), spoolRange(partition)];
    if (options.keepStateMachine !== true) ranges.push(prefixRange(mvccPrefix));
    for (const range of ranges) {
      for await (const [key] of engine.iterate(range)) {
        ops.push({ type: 'del', key });
        if (ops.length >= DELETE_SCAN_LIMIT) throw new Error(`partition ${partition}: too many keys to delete in one batch`);
      }
    }
    return ops;
  }
}
