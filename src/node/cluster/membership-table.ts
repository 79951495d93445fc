/**
 * The member table: which nodes belong to the cluster, at which addresses, in which zone and in
 * which state (joining, active, leaving, removed). One job: the table's shape, its encoding, and
 * the transitions that change it (pure functions; membership.ts stores the table and follows it).
 *
 * Where it lives: one system record (the system tenant's key `membership/table`) in the partition
 * that key hashes to, so it is replicated by Raft like every other record, survives restarts, and
 * every node reads it through its router (a linearizable read at that partition's leader). It is
 * written only with a compare-and-set on the record's mod revision, so two concurrent changes
 * never both apply on the same predecessor. While the record is absent, the table is the cluster's
 * founding members (the descriptor's creation members), all active, at version 0.
 *
 * Invariants (checkTable enforces them on every decoded and every produced table):
 * - members are sorted by id; ids are unique, positive safe integers.
 * - an id is never reused: a removed member stays in the table as 'removed' for good, and adding
 *   an id the table holds in any state is refused (MEMBERSHIP_REFUSED, reason 'duplicate-id' or
 *   'id-removed').
 * - no two members that are not removed share a client or a peer address.
 * - version grows by exactly one with every change that changes something.
 * - at most maxMembers members (removed ones included) and every string is bounded.
 */
import { AtollError } from '../../errors.js';

export type MemberState = 'joining' | 'active' | 'leaving' | 'removed';
export const memberStates: readonly MemberState[] = ['joining', 'active', 'leaving', 'removed'];

export interface MemberRecord {
  readonly id: number;
  /** host:port of its client port. */
  readonly clientAddress: string;
  /** host:port of its peer port ('' when not known: dialled at the client port + 100). */
  readonly peerAddress: string;
  /** Its --zone label ('' when none): placement spreads a partition's replicas over zones. */
  readonly zone: string;
  /**
   * host:port of its admin (HTTP) port as the node itself advertises it, absent until the node
   * records it (a joined node's, which the others' --admin-addresses do not name).
   */
  readonly adminAddress?: string;
  readonly state: MemberState;
}

export interface MemberTable {
  /** 0 for the founding table (no record yet); +1 per change. */
  readonly version: number;
  readonly members: readonly MemberRecord[];
}

/** A cluster this size is far beyond what one table record is for; it bounds the record. */
export const maxMembers = 1_000;
const maxAddressBytes = 255;
const maxZoneBytes = 64;
const maxRecordBytes = 1024 * 1024;
const addressPattern = /^[^\s=,]+:[0-9]{1,5}$/;
const zonePattern = /^[A-Za-z0-9._-]*$/;

export type MembershipRefusal = 'duplicate-id' | 'id-removed' | 'address-in-use' | 'unknown-id' | 'too-few-members' | 'bad-transition' | 'conflict' | 'removed' | 'holds-replicas' | 'view-incomplete';

export function refusedMember(reason: MembershipRefusal, message: string): AtollError {
  return new AtollError('MEMBERSHIP_REFUSED', message, { reason });
}

/** The table while no record exists: the descriptor's founding members, all active. */
export function foundingTable(members: ReadonlyArray<{ id: number; clientAddress: string; peerAddress: string; zone?: string }>): MemberTable {
  const table: MemberTable = {
    version: 0,
    members: [...members]
      .sort((a, b) => a.id - b.id)
      .map((member) => ({ id: member.id, clientAddress: member.clientAddress, peerAddress: member.peerAddress, zone: member.zone ?? '', state: 'active' as const })),
  };
  checkTable(table);
  return table;
}

function isAddress(address: unknown): address is string {
  return typeof address === 'string' && address.length <= maxAddressBytes && addressPattern.test(address) && Number(address.slice(address.lastIndexOf(':') + 1)) <= 65_535;
}

/** INVALID_ARGUMENT unless `address` is a bounded host:port. */
export function checkAddress(address: string, what: string): void {
  if (!isAddress(address)) {
    throw new AtollError('INVALID_ARGUMENT', `${what} must be host:port, got ${JSON.stringify(String(address).slice(0, 80))}`);
  }
}

/** INVALID_ARGUMENT unless `id` can name a node. */
export function checkMemberId(id: number): void {
  if (!Number.isSafeInteger(id) || id < 1 || id > 0xffff_ffff) throw new AtollError('INVALID_ARGUMENT', `a node id must be a positive integer, got ${String(id)}`);
}

/** Throws (a programming error, or a damaged record) unless the invariants in the file comment hold. */
export function checkTable(table: MemberTable): void {
  const fail = (why: string): never => {
    throw new Error(`malformed member table: ${why}`);
  };
  if (typeof table !== 'object' || table === null || !Array.isArray(table.members)) fail('not a table');
  if (!Number.isSafeInteger(table.version) || table.version < 0) fail('version');
  if (table.members.length === 0 || table.members.length > maxMembers) fail(`${table.members.length} members`);
  let previous = 0;
  const addresses = new Set<string>();
  for (const member of table.members) {
    if (!Number.isSafeInteger(member.id) || member.id <= previous) fail('members must be sorted by positive, unique id');
    previous = member.id;
    if (!memberStates.includes(member.state)) fail(`state ${String(member.state)}`);
    for (const address of [member.clientAddress, member.peerAddress]) {
      if (typeof address !== 'string' || address.length > maxAddressBytes) fail('address');
    }
    if (typeof member.zone !== 'string' || member.zone.length > maxZoneBytes || !zonePattern.test(member.zone)) fail('zone');
    if (member.adminAddress !== undefined && !isAddress(member.adminAddress)) fail('admin address');
    if (member.state === 'removed') continue;
    for (const address of [member.clientAddress, member.peerAddress]) {
      if (address === '') continue;
      if (addresses.has(address)) fail(`address ${address} used twice`);
      addresses.add(address);
    }
  }
}

export function encodeTable(table: MemberTable): Uint8Array {
  checkTable(table);
  return new TextEncoder().encode(JSON.stringify({ format: 'atoll-member-table', version: table.version, members: table.members }));
}

/** The table from its record; INTERNAL when the record is damaged (nothing else writes it). */
export function decodeTable(bytes: Uint8Array): MemberTable {
  try {
    if (bytes.length > maxRecordBytes) throw new Error(`${bytes.length} bytes`);
    const parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as { format?: unknown; version: number; members: MemberRecord[] };
    if (parsed.format !== 'atoll-member-table') throw new Error('wrong format tag');
    const table: MemberTable = {
      version: parsed.version,
      // A record written before admin addresses were recorded has none: absent, not ''.
      members: parsed.members.map((m) => ({ id: m.id, clientAddress: m.clientAddress, peerAddress: m.peerAddress, zone: m.zone, ...(m.adminAddress !== undefined && { adminAddress: m.adminAddress }), state: m.state })),
    };
    checkTable(table);
    return table;
  } catch (error) {
    throw new AtollError('INTERNAL', `the cluster's member table record is unreadable: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export function memberOf(table: MemberTable, id: number): MemberRecord | undefined {
  return table.members.find((member) => member.id === id);
}

/** Members that are neither removed nor joining: the ones that hold replicas for good. */
export function activeMembers(table: MemberTable): MemberRecord[] {
  return table.members.filter((member) => member.state === 'active');
}

/**
 * The table with `member` added as joining. Idempotent: the same id, joining at the same
 * addresses, returns the table unchanged. Refused (MEMBERSHIP_REFUSED, nothing changes) for an id
 * the table holds otherwise, or an address a member that is not removed uses.
 */
export function withJoining(table: MemberTable, member: { id: number; clientAddress: string; peerAddress: string; zone: string }): MemberTable {
  checkMemberId(member.id);
  checkAddress(member.clientAddress, 'the node\'s client address');
  if (member.peerAddress !== '') checkAddress(member.peerAddress, 'the node\'s peer address');
  if (member.zone.length > maxZoneBytes || !zonePattern.test(member.zone)) throw new AtollError('INVALID_ARGUMENT', `a zone is at most ${maxZoneBytes} of A-Z a-z 0-9 . _ -`);
  const existing = memberOf(table, member.id);
  if (existing !== undefined) {
    if (existing.state === 'joining' && existing.clientAddress === member.clientAddress && existing.peerAddress === member.peerAddress && existing.zone === member.zone) return table;
    if (existing.state === 'removed') throw refusedMember('id-removed', `node id ${member.id} belonged to a node that was removed; ids are never reused: pick a new one`);
    throw refusedMember('duplicate-id', `node ${member.id} is already a member (${existing.state}, at ${existing.clientAddress})`);
  }
  for (const other of table.members) {
    if (other.state === 'removed') continue;
    for (const address of [member.clientAddress, member.peerAddress]) {
      if (address !== '' && (other.clientAddress === address || other.peerAddress === address)) {
        throw refusedMember('address-in-use', `address ${address} is node ${other.id}'s`);
      }
    }
  }
  if (table.members.length >= maxMembers) throw new AtollError('INVALID_ARGUMENT', `a cluster has at most ${maxMembers} member ids`);
  const next: MemberTable = {
    version: table.version + 1,
    members: [...table.members, { ...member, state: 'joining' as const }].sort((a, b) => a.id - b.id),
  };
  checkTable(next);
  return next;
}

/** Which state changes are allowed: forward only, except that leaving may go back to active (a cancelled removal). */
const allowedTransitions: Readonly<Record<MemberState, readonly MemberState[]>> = {
  joining: ['active', 'removed'],
  active: ['leaving'],
  leaving: ['removed', 'active'],
  removed: [],
};

/** The table with member `id` in `state`; unchanged when it is in it already. MEMBERSHIP_REFUSED otherwise. */
export function withState(table: MemberTable, id: number, state: MemberState): MemberTable {
  checkMemberId(id);
  const existing = memberOf(table, id);
  if (existing === undefined) throw refusedMember('unknown-id', `no node ${id} in the cluster`);
  if (existing.state === state) return table;
  if (!allowedTransitions[existing.state].includes(state)) throw refusedMember('bad-transition', `node ${id} is ${existing.state}; it cannot become ${state}`);
  const next: MemberTable = { version: table.version + 1, members: table.members.map((member) => (member.id === id ? { ...member, state } : member)) };
  checkTable(next);
  return next;
}

/**
 * The table with a field of member `id`'s entry that the node records about itself set to `value`
 * (already checked); unchanged when it has it already. MEMBERSHIP_REFUSED for an unknown or
 * removed member.
 */
function withOwnField<K extends 'zone' | 'adminAddress'>(table: MemberTable, id: number, field: K, value: string): MemberTable {
  checkMemberId(id);
  const existing = memberOf(table, id);
  if (existing === undefined) throw refusedMember('unknown-id', `no node ${id} in the cluster`);
  if (existing[field] === value) return table;
  if (existing.state === 'removed') throw refusedMember('bad-transition', `node ${id} was removed`);
  const next: MemberTable = { version: table.version + 1, members: table.members.map((member) => (member.id === id ? { ...member, [field]: value } : member)) };
  checkTable(next);
  return next;
}

/** The table with member `id`'s advertised admin address (host:port, as the node itself reports it). */
export function withAdminAddress(table: MemberTable, id: number, adminAddress: string): MemberTable {
  checkAddress(adminAddress, 'an admin address');
  return withOwnField(table, id, 'adminAddress', adminAddress);
}

/** The table with member `id`'s zone set to `zone` (its --zone label); unchanged when it has it already. */
export function withZone(table: MemberTable, id: number, zone: string): MemberTable {
  if (typeof zone !== 'string' || zone.length > maxZoneBytes || !zonePattern.test(zone)) throw new AtollError('INVALID_ARGUMENT', `a zone is at most ${maxZoneBytes} of A-Z a-z 0-9 . _ -`);
  return withOwnField(table, id, 'zone', zone);
}
