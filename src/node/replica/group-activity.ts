/**
 * Which Raft groups the node loop must visit, so its work follows the ACTIVE groups rather than all
 * of them (raft-driver.ts). Every RawNode is attached to this room (RawNode.attachHost): its calls
 * that may give the group work (step, propose, readIndex, transfer, campaign, tick, a host's
 * notifyHost) mark it `dirty` and `awake`. An iteration readies only dirty groups; a node tick
 * ticks only awake groups and parks the quiesced ones.
 *
 * Invariants (asserted where they can break, explained here):
 * - A group outside `awake` is quiesced: it leaves `awake` only when a tick finds it quiesced, and
 *   whatever wakes it (Raft unquiesces only inside step, propose, readIndex, transfer, campaign and
 *   reportUnreachable) runs through a RawNode call that touches it, which puts it back.
 * - A parked group's clock is not lost: RawNode catches its Raft ticks up to `ticks` (the node's tick
 *   counter, its TickSource) before any call reads or changes it, so election timers, CheckQuorum
 *   and the lease see the time that passed. Parking only withholds ticks that would change
 *   nothing but counters (Raft.skipQuiescedTicks): safety cannot depend on it.
 * - A group with work left after its Ready (more committed entries than one Ready carries) stays
 *   dirty until it has none.
 */
import assert from 'node:assert/strict';
import type { RawNode, TickSource } from '../../raft/rawnode.js';

/** Every this many node ticks, every group is visited once (housekeeping the groups' own calls do not signal). */
const SWEEP_EVERY_TICKS = 10;

export class GroupActivity implements TickSource {
  /** The node's tick count (TickSource): RawNodes attached here catch up to it. */
  ticks = 0;
  private dirty = new Set<number>();
  private readonly awake = new Set<number>();
  private ticksSinceSweep = 0;
  /** Raft ticks run on groups (tests and metrics: falls when groups quiesce). */
  groupTicks = 0;

  /** Attaches a group's RawNode; it starts awake and dirty. */
  attach(id: number, raw: RawNode): void {
    raw.attachHost(this, () => this.touch(id));
    this.touch(id);
  }

  touch(id: number): void {
    this.dirty.add(id);
    this.awake.add(id);
  }

  /** Marks a group for the next iteration only (its own housekeeping, e.g. after a snapshot export). */
  visit(id: number): void {
    this.dirty.add(id);
  }

  get hasDirty(): boolean {
    return this.dirty.size > 0;
  }

  /** Groups awake now (tests). */
  get awakeCount(): number {
    return this.awake.size;
  }

  /** The dirty groups, in the order they were marked; the set starts empty again. */
  takeDirty(): Set<number> {
    const taken = this.dirty;
    this.dirty = new Set();
    return taken;
  }

  /**
   * `due` node ticks: each awake group catches up (RawNode.tick), and the ones found quiesced are
   * parked. Every SWEEP_EVERY_TICKS ticks, every group is marked dirty once.
   */
  tick(due: number, groups: ReadonlyMap<number, { readonly raw: RawNode; readonly installing?: boolean }>): void {
    if (due <= 0) return;
    this.ticks += due;
    for (const id of this.awake) {
      const group = groups.get(id);
      if (group === undefined) {
        this.awake.delete(id);
        continue;
      }
      // An installing group's RawNode is not touched until its import's Ready is advanced
      // (snapshot-imports.ts); it stays awake and ticks again after.
      if (group.installing === true) continue;
      group.raw.tick();
      this.groupTicks += due;
      if (group.raw.quiesced) this.awake.delete(id);
    }
    this.ticksSinceSweep += due;
    if (this.ticksSinceSweep >= SWEEP_EVERY_TICKS) {
      this.ticksSinceSweep = 0;
      for (const [id, group] of groups) {
        if (group.installing === true) continue;
        // The parking invariant (see the top of this file): a group left unticked is quiesced, so
        // it misses no tick that could start an election or a CheckQuorum round.
        if (!(this.awake.has(id) || group.raw.quiesced)) assert.fail(`group ${id} is parked (unticked) but not quiesced`);
        this.dirty.add(id);
      }
    }
  }
}
