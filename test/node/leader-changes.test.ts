/** The status page's ring of leader changes (src/node/service/leader-changes.ts). */
import { describe, expect, it } from 'vitest';
import { LEADER_CHANGES_KEPT, LeaderChangeLog } from '../../src/node/service/leader-changes.js';
import { noMetrics, type NodeMetrics } from '../../src/node/metrics.js';

const clock = { monotonicMs: () => 0, wallMs: () => 1_000 };

describe('LeaderChangeLog', () => {
  it('records a change per new non-zero leader, with the last known leader as from', () => {
    const log = new LeaderChangeLog(clock, (partition) => partition + 10);
    log.observe(0, 1);
    log.observe(0, 0); // the leaderless moment of an election is not a change
    log.observe(0, 1); // the same leader again is not one either
    log.observe(0, 2);
    expect(log.recent()).toEqual([
      { partition: 0, from: 0, to: 1, term: 10, atMs: 1_000 },
      { partition: 0, from: 1, to: 2, term: 10, atMs: 1_000 },
    ]);
  });

  it('keeps at most LEADER_CHANGES_KEPT, the newest', () => {
    const log = new LeaderChangeLog(clock, () => 1);
    for (let i = 0; i < LEADER_CHANGES_KEPT * 3; i++) log.observe(0, (i % 3) + 1);
    const recent = log.recent();
    expect(recent).toHaveLength(LEADER_CHANGES_KEPT);
    expect(recent.at(-1)?.to).toBe(((LEADER_CHANGES_KEPT * 3 - 1) % 3) + 1);
  });

  it('taps a metrics port: every leaderChanged reaches both', () => {
    const seen: Array<[number, number]> = [];
    const metrics: NodeMetrics = { ...noMetrics, leaderChanged: (partition, leader) => seen.push([partition, leader]) };
    const log = new LeaderChangeLog(clock, () => 1);
    const tapped = log.tapping(metrics);
    tapped.leaderChanged(3, 2);
    tapped.electionStarted(3);
    expect(seen).toEqual([[3, 2]]);
    expect(log.recent().map((c) => [c.partition, c.to])).toEqual([[3, 2]]);
  });
});
