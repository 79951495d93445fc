/**
 * Follows and changes the cluster's member table (membership-table.ts) at run time. One job: keep
 * this node's view of the members equal to the replicated record: read it every REFRESH_MS (and on
 * demand), and when a newer version appears, grow and shrink the address book (the shared peers map
 * every room reads, the transport's links, the driver's liveness) and rewrite the cluster
 * descriptor on disk from it, so a restart starts from the last table this node applied.
 *
 * Invariants:
 * - the followed table's version never goes down (follow ignores older or equal versions), so a
 *   slow read racing a newer one cannot bring a removed member back.
 * - changes are compare-and-set on the record's mod revision: a change is computed from the table
 *   it read, and applies only if the record is still that one (else it reads again, bounded).
 * - a removed member is never dialled again and its peer calls are refused (isRemoved).
 */
import type { Logger } from 'pino';
import { AtollError } from '../../errors.js';
import { systemTenant, toInternalKey } from '../../keys/tenant-keys.js';
import type { StorageEngine } from '../../storage/storage-engine.js';
import type * as api from '../../api/node-api.js';
import { withMemberTable, writeDescriptor, type ClusterDescriptor } from './cluster-descriptor.js';
import { decodeTable, encodeTable, foundingTable, refusedMember, withAdminAddress, withZone, type MemberRecord, type MemberTable } from './membership-table.js';
import type { KvOperation, KvResult } from '../../api/operations.js';
import type { NodeClock, NodeTimers, TimerHandle } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';
import type { PartitionReplica } from '../replica/partition-replica.js';

/** The record's internal key (the system tenant's `membership/table`). */
export const memberTableKey = toInternalKey(systemTenant, 'membership/table');
const REFRESH_MS = 1_000;
/**
 * A node with a replica of the table's partition that follows a leader reads its own applied copy
 * every refresh, which costs no Raft traffic. A node without one reads the leader's applied copy
 * (a stale read forwarded to the leader: one small call, no Raft round, no wake of a quiesced
 * group) every refresh, and a linearizable one (which wakes the group) every this many. Before the
 * stale reads it read only every this many seconds, and a node that gave its replica away (a grown
 * cluster) saw a change up to 10 s late (membership-grow tests in CI).
 */
const REMOTE_REFRESH_EVERY = 10;
const CALL_TIMEOUT_MS = 5_000;
/** Compare-and-set attempts of one change before it gives up (MEMBERSHIP_REFUSED 'conflict'). */
const MAX_CHANGE_ATTEMPTS = 8;

export interface MembershipOptions {
  readonly id: number;
  readonly descriptor: ClusterDescriptor;
  /** The node's address book (client addresses), shared by reference with the router and the moves. */
  readonly peers: Map<number, string>;
  readonly driver: RaftDriver<PartitionReplica>;
  readonly engine: StorageEngine;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
  readonly logger: Logger;
  /** Runs an operation at its partition (Router.route) and names a key's partition. */
  readonly route: (partition: number, operation: KvOperation, context: api.CallContext) => Promise<KvResult>;
  readonly partitionOfKey: (key: string) => number;
  /**
   * Called once, when this node learns that it was removed: it applied (or read) a table naming it
   * removed, or a peer refused its call with MEMBERSHIP_REFUSED 'removed'. The node shuts down.
   */
  readonly onRemoved?: (why: string) => void;
  /** This node's --zone label: recorded in its member table entry once the table lists it with another. */
  readonly zone?: string;
  /**
   * This node's admin address as it advertises it (host:port), recorded in its member table entry
   * when the node joined (the founding members know each other's from --admin-addresses; a joined
   * node's is known to nobody else, so `atoll cluster status` showed '-').
   */
  readonly adminAddress?: string;
}

/** A member's peer port: its recorded one, else its client port + 100 (the default of --peer-addresses). */
export function peerAddressOf(member: Pick<MemberRecord, 'clientAddress' | 'peerAddress'>): string {
  if (member.peerAddress !== '') return member.peerAddress;
  const colon = member.clientAddress.lastIndexOf(':');
  return `${member.clientAddress.slice(0, colon)}:${Number(member.clientAddress.slice(colon + 1)) + 100}`;
}

/**
 * The admin address others can dial: `bound` itself, unless it binds every interface (0.0.0.0, ::),
 * then the host others dial this node's client port at (its table entry) with the admin port.
 * '' when there is none.
 */
export function advertisedAdminAddress(bound: string, clientAddress: string): string {
  const colon = bound.lastIndexOf(':');
  if (bound === '' || colon < 0) return '';
  const host = bound.slice(0, colon);
  if (host !== '0.0.0.0' && host !== '::' && host !== '[::]') return bound;
  return `${clientAddress.slice(0, clientAddress.lastIndexOf(':'))}:${bound.slice(colon + 1)}`;
}

/**
 * The table a node follows before it applied any: the founding one (every member active), except
 * on a node that joined (--join) and has not yet recorded a table. Invariant: a node reports and
 * acts on no member state it was not given. A joiner knows the members as the member it joined
 * through listed them, itself 'joining'; the founding table called them all active, so a joiner
 * restarted before its first refresh answered ClusterInfo with itself active, and an operator's
 * activate whose answer was lost looked done while the replicated table still said joining
 * (simulator seed 30359: the later leave was refused for good). Version 0: any recorded table
 * replaces it at the first refresh.
 */
function initialTable(descriptor: ClusterDescriptor): MemberTable {
  const founding = foundingTable(descriptor.members);
  if (descriptor.origin !== 'joined') return founding;
  return { ...founding, members: founding.members.map((member) => ({ ...member, state: descriptor.members.find((m) => m.id === member.id)?.state ?? 'active' })) };
}

export class Membership {
  private table: MemberTable;
  private descriptor: ClusterDescriptor;
  private timer: TimerHandle | undefined;
  private refreshing: Promise<MemberTable> | undefined;
  private refreshes = 0;
  /** Set once this node learned it was removed (see onRemoved); never unset. */
  private removedSelf = false;
  /** Descriptor rewrites run one at a time, newest table last. */
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly options: MembershipOptions) {
    this.descriptor = options.descriptor;
    this.table = options.descriptor.memberTable ?? initialTable(options.descriptor);
    this.applyAddressBook();
  }

  start(): void {
    // A restart after the removal: the descriptor already records the table that removed this node.
    if (this.isRemoved(this.options.id)) this.learnedRemoved(`member table version ${this.table.version} names this node removed`);
    this.timer = this.options.timers.every(REFRESH_MS, () => {
      // Its own replica's copy while that replica follows a leader and holds the partition's state
      // (a stray one, a move's source that never applied its removal, is found and deleted by
      // stray-check.ts). An empty replica opened for a move, waiting for its first
      // snapshot, has a leader but no record: reading it kept a node that joined on its founding
      // table for good (a chaos run's joiner, stuck at version 0 while the table was at 6).
      const replica = this.options.driver.groups.get(this.options.partitionOfKey(memberTableKey));
      const local = replica !== undefined && replica.raw.lead !== 0 && replica.raw.isMember(this.options.id);
      const linearizable = !local && this.refreshes++ % REMOTE_REFRESH_EVERY === 0;
      (local || linearizable ? this.refresh(linearizable) : this.refreshFromLeaderCopy()).then(() => this.recordOwnEntry()).catch((error: unknown) => {
        if (error instanceof AtollError && error.code === 'MEMBERSHIP_REFUSED' && error.details?.['reason'] === 'removed') {
          this.learnedRemoved('a member refused this node\'s call: it was removed from the cluster');
          return;
        }
        this.options.logger.debug({ err: error }, 'reading the member table failed; trying again');
      });
    });
  }

  stop(): void {
    this.timer?.cancel();
  }

  /** The table this node follows now. */
  current(): MemberTable {
    return this.table;
  }

  /** Whether `id` names a member that was removed (its peer calls are refused). */
  isRemoved(id: number): boolean {
    return this.table.members.some((member) => member.id === id && member.state === 'removed');
  }

  /**
   * Reads the record and follows it when it is newer; one read at a time. `linearizable`: at the
   * partition's leader, so a change acknowledged before is seen; else this node's replica's applied
   * copy when it has one (possibly behind, never ahead of, the record).
   */
  refresh(linearizable = true): Promise<MemberTable> {
    // A linearizable refresh never waits on a local read in flight: it must see every acknowledged change.
    if (linearizable) return this.read().then(({ table }) => (this.follow(table), this.table));
    if (this.refreshing !== undefined) return this.refreshing;
    this.refreshing = this.readLocal()
      .then(({ table }) => {
        this.follow(table);
        return this.table;
      })
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  /**
   * Applies `change` to the current record with a compare-and-set, retrying on a concurrent change
   * (bounded). `change` throws to refuse (nothing written) and returns its argument for "nothing
   * to do". Resolves with the table now recorded, which this node follows from then on.
   */
  async change(change: (table: MemberTable) => MemberTable): Promise<MemberTable> {
    for (let attempt = 0; attempt < MAX_CHANGE_ATTEMPTS; attempt++) {
      const { table, modRevision } = await this.read();
      this.follow(table);
      const next = change(table);
      if (next === table) return table;
      const key = memberTableKey;
      const condition = modRevision === 0 ? { ifAbsent: true } : { ifModRevision: modRevision };
      const result = (await this.options.route(this.options.partitionOfKey(key), { kind: 'put', request: { key, value: encodeTable(next), ...condition } }, this.context())) as KvResult & {
        response: api.PutResponse;
      };
      if (result.response.applied) {
        this.options.logger.info({ version: next.version, members: next.members.map((m) => `${m.id}:${m.state}`) }, 'changed the member table');
        this.follow(next);
        return next;
      }
      // Another change won the race (or a retry of ours applied first): read again and decide again.
    }
    throw refusedMember('conflict', 'the member table kept changing under this request; try again');
  }

  /** The record, read at its partition's leader: linearizable, or the leader's applied copy ('stale'). */
  private async read(consistency: 'linearizable' | 'stale' = 'linearizable'): Promise<{ table: MemberTable; modRevision: number }> {
    const key = memberTableKey;
    const request = consistency === 'stale' ? { key, consistency } : { key };
    const result = (await this.options.route(this.options.partitionOfKey(key), { kind: 'get', request }, this.context())) as KvResult & { response: api.GetResponse };
    if (!result.response.found) return { table: foundingTable(this.options.descriptor.members.filter((m) => m.state === undefined || m.state === 'active')), modRevision: 0 };
    return { table: decodeTable(result.response.value), modRevision: result.response.modRevision };
  }

  /** Follows the leader's applied copy (a stale read routed to the table partition's leader). */
  private async refreshFromLeaderCopy(): Promise<MemberTable> {
    const { table } = await this.read('stale');
    this.follow(table);
    return this.table;
  }

  /** The applied copy in this node's replica of the table's partition; the routed read without one. */
  private async readLocal(): Promise<{ table: MemberTable; modRevision: number }> {
    const replica = this.options.driver.groups.get(this.options.partitionOfKey(memberTableKey));
    if (replica === undefined) return this.read();
    const got = await replica.mvcc.get(memberTableKey, { nowMs: this.options.clock.wallMs() });
    if (!got.found || got.value === undefined) return { table: this.table, modRevision: 0 };
    return { table: decodeTable(got.value), modRevision: got.modRevision };
  }

  private context(): api.CallContext {
    return { deadlineMs: this.options.clock.wallMs() + CALL_TIMEOUT_MS, tenant: systemTenant };
  }

  /** Follows `table` when it is newer than the one followed (see the invariants). */
  private follow(table: MemberTable): void {
    if (table.version <= this.table.version) return;
    this.table = table;
    this.applyAddressBook();
    if (this.isRemoved(this.options.id)) this.learnedRemoved(`member table version ${table.version} names this node removed`);
    const descriptor = withMemberTable(this.descriptor, table);
    this.descriptor = descriptor;
    this.writing = this.writing
      .then(() => writeDescriptor(this.options.engine, descriptor))
      .catch((error: unknown) => this.options.logger.error({ err: error }, 'rewriting the cluster descriptor from the member table failed; the next change retries'));
  }

  /**
   * Records this node's --zone in its member table entry when the followed table lists it with
   * another (at creation every node knows only its own zone; a joiner's add-node may omit it), and
   * a joined node's admin address when the entry lacks it. One change for both.
   */
  private async recordOwnEntry(): Promise<void> {
    const { id } = this.options;
    const zone = this.options.zone ?? '';
    if (this.removedSelf) return;
    const own = this.table.members.find((member) => member.id === id);
    if (own === undefined || own.state === 'removed') return;
    const adminAddress = this.descriptor.origin === 'joined' ? advertisedAdminAddress(this.options.adminAddress ?? '', own.clientAddress) : '';
    const recordZone = zone !== '' && own.zone !== zone;
    const recordAdmin = adminAddress !== '' && own.adminAddress !== adminAddress;
    if (!recordZone && !recordAdmin) return;
    await this.change((table) => {
      if (!table.members.some((member) => member.id === id)) return table;
      const zoned = recordZone ? withZone(table, id, zone) : table;
      return recordAdmin ? withAdminAddress(zoned, id, adminAddress) : zoned;
    });
    this.options.logger.info({ ...(recordZone && { zone }), ...(recordAdmin && { adminAddress }) }, 'recorded this node\'s own entry in the member table');
  }

  /** Whether this node learned that it was removed from the cluster (it shuts down). */
  get removed(): boolean {
    return this.removedSelf;
  }

  private learnedRemoved(why: string): void {
    if (this.removedSelf) return;
    this.removedSelf = true;
    this.options.logger.error({ why }, 'this node was removed from the cluster: its peers refuse it; it shuts down (exit code 4). Its id is spent: to bring the machine back, clear its data directory and add it under a new id');
    this.options.onRemoved?.(why);
  }

  /** Grows and shrinks the address book to the followed table (adding a known peer changes nothing). */
  private applyAddressBook(): void {
    const { peers, driver, id } = this.options;
    for (const member of this.table.members) {
      if (member.id === id) continue;
      if (member.state === 'removed') {
        peers.delete(member.id);
        driver.dropPeer(member.id);
        continue;
      }
      peers.set(member.id, member.clientAddress);
      driver.addPeer(member.id, peerAddressOf(member));
    }
  }
}

/** MEMBERSHIP_REFUSED for a call from a removed node (the peer port's guard). */
export function removedPeerError(id: number): AtollError {
  return refusedMember('removed', `node ${id} was removed from the cluster; it may not call its former peers`);
}
