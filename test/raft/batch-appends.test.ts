/**
 * batchAppends (RaftConfig; issue 18): proposals and commit advances between two ready() calls go
 * out as ONE append per follower, and an append that only carries the commit index to a
 * replicating follower is not answered. Without it (the etcd-io/raft behaviour) every proposal
 * sends an append to every follower and every commit advance a round of empty appends, each
 * answered: at one write per group per loop iteration that was eight of a put's nine messages.
 */
import { describe, expect, it } from 'vitest';
import { Harness } from './harness.js';

const led = (batchAppends: boolean): Harness => Harness.led({ batchAppends });
/** Proposes `count` entries at the leader without draining it in between (one loop iteration's tasks). */
const proposeMany = (h: Harness, count: number): void => h.proposeMany(1, count);

describe('batched appends', () => {
  it('send one append per follower for all the proposals of an iteration', () => {
    const batched = led(true);
    proposeMany(batched, 10);
    const apps = batched.queue.filter((m) => m.type === 'app');
    expect(apps.map((m) => `${m.to}:${m.entries?.length}`).sort()).toEqual(['2:10', '3:10']);
    batched.stabilize();
    for (const id of [1, 2, 3]) expect(batched.appliedTexts(id)).toHaveLength(11);

    // The control: one append per proposal per follower.
    const unbatched = led(false);
    proposeMany(unbatched, 10);
    expect(unbatched.queue.filter((m) => m.type === 'app')).toHaveLength(20);
  });

  it('do not answer an append that only carries the commit index; the followers still apply at once', () => {
    const h = led(true);
    proposeMany(h, 3);
    h.deliver((m) => m.type === 'app');
    // Both answers reach the leader in one iteration: one commit advance, one commit-only append each.
    h.deliver((m) => m.type === 'appResp');
    const commitOnly = h.queue.filter((m) => m.type === 'app');
    expect(commitOnly.map((m) => `${m.to}:${m.entries?.length ?? 0}:${m.commitOnly === true}`).sort()).toEqual(['2:0:true', '3:0:true']);
    h.deliver();
    expect(h.queue).toEqual([]);
    for (const id of [1, 2, 3]) expect(h.appliedTexts(id)).toEqual(['first', 'v0', 'v1', 'v2']);

    const control = led(false);
    proposeMany(control, 3);
    control.deliver((m) => m.type === 'app');
    control.deliver((m) => m.type === 'appResp');
    control.deliver((m) => m.type === 'app');
    expect(control.queue.filter((m) => m.type === 'appResp').length).toBeGreaterThan(0);
  });

  it('a lost commit-only append is made good by the next heartbeat, and the group still quiesces', () => {
    const h = new Harness([1, 2, 3], { batchAppends: true, quiesceAfterTicks: 3 });
    h.campaign(1);
    h.stabilize();
    proposeMany(h, 2);
    h.deliver((m) => m.type === 'app');
    h.deliver((m) => m.type === 'appResp');
    expect(h.drop((m) => m.commitOnly === true)).toHaveLength(2);
    expect(h.appliedTexts(2)).toEqual([]);
    h.run(3);
    for (const id of [1, 2, 3]) expect(h.appliedTexts(id)).toEqual(['v0', 'v1']);
    h.run(20);
    for (const id of [1, 2, 3]) expect(h.status(id).quiesced).toBe(true);
  });

  it('a follower whose log does not match a commit-only append answers, and is repaired', () => {
    const h = led(true);
    proposeMany(h, 2);
    // Follower 3 loses the entries; it then gets the commit-only append whose previous index it lacks.
    h.drop((m) => m.type === 'app' && m.to === 3);
    h.deliver((m) => m.type === 'app');
    h.deliver((m) => m.type === 'appResp');
    const toThree = h.queue.filter((m) => m.type === 'app' && m.to === 3);
    expect(toThree).toHaveLength(1);
    expect(toThree[0]?.commitOnly).toBe(true);
    h.deliver((m) => m.type === 'app' && m.to === 3);
    expect(h.queue.some((m) => m.type === 'appResp' && m.from === 3 && m.reject === true)).toBe(true);
    h.stabilize();
    expect(h.appliedTexts(3)).toEqual(['first', 'v0', 'v1']);
  });
});
