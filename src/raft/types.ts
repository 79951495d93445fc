/**
 * Wire and state types of the Raft core. Everything here is plain data: the core never does I/O,
 * so these objects are what the host persists, sends and applies.
 */

/** A node identity. 0 means "nobody" (no vote, no known leader). */
export type NodeId = number;
export const NONE: NodeId = 0;

export enum EntryType {
  Normal = 0,
  ConfChange = 1,
}

export interface Entry {
  readonly term: number;
  readonly index: number;
  readonly type: EntryType;
  readonly data: Uint8Array;
}

/** What must be on stable storage before any message of the same Ready is sent (Raft §5.1, Fig. 2). */
export interface HardState {
  readonly term: number;
  readonly vote: NodeId;
  readonly commit: number;
}

/**
 * A log position (the leader's term and commit index when a host opened an empty replica for an
 * addition) that a log must reach, in Raft's up-to-date order (§5.4.1), before the replica votes for
 * it or campaigns with it (RaftConfig.voteFloor). { term: 0, index: 0 }: none.
 */
export interface VoteFloor {
  readonly term: number;
  readonly index: number;
}

/** Whether a log ending at (lastTerm, lastIndex) is at least `floor` in Raft's up-to-date order. */
export function reachesVoteFloor(lastTerm: number, lastIndex: number, floor: VoteFloor): boolean {
  return lastTerm > floor.term || (lastTerm === floor.term && lastIndex >= floor.index);
}

/** Group membership. Learners receive the log but neither vote nor count towards a quorum. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

export interface SnapshotMeta {
  readonly index: number;
  readonly term: number;
  readonly confState: ConfState;
}

export interface Snapshot {
  readonly meta: SnapshotMeta;
  readonly data: Uint8Array;
}

/** Single-server membership change (Raft thesis §4.1); takes effect when the entry is applied. */
export type ConfChange =
  | { readonly type: 'addVoter'; readonly node: NodeId }
  | { readonly type: 'addLearner'; readonly node: NodeId }
  | { readonly type: 'removeNode'; readonly node: NodeId };

export type Role = 'follower' | 'preCandidate' | 'candidate' | 'leader';

export type MessageType =
  | 'app'
  | 'appResp'
  | 'vote'
  | 'voteResp'
  | 'preVote'
  | 'preVoteResp'
  | 'heartbeat'
  | 'heartbeatResp'
  | 'snap'
  | 'snapResp'
  | 'timeoutNow'
  | 'readIndex'
  | 'readIndexResp'
  | 'commit';

export interface SnapshotChunk {
  /** Byte offset of `data` within the whole snapshot payload. */
  readonly offset: number;
  readonly data: Uint8Array;
  readonly last: boolean;
}

/**
 * A 'commit' message (RaftConfig.commitNotices) is what a commit-only append carried, without the
 * append: term, index and logTerm (the leader's entry just before the follower's next index) and
 * commit. A follower at that term whose log holds (index, logTerm) commits through min(commit,
 * index) (src/raft/commit-notice.ts) and sends no answer. Hosts carry them coalesced per peer
 * (src/node/replica/node-batch.ts).
 *
 * One Raft message. Fields beyond the header are used by some types only; the comment on each says
 * which. Kept as one flat shape (like etcd's raftpb.Message) so transports can encode it generically.
 */
export interface Message {
  readonly type: MessageType;
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: number;
  /** app/commit: term of the entry at `index`; vote/preVote: candidate's last term; appResp reject: hint term. */
  readonly logTerm?: number;
  /** app: index preceding `entries`; commit: the follower's next index minus one (as an append's); appResp: last matching index (or rejected index); vote: last index; snapResp: snapshot index; readIndexResp: read index. */
  readonly index?: number;
  readonly entries?: readonly Entry[];
  /** app/heartbeat/commit: leader commit; appResp/heartbeatResp: follower commit; vote/preVote: candidate commit (a voter whose log holds the candidate's last entry commits through it). */
  readonly commit?: number;
  readonly reject?: boolean;
  /** appResp reject: the follower's guess of the highest index that may match. */
  readonly rejectHint?: number;
  /** snap: the snapshot being sent, and one chunk of it. */
  readonly snapshot?: SnapshotMeta;
  readonly chunk?: SnapshotChunk;
  /** snapResp: next byte offset the follower expects. */
  readonly offset?: number;
  /** heartbeat/heartbeatResp: ReadIndex round being confirmed (leader's sequence number). */
  readonly readSeq?: number;
  /** heartbeat/heartbeatResp: leader's tick count when the heartbeat was sent (for the lease). */
  readonly leaseTick?: number;
  /** heartbeat: the leader is going quiet; heartbeatResp: the follower went quiet too. */
  readonly quiesce?: boolean;
  /** vote: campaign started by a leadership transfer; voters skip the leader-stickiness check. */
  readonly force?: boolean;
  /**
   * app: an append with no entries that only tells a replicating follower the commit index; a
   * follower whose log matches applies the commit and sends no answer (batchAppends).
   */
  readonly commitOnly?: boolean;
  /** readIndex/readIndexResp: the caller's request context. */
  readonly context?: string;
}

/** A linearizable read that is safe to serve once the state machine has applied `index`. */
export interface ReadState {
  readonly index: number;
  readonly context: string;
}

export interface SoftState {
  readonly lead: NodeId;
  readonly role: Role;
}

export function isLocalVoteRequest(type: MessageType): boolean {
  return type === 'vote' || type === 'preVote';
}

export function entryBytes(entry: Entry): number {
  // Header estimate (term, index, type) plus payload: what a transport will roughly spend on it.
  return 24 + entry.data.length;
}

export function entriesBytes(entries: readonly Entry[]): number {
  let total = 0;
  for (const entry of entries) total += entryBytes(entry);
  return total;
}

export function hardStateEqual(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

export const EMPTY_HARD_STATE: HardState = { term: 0, vote: NONE, commit: 0 };

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

export function encodeConfChange(change: ConfChange): Uint8Array {
  return textEncoder.encode(JSON.stringify(change));
}

export function decodeConfChange(data: Uint8Array): ConfChange {
  const parsed = JSON.parse(textDecoder.decode(data)) as ConfChange;
  if (!['addVoter', 'addLearner', 'removeNode'].includes(parsed.type) || !(parsed.node > 0)) {
    throw new Error(`malformed conf change: ${textDecoder.decode(data)}`);
  }
  return parsed;
}
