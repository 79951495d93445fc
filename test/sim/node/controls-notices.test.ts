import { describe, expect, it } from 'vitest';
import { expectControlCaught } from './seed-range.js';

/**
 * Commit notices (issue 35, src/raft/commit-notice.ts): a follower commits a notice only through
 * min(commit, index), and only once its log holds the leader's entry at index (N2). The negative
 * control: followers that skip the match, sent notices while their leader still probes them, apply
 * an isolated old leader's uncommitted entries; a stale watch on such a replica misses an
 * acknowledged put (watch checker), and the catching seed passes without the defect.
 */
describe('whole-node simulator: commit notices', () => {
  it('a follower committing a notice beyond its matching log applies uncommitted entries (watch checker)', async () => {
    const caught = await expectControlCaught('noticeCommitBeyondMatch');
    expect(caught.failure.message).toMatch(/was not delivered/);
  }, 300_000);
});
