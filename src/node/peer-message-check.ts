/**
 * Checks a decoded Raft message from a peer for content the Raft core would assert on (src/raft
 * asserts its invariants and is entitled to: a broken one is a bug). A peer that holds the secret
 * but sends forged or corrupt content must not trip those assertions, so the node refuses such a
 * message before step(): it returns why, and the node drops the message (raft-driver.ts
 * stepMessages). What the core handles safely itself (stale terms, unknown indexes, a commit past
 * the log, which it clamps) is left to it.
 */
import type { Message } from '../raft/types.js';

export interface PeerMessageContext {
  /** Every node of the cluster (--peers): a snapshot's membership must name only these. */
  readonly knownNodes: ReadonlyMap<number, string>;
  /** The last index of the receiving group's log (answers claiming more are forged). */
  readonly lastIndex: number;
}

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
  if (members.some((id) => !context.knownNodes.has(id))) return 'a snapshot names a node that is not in the cluster';
  return undefined;
}
