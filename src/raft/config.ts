import assert from 'node:assert/strict';
import type { Rng } from './rng.js';
import type { LogStorage } from './storage.js';
import type { NodeId, Snapshot, VoteFloor } from './types.js';

/**
 * Deliberate defects for negative controls: the simulator must catch each one. Never set outside
 * tests; the node refuses to start with any of them.
 */
export interface RaftBugs {
  /** Commit an entry once a quorum stores it, whatever its term (the Figure 8 mistake, §5.4.2). */
  readonly commitPreviousTerm?: boolean;
  /** Answer ReadIndex with the commit index without confirming leadership with a quorum. */
  readonly readIndexWithoutQuorum?: boolean;
  /** No CheckQuorum: a leader never steps down and voters ignore leader stickiness (§9.6). */
  readonly skipCheckQuorum?: boolean;
  /**
   * A follower commits a commit notice through min(commit, its last index), without checking that
   * its log matches the leader's at the notice's index (commit-notice.ts N2); and, so that such a
   * follower meets notices it must refuse, a leader sends them to followers it probes as well.
   */
  readonly noticeCommitBeyondMatch?: boolean;
}

export interface RaftConfig {
  readonly id: NodeId;
  readonly storage: LogStorage;
  /** Seeded randomness for election-timeout jitter; never Math.random. */
  readonly rng: Rng;
  /** Last index the host's state machine has applied (on restart). */
  readonly applied?: number;
  /** A follower campaigns after a random timeout in [electionTicks, 2 * electionTicks). */
  readonly electionTicks?: number;
  readonly heartbeatTicks?: number;
  /** Thesis §9.6: a disrupted server first checks it could win before bumping the term. */
  readonly preVote?: boolean;
  /** Thesis §6.2: a leader steps down when it has not heard from a quorum for an election timeout. */
  readonly checkQuorum?: boolean;
  /** 'safe': every ReadIndex confirms leadership with a heartbeat round. 'lease': skip the round while the lease provably holds. */
  readonly readMode?: 'safe' | 'lease';
  /** Ticks subtracted from the lease to cover clock-rate drift between nodes. */
  readonly leaseMarginTicks?: number;
  readonly maxMessageBytes?: number;
  readonly maxInflightMessages?: number;
  readonly maxInflightBytes?: number;
  readonly maxUncommittedBytes?: number;
  readonly maxCommittedBytesPerReady?: number;
  readonly maxPendingReads?: number;
  readonly snapshotChunkBytes?: number;
  /** A leader with nothing to do for this many ticks tells its followers to go quiet; 0 disables. */
  readonly quiesceAfterTicks?: number;
  /**
   * A host that drains the node through RawNode.ready() may let a leader batch its appends (issue
   * 18): a proposal and a commit advance only mark the followers as owed an append, and ready()
   * sends ONE append per follower carrying every entry proposed since, and the newest commit index.
   * An append that carries only the commit index to a replicating follower asks for no answer.
   * Off: every proposal and commit advance sends at once (the etcd-io/raft behaviour).
   */
  readonly batchAppends?: boolean;
  /**
   * With batchAppends: what would be a commit-only append to a replicating follower is a message of
   * type 'commit' instead (types.ts Message), which a host coalesces with every other group's for
   * the same peer into one node-level notice (src/node/replica/node-batch.ts). Off: commit-only appends.
   */
  readonly commitNotices?: boolean;
  /**
   * Checks a snapshot received from the leader, once all its chunks arrived, before the core
   * installs it: false refuses it (the transfer restarts from its first chunk), so data that would
   * not install never replaces the log. Default: accept.
   */
  readonly acceptSnapshot?: (snapshot: Snapshot) => boolean;
  /**
   * A log position this node votes for, and campaigns with, only once a log reaches it (types.ts
   * VoteFloor). A host sets it on a replica it opened empty to be added to the group, to the
   * leader's (term, commit index) when it asked: Raft ids here are node ids, so the replica may be a
   * new incarnation of one the group removed, and a snapshot older than that removal names it a
   * voter with a log that forgot what the old one acknowledged. A log at or past the floor holds
   * every entry committed when the floor was taken: the leader of `term` held them, a log ending in
   * that term at or past `index` matches its log there, and a leader of a later term holds every
   * entry committed before it (Leader Completeness). So the replica never helps elect a log that
   * lacks a committed entry; and since no such log can win a correct election anyway, the floor
   * costs no liveness.
   */
  readonly voteFloor?: VoteFloor;
  readonly bugs?: RaftBugs;
}

export type ResolvedRaftConfig = Required<Omit<RaftConfig, 'bugs'>> & { readonly bugs: RaftBugs };

export const RAFT_DEFAULTS = {
  electionTicks: 10,
  heartbeatTicks: 1,
  preVote: true,
  checkQuorum: true,
  readMode: 'safe' as 'safe' | 'lease',
  leaseMarginTicks: 2,
  maxMessageBytes: 1024 * 1024,
  maxInflightMessages: 256,
  maxInflightBytes: 32 * 1024 * 1024,
  maxUncommittedBytes: 64 * 1024 * 1024,
  maxCommittedBytesPerReady: 16 * 1024 * 1024,
  maxPendingReads: 10_000,
  snapshotChunkBytes: 512 * 1024,
  quiesceAfterTicks: 0,
  batchAppends: false,
  commitNotices: false,
  voteFloor: { term: 0, index: 0 } as VoteFloor,
  acceptSnapshot: (_snapshot: Snapshot): boolean => true,
};

export function resolveRaftConfig(config: RaftConfig): ResolvedRaftConfig {
  const resolved: ResolvedRaftConfig = {
    ...RAFT_DEFAULTS,
    applied: 0,
    ...stripUndefined(config),
    bugs: config.bugs ?? {},
  } as ResolvedRaftConfig;
  if (config.snapshotChunkBytes === undefined) {
    (resolved as { snapshotChunkBytes: number }).snapshotChunkBytes = Math.min(RAFT_DEFAULTS.snapshotChunkBytes, resolved.maxMessageBytes);
  }
  assert.ok(Number.isInteger(resolved.id) && resolved.id > 0, 'raft: id must be a positive integer');
  assert.ok(resolved.heartbeatTicks >= 1, 'raft: heartbeatTicks >= 1');
  assert.ok(resolved.electionTicks > resolved.heartbeatTicks, 'raft: electionTicks must exceed heartbeatTicks');
  assert.ok(resolved.maxInflightMessages >= 1 && resolved.maxInflightBytes >= resolved.maxMessageBytes, 'raft: inflight limits must admit one full message');
  assert.ok(resolved.maxUncommittedBytes >= resolved.maxMessageBytes, 'raft: uncommitted limit must admit one full message');
  assert.ok(resolved.snapshotChunkBytes >= 1 && resolved.snapshotChunkBytes <= resolved.maxMessageBytes, 'raft: snapshot chunks must fit in a message');
  if (resolved.readMode === 'lease') {
    // The lease is only sound while voters refuse to elect anyone else during it (CheckQuorum).
    assert.ok(resolved.checkQuorum, 'raft: lease reads require checkQuorum');
    assert.ok(resolved.leaseMarginTicks >= 1 && resolved.leaseMarginTicks < resolved.electionTicks, 'raft: lease margin must be within the election timeout');
  }
  return resolved;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
