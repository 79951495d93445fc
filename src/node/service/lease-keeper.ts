/**
 * Leases at a partition's leader: it serves lease calls (grant, keepalive, revoke, info), keeps
 * each lease's deadline, and proposes the revocation of a lease whose deadline passed. The leases
 * themselves (tenant, TTL, keys) are replicated state (mvcc/lease-table.ts); their deadlines are
 * not: keepalives never go through the log.
 *
 * The etcd approach. A leader gives a lease a deadline the first time it sees it (it granted it,
 * took over leadership, applied its grant, or installed a snapshot with it): now + ttl on its
 * monotonic clock. A keepalive, acknowledged only after a ReadIndex round confirmed this node
 * still leads, moves the deadline to now + ttl. Losing leadership forgets every deadline (a later
 * term starts afresh). Invariant: a lease never expires earlier than ttl after its last
 * acknowledged keepalive, because the leader that acknowledged it expires it no earlier, and any
 * later leader took over after that acknowledgement and counts a full ttl from its takeover.
 * The decision is the leader's alone (a follower's clock, skewed or not, decides nothing); the
 * `leaseRevoke` entry carries it to every replica, which delete the same keys at one revision.
 * Once a deadline passed, the lease is doomed at this leader: keepalives answer LEASE_NOT_FOUND.
 */
import type { Logger } from 'pino';
import { AtollError } from '../../errors.js';
import { defaultTenant, tenantOfInternalKey } from '../../keys/tenant-keys.js';
import type { Limits } from '../../limits.js';
import { encodeCommand, type ApplyResult, type Command } from '../../mvcc/index.js';
import type { LeaseRecord } from '../../mvcc/lease-table.js';
import type * as api from '../../api/node-api.js';
import { formatLeaseId, parseLeaseId } from '../../api/lease-id.js';
import { encodeEntryPayload, type PartitionReplica } from '../replica/partition-replica.js';
import type { NodeClock, NodeTimers, TimerHandle } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';

/** How often a leader looks for leases whose deadline passed. */
export const LEASE_TICK_MS = 100;
/** Revocations of expired leases the node proposes per tick, at most. */
const REVOKES_PER_TICK = 64;
/**
 * Every this many rounds (1 s), a round looks at every partition for leases this leader has not
 * seen yet; the rounds between visit only the partitions it keeps deadlines for. Idle work is then
 * proportional to the partitions with leases, not to all partitions.
 */
const FULL_SCAN_EVERY_ROUNDS = 10;

export interface LeaseKeeperOptions {
  readonly partitions: number;
  readonly limits: Limits;
  readonly driver: RaftDriver<PartitionReplica>;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
  readonly logger: Logger;
}

/** What a lease call may do on its replica: the executor's proposal and ReadIndex barrier. */
export interface LeaseCallTools {
  propose(command: Command): Promise<ApplyResult>;
  readBarrier(): Promise<void>;
}

/** One partition's deadlines, for one term of this node's leadership. */
interface LeaderLeases {
  readonly term: number;
  /** Monotonic ms at which each lease seen in this term ends unless kept alive. */
  readonly deadlines: Map<number, number>;
  /** Leases whose revocation this leader proposed and has not seen answered. */
  readonly revoking: Set<number>;
}

export class LeaseKeeper {
  private readonly leaders = new Map<number, LeaderLeases>();
  private timer: TimerHandle | undefined;
  private rounds = 0;

  constructor(private readonly options: LeaseKeeperOptions) {}

  start(): void {
    this.timer = this.options.timers.every(LEASE_TICK_MS, () => this.options.driver.enqueue(() => this.tick()));
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }

  /** Runs one lease call on `replica` (the partition's leader, as the router chose it). */
  async serve(replica: PartitionReplica, request: api.LeaseRequest, context: api.CallContext, tools: LeaseCallTools): Promise<api.LeaseResponse> {
    const tenant = context.tenant ?? defaultTenant;
    if (request.action === 'grant') {
      const ttlMs = request.ttlMs ?? 0;
      // Refused as of this leader's applied state, which holds every grant and revocation
      // acknowledged so far: no Raft round for a grant the apply would refuse (a tenant flooding
      // grants past its share, issue 33). The apply still decides the grants that go on.
      replica.mvcc.checkLeaseRoom(tenantOfInternalKey(request.key ?? ''));
      const result = await tools.propose({ type: 'leaseGrant', key: request.key ?? '', ttlMs });
      const local = result.leaseId;
      if (local === undefined) throw new AtollError('INTERNAL', 'a lease grant applied without a lease id');
      // The deadline counts from the answer (at least as late as the client's send).
      this.leasesOf(replica)?.deadlines.set(local, this.options.clock.monotonicMs() + ttlMs);
      return { lease: formatLeaseId(replica.id, local), ttlMs, ttlLeftMs: ttlMs, keys: [], revision: result.revision };
    }
    const { local } = parseLeaseId(request.lease, this.options.partitions);
    // A ReadIndex round: this node still leads, and has applied every entry acknowledged before
    // the call (a grant, a revocation), so its lease table is current.
    await tools.readBarrier();
    const record = replica.mvcc.lease(local);
    if (record === undefined || record.tenant !== tenant) throw notFound(request.lease);
    const state = this.leasesOf(replica);
    if (state === undefined) throw replica.notLeaderError();
    const now = this.options.clock.monotonicMs();
    const deadline = this.deadlineOf(state, record, now);
    switch (request.action) {
      case 'keepAlive':
        // Doomed: the deadline passed (or its revocation is under way) at this leader.
        if (state.revoking.has(local) || deadline <= now) throw notFound(request.lease);
        state.deadlines.set(local, now + record.ttlMs);
        return { lease: request.lease ?? '', ttlMs: record.ttlMs, ttlLeftMs: record.ttlMs, keys: [], revision: 0 };
      case 'info':
        return { lease: request.lease ?? '', ttlMs: record.ttlMs, ttlLeftMs: Math.max(0, Math.round(deadline - now)), keys: [...record.keys].sort(), revision: 0 };
      case 'revoke': {
        state.revoking.add(local);
        try {
          const result = await tools.propose({ type: 'leaseRevoke', lease: local, expired: false });
          return { lease: request.lease ?? '', ttlMs: record.ttlMs, ttlLeftMs: 0, keys: [], revision: result.revision };
        } finally {
          state.revoking.delete(local);
        }
      }
      default:
        throw new AtollError('INVALID_ARGUMENT', 'unknown lease action');
    }
  }

  /**
   * One round on the loop: for each partition this node leads, give new leases their deadline and
   * propose the revocation of those whose deadline passed (at most REVOKES_PER_TICK per round).
   */
  tick(): void {
    const now = this.options.clock.monotonicMs();
    let proposed = 0;
    const { groups } = this.options.driver;
    const visit: PartitionReplica[] = [];
    for (const partition of [...this.leaders.keys()]) {
      const replica = groups.get(partition);
      if (replica === undefined) this.leaders.delete(partition);
      else visit.push(replica);
    }
    // Invariant: a lease present at this leader gets its deadline within FULL_SCAN_EVERY_ROUNDS
    // rounds (a grant here at once, in serve()); a deadline counts from that first sight, so a
    // late sight only lengthens a lease, never expires one earlier than ttl after its keepalive.
    const full = this.rounds++ % FULL_SCAN_EVERY_ROUNDS === 0;
    for (const replica of full ? groups.values() : visit) {
      // Idle cost: a follower costs a field read here, a leader with no lease and no deadline kept
      // one empty array (no status() object), so a node of 1,024 quiet partitions ticks cheaply.
      // Skipping such a leader loses nothing: leasesOf() starts its term's state at first need.
      if (replica.raw.role !== 'leader') {
        this.leaders.delete(replica.id);
        continue;
      }
      const leases = replica.mvcc.allLeases();
      if (leases.length === 0 && !this.leaders.has(replica.id)) continue;
      const state = this.leasesOf(replica);
      if (state === undefined || replica.mvcc.needsSnapshot) continue;
      if (leases.length === 0 && state.revoking.size === 0) {
        // Nothing to keep: forget the state (a later grant or sight starts it again, this term).
        this.leaders.delete(replica.id);
        continue;
      }
      const live = new Set(leases.map((lease) => lease.id));
      for (const id of state.deadlines.keys()) if (!live.has(id) && !state.revoking.has(id)) state.deadlines.delete(id);
      for (const record of leases) {
        const deadline = this.deadlineOf(state, record, now);
        if (deadline > now || state.revoking.has(record.id) || proposed >= REVOKES_PER_TICK) continue;
        if (this.proposeExpiry(replica, state, record.id)) proposed++;
      }
    }
  }

  /** The partition's deadlines while this node leads it in the current term, else undefined. */
  private leasesOf(replica: PartitionReplica): LeaderLeases | undefined {
    const status = replica.raw.status();
    if (status.role !== 'leader') {
      this.leaders.delete(replica.id);
      return undefined;
    }
    let state = this.leaders.get(replica.id);
    if (state === undefined || state.term !== status.term) {
      // A new term of leadership: every lease gets a full TTL from now, when first seen.
      state = { term: status.term, deadlines: new Map(), revoking: new Set() };
      this.leaders.set(replica.id, state);
    }
    return state;
  }

  /** A lease's deadline; the first sight in this term gives it now + ttl. */
  private deadlineOf(state: LeaderLeases, record: LeaseRecord, now: number): number {
    let deadline = state.deadlines.get(record.id);
    if (deadline === undefined) {
      deadline = now + record.ttlMs;
      state.deadlines.set(record.id, deadline);
    }
    return deadline;
  }

  private proposeExpiry(replica: PartitionReplica, state: LeaderLeases, id: number): boolean {
    const { limits, logger, clock } = this.options;
    const payload = encodeEntryPayload(Math.max(clock.wallMs(), replica.mvcc.appliedTimeMs), encodeCommand({ type: 'leaseRevoke', lease: id, expired: true }, limits));
    state.revoking.add(id);
    const answered = (): void => {
      state.revoking.delete(id);
    };
    try {
      replica.propose(payload, {
        resolve: answered,
        reject: (error: unknown) => {
          answered();
          logger.debug({ err: error, partition: replica.id, lease: id }, 'lease expiry not applied');
        },
      });
      return true;
    } catch {
      // Lost leadership (or the log is full) meanwhile; the next round or leader tries again.
      answered();
      return false;
    }
  }
}

function notFound(lease: string | undefined): AtollError {
  return new AtollError('LEASE_NOT_FOUND', `lease ${lease ?? ''} does not exist (never granted, revoked, or expired)`, { lease: lease ?? '' });
}
