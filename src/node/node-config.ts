/**
 * The configuration of one node (AtollNodeConfig), its defaults, and the deliberate defects the
 * fault suite plants. Apart from atoll-node.ts so that every room can read it without importing
 * the node that wires them.
 */
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { BucketHashName } from '../keys/bucket-hash.js';
import type { Limits } from '../limits.js';
import type { TenantGrant } from '../api/tenant-grant.js';
import type { FailedAuthGate } from './ports.js';
import type { AutoSplitConfig } from './cluster/auto-split.js';
import type { MemberState } from './cluster/membership-table.js';

/** The cluster a node started with --join learned from a member (src/peer/join.ts); recorded in its descriptor at its first start. */
export interface JoinedCluster {
  readonly clusterId: string;
  readonly hashFunction: BucketHashName;
  readonly partitions: number;
  readonly replicationFactor: number;
  /** The members as the member answered, and this node, joining. */
  readonly members: ReadonlyArray<{ id: number; clientAddress: string; peerAddress: string; state: MemberState; zone: string }>;
  /** This node's state as the member listed it, when it is listed ('joining' after add-node; 'active' for a node that joined before). */
  readonly listedAs?: string;
}

export interface AtollNodeConfig {
  readonly id: number;
  /** Every node's id and client/peer address (host:port), including this one. */
  readonly peers: ReadonlyMap<number, string>;
  readonly dataDir: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  /**
   * The bucket hash a NEW cluster routes by (--bucket-hash; default defaultBucketHash). A data
   * directory's recorded descriptor decides afterwards (cluster-descriptor.ts); giving another
   * hash then is refused.
   */
  readonly bucketHash?: BucketHashName;
  /** Every node's peer port address (--peer-addresses), recorded in the cluster descriptor; absent: not recorded. */
  readonly peerAddresses?: ReadonlyMap<number, string>;
  /** Milliseconds per Raft tick. Election timeout is electionTicks of these. */
  readonly tickMs: number;
  readonly electionTicks: number;
  /**
   * How linearizable reads learn their index (--read-mode): 'lease' (default) serves them on the
   * leader without a message while its lease holds, else a ReadIndex round; 'safe' always takes the
   * round. See src/node/replica/read-barrier.ts.
   */
  readonly readMode?: 'safe' | 'lease';
  /**
   * Coalesce Raft traffic per peer (issue 35; src/node/replica/node-batch.ts): every group's commit notices
   * to a peer travel as one node-level item per frame instead of a commit-only append per group,
   * and every group's acknowledgements to a leader's node as one item. Off by default for rolling
   * upgrades: a node of an older version refuses frames carrying these items, so turn it on only
   * once every node runs a version that decodes them (any version with this option does).
   */
  readonly coalesceRaftMessages?: boolean;
  /** Keep this many revisions of history per partition; older versions are compacted. */
  readonly retentionRevisions: number;
  readonly snapshotEveryEntries: number;
  /** Log entries kept behind a snapshot point for followers that lag a little (default 1,000; tests lower it). */
  readonly logEntriesKeptAfterSnapshot?: number;
  /** Memory for the newest versions of recently used keys, shared by every partition (default NODE_DEFAULTS.cacheBytes). */
  readonly cacheBytes?: number;
  /** Memory for Raft log entries, all partitions together (default NODE_DEFAULTS.raftLogMemoryBytes; log-window.ts). */
  readonly raftLogMemoryBytes?: number;
  /** Memory for the key indexes, all partitions together (default NODE_DEFAULTS.keyIndexBytes; src/mvcc/key-index.ts). */
  readonly keyIndexBytes?: number;
  /** Largest value a write may carry (default 1 MiB); must leave room in one gRPC message. */
  readonly maxValueBytes?: number;
  /** Tokens a tenant admin may create for its tenant (default limits.maxTokensPerTenant). */
  readonly maxTokensPerTenant?: number;
  /** Other limits that differ from src/limits.ts (tests lower the admission bounds). */
  readonly limits?: Partial<Limits>;
  /** Deliberate defects for the fault suite's negative controls; never set in production. */
  readonly testBugs?: NodeTestBugs;
  /** Every node's admin HTTP address (metrics, health), host:port, for ClusterInfo; absent: none listed. */
  readonly adminAddresses?: ReadonlyMap<number, string>;
  /** Addresses to dial peers at, when not their advertised ones (a harness's fault proxies). */
  readonly dialAddresses?: ReadonlyMap<number, string>;
  /** How to dial peers (peer mutual TLS, server/server-tls.ts); plaintext when absent. */
  readonly peerCredentials?: grpc.ChannelCredentials;
  /**
   * The bootstrap cluster admin token. When set, every call must present a token (src/node/service/auth.ts)
   * and keys are tenant-scoped; every node of a cluster must be given the same one.
   */
  readonly adminToken?: string;
  /**
   * Grants held by listeners of this process (the etcd port's --etcd-tenant): a call without a
   * token that carries one of these objects acts as its tenant (src/api/tenant-grant.ts). Only
   * these objects count; nothing from the wire can be one.
   */
  readonly tenantGrants?: readonly TenantGrant[];
  /**
   * The failed-authentication tracker the client port's listener shares (it closes the connections
   * the tracker names and refuses blocked sources at accept); absent: the node keeps its own.
   */
  readonly failedAuths?: FailedAuthGate;
  /**
   * The cluster peer secrets (src/node/peers/peer-secret.ts), current first: the first is sent on every
   * call to a peer, all are accepted from peers. They never authorize a client call. Absent: one
   * random secret of this process, which only a one-node cluster can work with.
   */
  readonly peerSecrets?: readonly string[];
  /** Set when the node joins a running cluster (--join): what it learned from a member. */
  readonly joined?: JoinedCluster;
  /** This node's --zone label: recorded in the member table at creation (placement spreads replicas over zones). */
  readonly zone?: string;
  /** The rebalancer's bounds (rebalancer.ts; default REBALANCE_DEFAULTS). */
  readonly rebalance?: { readonly maxInFlight?: number; readonly pauseMs?: number };
  /** Automatic splits past a size or load threshold (auto-split.ts; --auto-split-*); absent or no threshold: off. */
  readonly autoSplit?: AutoSplitConfig;
  readonly logger: Logger;
}

/**
 * Defects the fault-injection suite plants to prove its checkers catch them (negative controls).
 * atoll-server accepts them only with ATOLL_ALLOW_TEST_BUGS=1.
 */
export interface NodeTestBugs {
  /** Serve linearizable reads from any replica's local state, without a ReadIndex round. */
  readonly readsWithoutQuorum?: boolean;
  /** Acknowledge a write as soon as the leader appends it, before it commits. */
  readonly ackBeforeCommit?: boolean;
  /** Ignore request ids: a retried write applies again (breaks exactly-once increments). */
  readonly noDedup?: boolean;
  /** Commit a transaction's first write in a log entry of its own: a snapshot, conflict or crash in between leaves half of it. */
  readonly tornTransactions?: boolean;
  /** A follower sends its acknowledgements (and votes) before its synced write instead of after it. */
  readonly followerAckBeforeSync?: boolean;
  /** A replica applies the entries it appends at once, before they commit. */
  readonly applyBeforeCommit?: boolean;
  /** A follower commits a commit notice's index without checking that its log matches the leader's there (src/raft/commit-notice.ts), and leaders send notices to followers they probe too. */
  readonly noticeCommitBeyondMatch?: boolean;
  /** A state-machine snapshot carries no dedup records: a retry after an install applies again. */
  readonly dedupForgetsOnSnapshot?: boolean;
  /** A SERIALIZABLE commit checks its read keys but not its read prefixes. */
  readonly serializableSkipsPrefixValidation?: boolean;
  /** Today's snapshot install, which a crash during or right after it leaves unable to restart (issue 16). */
  readonly nonAtomicSnapshotInstall?: boolean;
  /** The leader lease lasts three election timeouts: no margin for the voters' refusal window or clock drift. */
  readonly leaseIgnoresMargin?: boolean;
  /** A replica move removes its source while the new learner is still catching up (before promoting it): the partition is left with RF - 1 voters. */
  readonly moveRemovesSourceEarly?: boolean;
  /** A split copies the moved keys into the new partition but keeps them in the source too. */
  readonly splitKeepsMovedKeys?: boolean;
  /** A replica whose snapshot install shrank its range (it skipped a split) does not open the new partition: it runs with RF - 1 replicas. */
  readonly splitHealDisabled?: boolean;
  /** A replica of L that installs a snapshot taken after a merge keeps the R it hosts (merge-apply.ts absorbedBy never runs): a frozen, leaderless leftover; and the stray check keeps frozen replicas of merged-away partitions too (stray-check.ts), the later defence against the same leftover. */
  readonly mergeLeavesLeftovers?: boolean;
  /** A restarted node forgets which replicas a move opened on it: one whose first snapshot predates its addition is deleted as "moved away" while it is a voter. */
  readonly movedAwayAfterRestart?: boolean;
  /** A leader keeps a learner whose move stopped before promoting it (no move is coordinated for it anywhere): it stays in the configuration for good. */
  readonly orphanLearnersKept?: boolean;
  /** A leader never asks a voter that holds no replica to open one (voter-holes.ts): a split partition a node missed runs on RF - 1 copies. */
  readonly voterHolesKept?: boolean;
  /** At start only the first loop iteration's campaign of preferred leaders, and no postponed elections elsewhere: a peer that starts later leaves groups to their election timers (an election storm at 1,024 partitions). */
  readonly noStartupCampaigns?: boolean;
  /** A merge does not reset the left partition's watch hub: the right side's history comes in at revisions the hub claims to hold (issue 32). */
  readonly hubNotResetOnMerge?: boolean;
  /** A snapshot import (or a merge) raises a partition's revision without telling its watch hub (issue 32). */
  readonly hubNotToldOfInstall?: boolean;
  /** A transaction's scope is decided by the initial equal partition table and its reads are routed by key (issue 32). */
  readonly txnScopeByInitialTable?: boolean;
  /** A replica opened empty for a move votes at once (no vote floor): fresh from a snapshot older than its node's removal, it votes as the voter it was (issue 32). */
  readonly prepareWithoutVoteFloor?: boolean;
  /** A stale watch captures its replica at start and never notices the replica was removed from this node (issue 32). */
  readonly staleWatchIgnoresRemoval?: boolean;
  /** The lock service grants a waiter as soon as it sees its predecessor's delete proposed, before it is applied (issue 32). */
  readonly lockGrantsBeforeDelete?: boolean;
}

export const NODE_DEFAULTS = {
  partitions: 64,
  replicationFactor: 3,
  tickMs: 100,
  electionTicks: 10,
  retentionRevisions: 100_000,
  /** Applied entries between log compactions; with 1,000 kept behind, a partition holds at most 3,000 entries in memory. */
  snapshotEveryEntries: 2_000,
  /**
   * The newest versions of recently used keys kept in memory (src/mvcc/version-cache.ts). 128 MiB
   * holds about 195,000 keys of 128-byte values. 256 MiB was no faster while everything fitted and
   * slower once full: its few hundred thousand long-lived entries cost the nodes garbage collection
   * (1,000,000 keys right after the preload: puts 681 and gets 4,460 ops/s with 256 MiB, 1,157 and
   * 5,498 with 128; at 100,000 keys the two measure the same; docs/performance.md).
   */
  cacheBytes: 128 * 1024 * 1024,
  /**
   * Raft log entries kept in memory, all partitions together: each partition keeps the newest
   * raftLogMemoryBytes / partitions bytes of its log (src/node/raftlog/log-window.ts), older entries are
   * read from LevelDB when a lagging follower needs them. Before, every retained entry (up to
   * 3,000 per partition) stayed in memory: about 80 MB per node at 64 partitions (docs/performance.md).
   * 16 MiB is 256 KiB per partition at 64 partitions, about 700 entries of a 128-byte put: more than
   * a follower or the apply lags in a healthy cluster.
   */
  raftLogMemoryBytes: 16 * 1024 * 1024,
  /**
   * The key indexes (every stored key's newest revision, src/mvcc/key-index.ts), all partitions
   * together: one budget they share, so a partition with many keys uses what small ones leave.
   * About 150 bytes per key of 20 characters: 64 MiB holds about 400,000 keys. A partition whose
   * index finds no room drops it and reads LevelDB instead (an iterator per missed lookup) until
   * its next start; raise it for more keys (--key-index-mb).
   */
  keyIndexBytes: 64 * 1024 * 1024,
};
