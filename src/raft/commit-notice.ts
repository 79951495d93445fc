/**
 * A follower's side of a commit notice (RaftConfig.commitNotices; a message of type 'commit',
 * types.ts): what a commit-only append told a replicating follower, without the append. The leader
 * sends one where it would have sent an append with no entries (Raft.maybeSendAppend); a host
 * carries every group's notices for one peer as one node-level message (src/node/replica/node-batch.ts).
 *
 * Invariants (why a notice may commit, and how far; each is asserted or enforced below or in
 * Raft.stepCommitNotice):
 * N1 A notice is stepped only by a follower at the notice's own term. A term has at most one
 *    leader, so the notice is that leader's, and it carries the leader's commit index, which is a
 *    fact for good: every entry at or below it is committed (Leader Completeness, §5.4).
 * N2 It commits through at most min(notice.commit, notice.index), and only when this log holds the
 *    entry at notice.index with notice.logTerm, the leader's term of that entry. Then this log
 *    equals the leader's through notice.index (Log Matching, §5.3), so the entries it commits are
 *    the committed ones. This is an append's rule exactly: an append commits through
 *    min(commit, last new entry), and only once its (index, logTerm) matched (RaftLog.maybeAppend).
 *    A notice that does not match commits nothing and is not answered: the leader's next append
 *    or heartbeat (whose commit is min(match, commit), what it knows this log holds) teaches it.
 * N3 The commit index never passes this log's last index and never goes back (RaftLog.commitTo).
 *
 * Nothing answers a notice, as nothing answered a commit-only append: the follower reports its
 * commit in its next heartbeat answer. Quiescence does not wait for that report: the quiesce
 * request carries the commit, and a follower goes quiet only once it holds it (Raft.maybeQuiesce).
 */
import assert from 'node:assert/strict';
import type { RaftLog } from './log.js';
import type { ResolvedRaftConfig } from './config.js';
import type { Message, NodeId, Role } from './types.js';

/** What of a Raft node (raft.ts) a notice reads and changes. */
export interface NoticeRaft {
  readonly id: NodeId;
  readonly role: Role;
  readonly term: number;
  readonly config: ResolvedRaftConfig;
  readonly log: RaftLog;
  lead: NodeId;
  electionElapsed: number;
  messages: Message[];
}

/**
 * A leader's notice to `to` (Raft.maybeSendAppend, where batchAppends would send a commit-only
 * append to a replicating follower whose next index is index + 1): the append's (index, logTerm,
 * commit) without the append. Nothing in flight changes, as for an append without entries.
 * Returns true (a message went out).
 */
export function sendCommitNotice(raft: NoticeRaft, to: NodeId, index: number): boolean {
  if (!(raft.role === 'leader' && raft.config.commitNotices)) assert.fail(`node ${raft.id} (${raft.role}) sends a commit notice`);
  const logTerm = raft.log.maybeTerm(index) ?? 0;
  raft.messages.push({ type: 'commit', from: raft.id, to, term: raft.term, index, logTerm, commit: raft.log.committed });
  return true;
}

/**
 * A follower steps a notice (Raft.step, before any term handling). N1: only a follower at the
 * notice's term takes it (its leader's, like an append of that term, so it restarts the election
 * timer and names the leader as one would); any other term or role ignores it, which is as safe as
 * losing it. Never answered.
 */
export function stepCommitNotice(raft: NoticeRaft, notice: Message): void {
  if (notice.term !== raft.term || raft.role !== 'follower') return;
  raft.electionElapsed = 0;
  raft.lead = notice.from;
  commitFromNotice(raft.log, notice, raft.config.bugs.noticeCommitBeyondMatch === true);
}

/**
 * Commits what `notice` proves committed in `log` (N2, N3); returns the new commit index, or
 * undefined when it taught nothing. `beyondMatch` is the negative control
 * (RaftBugs.noticeCommitBeyondMatch): commit through min(commit, last index) without the match.
 */
export function commitFromNotice(log: RaftLog, notice: Message, beyondMatch: boolean): number | undefined {
  const index = notice.index;
  const logTerm = notice.logTerm;
  const commit = notice.commit;
  if (index === undefined || logTerm === undefined || commit === undefined) return undefined;
  if (beyondMatch) {
    const through = Math.min(commit, log.lastIndex());
    if (through <= log.committed) return undefined;
    log.commitTo(through);
    return through;
  }
  // N2: the leader's entry at `index` is this log's entry at `index`, or the notice proves nothing.
  if (!log.matchTerm(index, logTerm)) return undefined;
  const through = Math.min(commit, index);
  if (through <= log.committed) return undefined;
  const before = log.committed;
  log.commitTo(through);
  // N2, N3: advanced, through no more than the matching entry, and within the log.
  if (!(log.committed === through && through > before && through <= index && through <= log.lastIndex())) {
    assert.fail(`commit notice moved commit ${before} to ${log.committed}, notice (${index}, ${logTerm}, ${commit}), last ${log.lastIndex()}`);
  }
  return through;
}
