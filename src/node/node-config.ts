/**
 * The configuration of one node (AtollNodeConfig), its defaults, and the deliberate defects the
 * fault suite plants. Apart from atoll-node.ts so that every room can read it without importing
 * the node that wires them.
 */
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { BucketHashName } from '../keys/bucket-hash.js';
import type { Limits } from '../limits.js';

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
  /** Keep this many revisions of history per partition; older versions are compacted. */
  readonly retentionRevisions: number;
  readonly snapshotEveryEntries: number;
  /** Log entries kept behind a snapshot point for followers that lag a little (default 1,000; tests lower it). */
  readonly logEntriesKeptAfterSnapshot?: number;
  /** Memory for the newest versions of recently used keys, shared by every partition (default NODE_DEFAULTS.cacheBytes). */
  readonly cacheBytes?: number;
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
   * The bootstrap cluster admin token. When set, every call must present a token (src/node/auth.ts)
   * and keys are tenant-scoped; every node of a cluster must be given the same one.
   */
  readonly adminToken?: string;
  /**
   * The cluster peer secrets (src/node/peer-secret.ts), current first: the first is sent on every
   * call to a peer, all are accepted from peers. They never authorize a client call. Absent: one
   * random secret of this process, which only a one-node cluster can work with.
   */
  readonly peerSecrets?: readonly string[];
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
  /** A state-machine snapshot carries no dedup records: a retry after an install applies again. */
  readonly dedupForgetsOnSnapshot?: boolean;
  /** A SERIALIZABLE commit checks its read keys but not its read prefixes. */
  readonly serializableSkipsPrefixValidation?: boolean;
  /** Today's snapshot install, which a crash during or right after it leaves unable to restart (issue 16). */
  readonly nonAtomicSnapshotInstall?: boolean;
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
};
