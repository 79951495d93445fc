/**
 * Checks a decoded Raft message from a peer for content the Raft core would assert on (src/raft
 * asserts its invariants and is entitled to: a broken one is a bug). A peer that holds the secret
 * but sends forged or corrupt content must not trip those assertions, so the node refuses such a
 * message before step(): it returns why, and the node drops the message (raft-driver.ts
 * stepMessages). What the core handles safely itself (stale terms, unknown indexes, a commit past
 * the log, which it clamps) is left to it.
 */
import type { Message } from '../../raft/types.js';
import type { SnapshotTransferItem } from '../raft-wire.js';

export interface PeerMessageContext {
  /** The last index of the receiving group's log (answers claiming more are forged). */
  readonly lastIndex: number;
}

/** Members one snapshot's configuration may name at most (RF + 1 during a move; far above it). */
const MAX_SNAPSHOT_MEMBERS = 64;

const isIndex = (value: number | undefined): boolean => value === undefined || (Number.isSafeInteger(value) && value >= 0);

/** Why `message` must be dropped, or undefined when the core may step it. */
export function refusalOf(message: Message, context: PeerMessageContext): string | undefined {
  if (!Number.isSafeInteger(message.term) || message.term < 0) return 'term out of range';
  for (const field of [message.index, message.logTerm, message.commit, message.rejectHint, message.offset, message.readSeq, message.leaseTick]) {
    if (!isIndex(field)) return 'an index or term field out of range';
  }
  switch (message.type) {
    case 'app':
      return entriesRefusal(message);
    case 'snap':
      return snapshotRefusal(message, context);
    case 'appResp':
      // A leader moves its follower's match to this index and commits by it: never past its own log.
      if (!message.reject && (message.index ?? 0) > context.lastIndex) return 'acknowledges entries the leader does not have';
      return undefined;
    default:
      return undefined;
  }
}

/** Appended entries follow the message's index one by one, with terms that never go back. */
function entriesRefusal(message: Message): string | undefined {
  const entries = message.entries ?? [];
  let previousTerm = message.logTerm ?? 0;
  let expectedIndex = (message.index ?? 0) + 1;
  for (const entry of entries) {
    if (entry.index !== expectedIndex) return 'entries are not contiguous after the message index';
    if (!Number.isSafeInteger(entry.term) || entry.term < previousTerm || entry.term > message.term) return 'an entry term is out of order';
    previousTerm = entry.term;
    expectedIndex++;
  }
  return undefined;
}

function snapshotRefusal(message: Message, context: PeerMessageContext): string | undefined {
  const meta = message.snapshot;
  const chunk = message.chunk;
  if (meta === undefined || chunk === undefined) return 'a snapshot message without its metadata or chunk';
  if (!Number.isSafeInteger(meta.index) || meta.index < 1 || !Number.isSafeInteger(meta.term) || meta.term < 1 || meta.term > message.term) {
    return 'snapshot index or term out of range';
  }
  if (!Number.isSafeInteger(chunk.offset) || chunk.offset < 0) return 'snapshot chunk offset out of range';
  const { voters, learners } = meta.confState;
  const members = [...voters, ...learners];
  if (voters.length === 0) return 'a snapshot with no voters';
  if (new Set(members).size !== members.length) return 'a snapshot names a member twice';
  // Node ids, not necessarily nodes this one knows: a snapshot taken before a move finished names
  // the move's source, which may since have been removed from the cluster before this node joined
  // (it never heard of it), or a member added after this node last read the member table. The
  // transport sends nothing to an id it cannot dial. (Requiring known ids left a node that joined
  // after such a removal refusing every snapshot of that partition: the move onto it never ended.)
  if (members.length > MAX_SNAPSHOT_MEMBERS) return 'a snapshot names too many members';
  if (members.some((id) => !Number.isSafeInteger(id) || id < 1 || id > 0xffff_ffff)) return 'a snapshot names an id that is not a node id';
  return undefined;
}

/**
 * Why a snapshot transfer item (snapshot-transfer.ts) must be dropped before its sender or receiver
 * looks at it, or undefined: fields out of range, or a chunk larger than a chunk may be. Whether
 * the item belongs to a transfer this node expects, in order, is the receiver's and sender's check.
 */
export function transferRefusal(item: SnapshotTransferItem, maxChunkBytes: number): string | undefined {
  if (!Number.isSafeInteger(item.term) || item.term < 1) return 'snapshot transfer term out of range';
  if (!Number.isSafeInteger(item.index) || item.index < 1 || !Number.isSafeInteger(item.snapTerm) || item.snapTerm < 1 || item.snapTerm > item.term) {
    return 'snapshot transfer index or term out of range';
  }
  if (item.kind === 'chunk' && item.data.length > maxChunkBytes) return 'a snapshot chunk larger than a chunk may be';
  if (item.kind === 'chunk' && item.data.length === 0) return 'an empty snapshot chunk';
  return undefined;
}

/**
 * A leader's message (appends, heartbeat, snapshot, commit notice) at the receiving replica's term or newer. Such
 * a message is stepped even when its sender is not a member of the replica's configuration: a
 * replica that was down while a move added a node has not applied that change, and once the added
 * node leads, everything the replica needs to catch up comes from it (refusing it left the replica
 * behind for good: the whole-node simulator's seed 17 with membership changes). Safe: at most one
 * leader exists per term, and the Raft core rejects what a stale leader sends; vote requests from
 * non-members stay refused (a removed node must not disrupt the group).
 */
export function fromLeaderAtTerm(message: Pick<Message, 'type' | 'term'>, term: number): boolean {
  return (message.type === 'app' || message.type === 'heartbeat' || message.type === 'snap' || message.type === 'commit') && message.term >= term;
}
