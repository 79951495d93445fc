/**
 * PersistentLogStorage: the LogStorage of one Raft group whose state lives in the node's shared
 * LevelDB, under the group's key prefix (layout and encoding: raft-log-codec.ts).
 *
 * Designed for one node loop that, per iteration, collects the Ready of every group and makes all
 * of it durable with ONE synced write. So this class never does I/O after load(): each `stageX`
 * method updates the in-memory view and returns the engine operations that make the change
 * durable. The host concatenates the operations of every group, in the order it staged them, and
 * writes them with `engine.write(ops, { sync: true })`. The loop per iteration:
 *
 *   1. For each group's Ready, in this order: stageSnapshot(ready.snapshot.meta) (after the state
 *      machine has taken the snapshot's data), stageEntries(ready.entries),
 *      stageHardState(ready.hardState).
 *   2. One `engine.write(allOps, { sync: true })`.
 *   3. Send messages, apply committed entries, advance each RawNode.
 *
 * Contract with the host:
 * - The in-memory view runs ahead of the disk between staging and the write. The core must not be
 *   stepped or ticked in that window (a single-threaded loop that awaits the write before touching
 *   any RawNode does this naturally).
 * - A failed write leaves memory ahead of disk with no way back: the host treats it as fatal and
 *   restarts, reloading every group with load(). A crash between staging and the write is
 *   survivable: the disk still holds the previous state, which load() returns.
 * - The snapshot DATA is not stored here: the state machine (MVCC in the same LevelDB) is the
 *   snapshot. snapshot() asks the host's SnapshotSource for the bytes.
 *
 * Memory: every retained entry's term is in memory, the entries themselves only for the newest
 * `windowBytes` (log-window.ts; older ones are read back from the engine with a synchronous read).
 * The retained log is bounded by the host's compaction policy (snapshot, then stageCompact);
 * knowing every stored index is also what lets staging delete exactly the keys that exist, with
 * plain `del` operations in the same atomic batch (the engine's deleteRange is not atomic with writes).
 */
import assert from 'node:assert/strict';
import { AtollError } from '../../errors.js';
import { RaftError } from '../../raft/errors.js';
import type { LogStorage } from '../../raft/storage.js';
import {
  EMPTY_HARD_STATE,
  hardStateEqual,
  type ConfState,
  type Entry,
  type HardState,
  type Snapshot,
  type SnapshotMeta,
  type VoteFloor,
} from '../../raft/types.js';
import { bytesToHex } from '../../storage/bytes.js';
import type { StorageEngine, WriteOperation } from '../../storage/storage-engine.js';
import {
  RaftLogKeys,
  decodeEntry,
  decodeHardState,
  decodeSnapshotMeta,
  decodeTruncatedState,
  decodeVoteFloor,
  encodeEntry,
  encodeHardState,
  encodeSnapshotMeta,
  encodeTruncatedState,
  encodeVoteFloor,
  type TruncatedState,
} from './raft-log-codec.js';
import { LogWindow } from './log-window.js';

export interface LogStorageOptions {
  /** Bytes of entries kept in memory (log-window.ts); default unbounded. Needs engine.getSync. */
  readonly windowBytes?: number;
}

/**
 * Where snapshot bytes come from. The host keeps the state machine's snapshot of `meta.index`
 * prepared (it is built asynchronously, from the MVCC store in the same database).
 */
export interface SnapshotSource {
  /**
   * The snapshot payload for `meta` (the state machine as of `meta.index`). Synchronous: returns
   * the bytes when they are prepared, and otherwise throws RaftError('SNAPSHOT_TEMPORARILY_UNAVAILABLE')
   * (and starts building them), so the leader retries later. The core asks only when a follower
   * needs entries that were compacted, so never for the empty snapshot at index 0.
   */
  snapshotData(meta: SnapshotMeta): Uint8Array;
}

const EMPTY_CONF_STATE: ConfState = Object.freeze({ voters: Object.freeze([]), learners: Object.freeze([]) });
const EMPTY_SNAPSHOT_META: SnapshotMeta = Object.freeze({ index: 0, term: 0, confState: EMPTY_CONF_STATE });
const EMPTY_TRUNCATED_STATE: TruncatedState = Object.freeze({ index: 0, term: 0 });
const NO_VOTE_FLOOR: VoteFloor = Object.freeze({ term: 0, index: 0 });

/** What load() assembles from the records of one group before checking it. */
interface LoadedRecords {
  hardState: HardState;
  snapshotMeta: SnapshotMeta;
  truncated: TruncatedState;
  entries: Entry[];
  voteFloor: VoteFloor;
}

export class PersistentLogStorage implements LogStorage {
  readonly groupId: number;
  private readonly keys: RaftLogKeys;
  private readonly snapshotSource: SnapshotSource;
  private hardStateValue: HardState;
  // Invariant: truncated.index <= snapshotMetaValue.index <= lastIndex(); when the two indexes are
  // equal their terms are equal, otherwise snapshotMetaValue.term === term(snapshotMetaValue.index).
  private snapshotMetaValue: SnapshotMeta;
  private truncated: TruncatedState;
  // Invariant: the window holds the entries truncated.index + 1 .. lastIndex() (their terms never
  // decrease along the log): the terms of all, the newest of them in memory (log-window.ts).
  private ents: LogWindow;
  private readonly storedVoteFloor: VoteFloor;

  private constructor(keys: RaftLogKeys, snapshotSource: SnapshotSource, records: LoadedRecords, engine: StorageEngine, options: LogStorageOptions) {
    this.groupId = keys.groupId;
    this.keys = keys;
    this.snapshotSource = snapshotSource;
    this.hardStateValue = records.hardState;
    this.snapshotMetaValue = records.snapshotMeta;
    this.truncated = records.truncated;
    this.storedVoteFloor = records.voteFloor;
    const getSync = engine.getSync?.bind(engine);
    const readEntry = (index: number): Entry | undefined => {
      const value = getSync?.(keys.entry(index));
      return value === undefined ? undefined : decodeEntry(value);
    };
    const windowBytes = getSync === undefined ? Number.POSITIVE_INFINITY : (options.windowBytes ?? Number.POSITIVE_INFINITY);
    this.ents = new LogWindow(records.truncated.index + 1, records.entries, windowBytes, readEntry);
  }

  /** Bytes of entries held in memory (the window; metrics). */
  get memoryBytes(): number {
    return this.ents.memoryBytes;
  }

  /**
   * Reads the group's hard state, snapshot metadata, truncated state and every retained entry, and
   * checks that they fit together. A group with no records loads as an empty log. Malformed or
   * inconsistent records throw AtollError('INTERNAL'): the node must not run on a damaged log.
   */
  static async load(engine: StorageEngine, groupId: number, snapshotSource: SnapshotSource, options: LogStorageOptions = {}): Promise<PersistentLogStorage> {
    const keys = new RaftLogKeys(groupId);
    const records: LoadedRecords = {
      hardState: EMPTY_HARD_STATE,
      snapshotMeta: EMPTY_SNAPSHOT_META,
      truncated: EMPTY_TRUNCATED_STATE,
      entries: [],
      voteFloor: NO_VOTE_FLOOR,
    };
    for await (const [key, value] of engine.iterate(keys.groupRange())) {
      readRecord(keys, key, value, records);
    }
    checkLoaded(groupId, records);
    return new PersistentLogStorage(keys, snapshotSource, records, engine, options);
  }

  // ---------------------------------------------------------------- LogStorage (read by the core)

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: this.hardStateValue, confState: this.snapshotMetaValue.confState };
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    const offset = this.truncated.index;
    if (lo <= offset) throw new RaftError('COMPACTED', `index ${lo} is compacted (first ${offset + 1})`);
    if (hi > this.lastIndex() + 1) {
      throw new RaftError('UNAVAILABLE', `entries up to ${hi - 1} requested, last is ${this.lastIndex()}`);
    }
    if (hi <= lo) return [];
    return this.ents.slice(lo, hi, maxBytes);
  }

  term(index: number): number {
    const offset = this.truncated.index;
    if (index < offset) throw new RaftError('COMPACTED', `index ${index} is compacted`);
    if (index === offset) return this.truncated.term;
    if (index > this.lastIndex()) throw new RaftError('UNAVAILABLE', `index ${index} is not in the log`);
    return this.ents.termAt(index);
  }

  firstIndex(): number {
    return this.truncated.index + 1;
  }

  lastIndex(): number {
    return this.truncated.index + this.ents.length;
  }

  /** The latest snapshot's metadata with its data from the SnapshotSource (which may throw SNAPSHOT_TEMPORARILY_UNAVAILABLE). */
  snapshot(): Snapshot {
    const meta = this.snapshotMetaValue;
    return { meta, data: this.snapshotSource.snapshotData(meta) };
  }

  // ---------------------------------------------------------------- host-side reads

  /** The latest snapshot's metadata, without asking for its data. */
  snapshotMeta(): SnapshotMeta {
    return this.snapshotMetaValue;
  }

  hardState(): HardState {
    return this.hardStateValue;
  }

  /**
   * The log position a log must reach before this replica votes for it or campaigns with it
   * (RaftConfig.voteFloor): recorded when the replica was opened empty for a move (stageVoteFloor),
   * kept with the group's records (deleted with them); { term: 0, index: 0 } when none was.
   */
  voteFloor(): VoteFloor {
    return this.storedVoteFloor;
  }

  /** The operations that record `floor` as the vote floor of a replica about to be opened empty (load reads it). */
  static stageVoteFloor(groupId: number, floor: VoteFloor): WriteOperation[] {
    for (const value of [floor.term, floor.index]) if (!(Number.isSafeInteger(value) && value >= 0)) assert.fail(`vote floor ${value} is not a term or index`);
    return [{ type: 'put', key: new RaftLogKeys(groupId).voteFloor, value: encodeVoteFloor(floor) }];
  }

  /**
   * The commit index is not written when it is all that changed (stageHardState's lazyCommit;
   * losing it loses nothing, the leader teaches it again), so the stored one may lag the state
   * machine's applied index. Every applied entry was committed, so on load the commit index is
   * raised to it (in memory; the next hard state write records it).
   */
  raiseCommitTo(applied: number): void {
    if (applied <= this.hardStateValue.commit) return;
    if (!(applied <= this.lastIndex())) assert.fail(`applied index ${applied} is beyond the log (last ${this.lastIndex()})`);
    this.hardStateValue = { ...this.hardStateValue, commit: applied };
  }

  // ---------------------------------------------------------------- staging (host-side, no I/O)

  /** The record of the hard state as memory has it, commit index included (what lazyCommit may have left unwritten). */
  hardStateRecord(): WriteOperation {
    return { type: 'put', key: this.keys.hardState, value: encodeHardState(this.hardStateValue) };
  }

  /**
   * Records the hard state (Raft Figure 2: currentTerm, votedFor, plus the commit index).
   *
   * With `lazyCommit`, a change of the commit index alone updates memory and writes nothing: the
   * stored record then keeps an older commit index, which is safe because the commit index is not
   * a promise (Raft Figure 2 calls it volatile state; etcd skips the sync for it). A node that lost
   * it after a crash still has every committed entry it acknowledged in its log, load() hands the
   * core the stored (lower) index, raiseCommitTo lifts it to the applied index, and the leader's
   * next append or heartbeat teaches the rest; unless that leader is gone for good with the old
   * configuration's voters, so a Ready that commits a configuration change writes it anyway
   * (PartitionReplica.stage, hardStateRecord). Term and vote are promises and are always written,
   * with the current commit index beside them. The node loop passes it on every Ready: it saves one
   * record per group per iteration under load (issue 18).
   */
  stageHardState(hardState: HardState, options: { lazyCommit?: boolean } = {}): WriteOperation[] {
    assertHardState(hardState);
    const previous = this.hardStateValue;
    if (hardStateEqual(previous, hardState)) return [];
    if (!(hardState.term >= previous.term)) assert.fail(`hard state term went back from ${previous.term} to ${hardState.term}`);
    assert.ok(
      hardState.term > previous.term || previous.vote === 0 || hardState.vote === previous.vote,
      `vote changed from ${previous.vote} to ${hardState.vote} within term ${hardState.term}`,
    );
    if (!(hardState.commit >= previous.commit)) assert.fail(`commit went back from ${previous.commit} to ${hardState.commit}`);
    const stored: HardState = { term: hardState.term, vote: hardState.vote, commit: hardState.commit };
    this.hardStateValue = stored;
    // Invariant (lazyCommit): the stored record's term and vote equal memory's; only its commit may lag.
    if (options.lazyCommit === true && hardState.term === previous.term && hardState.vote === previous.vote) return [];
    return [{ type: 'put', key: this.keys.hardState, value: encodeHardState(stored) }];
  }

  /**
   * Appends entries, first truncating the suffix they replace (Raft §5.3: a conflicting entry and
   * all that follow it go). Entries at or below the truncated index are already folded into a
   * snapshot and are skipped. The entries are kept by reference: the caller must not mutate them.
   */
  stageEntries(entries: readonly Entry[]): WriteOperation[] {
    assertContiguous(entries);
    if (entries.length === 0) return [];
    const offset = this.truncated.index;
    const first = (entries[0] as Entry).index;
    const usable = first <= offset ? entries.slice(offset + 1 - first) : entries;
    if (usable.length === 0) return [];
    const start = (usable[0] as Entry).index;
    const previousLast = this.lastIndex();
    if (!(start <= previousLast + 1)) assert.fail(`gap in log: appending ${start} after ${previousLast}`);
    // The core only hands over entries after its commit index, and a snapshot never runs ahead of
    // what was applied: rewriting an entry the snapshot covers would mean committed entries changed.
    const snapshotIndex = this.snapshotMetaValue.index;
    if (!(start > snapshotIndex)) assert.fail(`appending ${start} rewrites entries covered by snapshot ${snapshotIndex}`);
    if (!((usable[0] as Entry).term >= this.term(start - 1))) assert.fail(`entry ${start} has a lower term than its predecessor`);

    const operations: WriteOperation[] = [];
    for (const entry of usable) operations.push({ type: 'put', key: this.keys.entry(entry.index), value: encodeEntry(entry) });
    const newLast = start + usable.length - 1;
    for (let index = newLast + 1; index <= previousLast; index++) operations.push({ type: 'del', key: this.keys.entry(index) });
    // In place: entries() hands out copies, so nobody else holds the window's array. Appending at
    // the end (the common case) then costs only the new entries, not the retained log.
    this.ents.append(start, usable);
    this.assertInvariants();
    return operations;
  }

  /**
   * Installs a snapshot received from the leader: it replaces the whole log. A snapshot no newer
   * than the current one is ignored (as MemoryLogStorage.applySnapshot does). The host imports the
   * snapshot's data into the state machine before (or atomically with) writing these operations.
   */
  stageSnapshot(meta: SnapshotMeta): WriteOperation[] {
    assertSnapshotMeta(meta);
    if (meta.index <= this.snapshotMetaValue.index) return [];
    const operations = this.deleteEntriesThrough(this.lastIndex());
    this.ents.reset(meta.index + 1);
    this.truncated = { index: meta.index, term: meta.term };
    this.snapshotMetaValue = copySnapshotMeta(meta);
    operations.push(
      { type: 'put', key: this.keys.truncatedState, value: encodeTruncatedState(this.truncated) },
      { type: 'put', key: this.keys.snapshotMeta, value: encodeSnapshotMeta(this.snapshotMetaValue) },
    );
    this.assertInvariants();
    return operations;
  }

  /**
   * Records the metadata of a snapshot the host took of its state machine at `meta.index` (applied,
   * so in the log): followers that fall behind the log are sent it. Does not compact.
   */
  stageSnapshotMeta(meta: SnapshotMeta): WriteOperation[] {
    assertSnapshotMeta(meta);
    const current = this.snapshotMetaValue;
    if (!(meta.index >= current.index)) assert.fail(`snapshot index went back from ${current.index} to ${meta.index}`);
    if (!(meta.index <= this.lastIndex())) assert.fail(`snapshot index ${meta.index} beyond last index ${this.lastIndex()}`);
    const term = this.term(meta.index);
    if (!(meta.term === term)) assert.fail(`snapshot term ${meta.term} is not the term ${term} of entry ${meta.index}`);
    this.snapshotMetaValue = copySnapshotMeta(meta);
    this.assertInvariants();
    return [{ type: 'put', key: this.keys.snapshotMeta, value: encodeSnapshotMeta(this.snapshotMetaValue) }];
  }

  /** Drops the entries up to and including `index`, which the snapshot must cover. */
  stageCompact(index: number): WriteOperation[] {
    if (!(Number.isSafeInteger(index) && index >= 0)) assert.fail(`compact index ${index} must be a non-negative integer`);
    if (index <= this.truncated.index) return [];
    if (!(index <= this.snapshotMetaValue.index)) assert.fail(`compact(${index}) beyond snapshot ${this.snapshotMetaValue.index}`);
    const term = this.term(index);
    const operations = this.deleteEntriesThrough(index);
    this.ents.dropThrough(index);
    this.truncated = { index, term };
    operations.push({ type: 'put', key: this.keys.truncatedState, value: encodeTruncatedState(this.truncated) });
    this.assertInvariants();
    return operations;
  }

  /**
   * Starts a brand-new group exactly as MemoryLogStorage.bootstrap does: a snapshot at index 1,
   * term 1 holding the initial membership, and hard state {term 1, vote 0, commit 1}. The host
   * initialises its state machine at index 1 separately. Every founding member bootstraps
   * identically; a member added later starts empty and receives a snapshot.
   */
  stageBootstrap(confState: ConfState): WriteOperation[] {
    assert.ok(this.lastIndex() === 0 && this.snapshotMetaValue.index === 0, 'bootstrap needs an empty log');
    const meta: SnapshotMeta = { index: 1, term: 1, confState };
    return [...this.stageSnapshot(meta), ...this.stageHardState({ term: 1, vote: 0, commit: 1 })];
  }

  /**
   * Forgets the log after a snapshot install that a crash interrupted (the state machine is being
   * emptied with it: PartitionReplica.discardInterruptedInstall): back to the founding state (a
   * snapshot at index 1, term 1, holding the membership of the last snapshot), keeping the term and
   * the vote, with commit 1. The leader then sends a snapshot (or the entries from index 2) again.
   *
   * Why this is safe (Raft's vote and commit rules rely on acknowledged entries staying on disk):
   * a leader sends a snapshot only when the follower's matching log ends below the leader's
   * compacted index, which is at most its commit index; that commit index was reached by a quorum
   * without this follower, and every entry this follower acknowledged is either in that quorum's
   * logs (committed) or conflicts with them (never committed). So no quorum depends on what this
   * follower forgets, and every quorum of votes still meets one holding every committed entry.
   * The founding state also keeps the leader's view of this follower's match index (below its
   * compacted index) pointing at compacted entries, so the leader's next probe sends a snapshot.
   */
  stageRestartAfterInterruptedInstall(): WriteOperation[] {
    const { confState, index } = this.snapshotMetaValue;
    assert.ok(index >= 1, 'a group that never bootstrapped has no log to forget');
    const operations = this.deleteEntriesThrough(this.lastIndex());
    this.ents.reset(2);
    this.truncated = { index: 1, term: 1 };
    this.snapshotMetaValue = copySnapshotMeta({ index: 1, term: 1, confState });
    this.hardStateValue = { term: this.hardStateValue.term, vote: this.hardStateValue.vote, commit: 1 };
    operations.push(
      { type: 'put', key: this.keys.truncatedState, value: encodeTruncatedState(this.truncated) },
      { type: 'put', key: this.keys.snapshotMeta, value: encodeSnapshotMeta(this.snapshotMetaValue) },
      { type: 'put', key: this.keys.hardState, value: encodeHardState(this.hardStateValue) },
    );
    this.assertInvariants();
    return operations;
  }

  /** The O(1) part of the invariants above, checked after every change. */
  private assertInvariants(): void {
    const snapshotIndex = this.snapshotMetaValue.index;
    assert.ok(this.truncated.index <= snapshotIndex && snapshotIndex <= this.lastIndex(), 'snapshot outside the log');
    assert.ok(this.snapshotMetaValue.term === this.term(snapshotIndex), 'snapshot term differs from the log');
  }

  /** `del` operations for every stored entry in (truncated.index, through]. */
  private deleteEntriesThrough(through: number): WriteOperation[] {
    const operations: WriteOperation[] = [];
    for (let index = this.truncated.index + 1; index <= through; index++) {
      operations.push({ type: 'del', key: this.keys.entry(index) });
    }
    return operations;
  }
}

// ------------------------------------------------------------------ load helpers

function readRecord(keys: RaftLogKeys, key: Uint8Array, value: Uint8Array, records: LoadedRecords): void {
  const kind = keys.classify(key);
  if (kind === undefined) throw corrupt(keys.groupId, `unknown key ${bytesToHex(key)}`);
  try {
    switch (kind.kind) {
      case 'entry': {
        const entry = decodeEntry(value);
        if (entry.index !== kind.index) throw corrupt(keys.groupId, `entry stored under index ${kind.index} says ${entry.index}`);
        records.entries.push(entry);
        return;
      }
      case 'hardState':
        records.hardState = decodeHardState(value);
        return;
      case 'snapshotMeta':
        records.snapshotMeta = decodeSnapshotMeta(value);
        return;
      case 'truncatedState':
        records.truncated = decodeTruncatedState(value);
        return;
      case 'voteFloor':
        records.voteFloor = decodeVoteFloor(value);
        return;
    }
  } catch (error) {
    if (error instanceof AtollError && error.code === 'INVALID_ARGUMENT') throw corrupt(keys.groupId, error.message);
    throw error;
  }
}

/** The structural invariants of the log; what the core needs to start. */
function checkLoaded(groupId: number, records: LoadedRecords): void {
  const { snapshotMeta, truncated, entries } = records;
  let expectedIndex = truncated.index + 1;
  let previousTerm = truncated.term;
  for (const entry of entries) {
    if (entry.index !== expectedIndex) throw corrupt(groupId, `entry ${expectedIndex} is missing (found ${entry.index})`);
    if (entry.term < previousTerm) throw corrupt(groupId, `entry ${entry.index} has term ${entry.term} below ${previousTerm}`);
    expectedIndex++;
    previousTerm = entry.term;
  }
  const lastIndex = truncated.index + entries.length;
  if (snapshotMeta.index < truncated.index || snapshotMeta.index > lastIndex) {
    throw corrupt(groupId, `snapshot ${snapshotMeta.index} outside [${truncated.index}, ${lastIndex}]`);
  }
  const termAtSnapshot =
    snapshotMeta.index === truncated.index ? truncated.term : (entries[snapshotMeta.index - truncated.index - 1] as Entry).term;
  if (termAtSnapshot !== snapshotMeta.term) {
    throw corrupt(groupId, `snapshot term ${snapshotMeta.term} but the log has term ${termAtSnapshot} at ${snapshotMeta.index}`);
  }
}

function corrupt(groupId: number, reason: string): AtollError {
  return new AtollError('INTERNAL', `raft log of group ${groupId} is corrupt: ${reason}`, { groupId });
}

// ------------------------------------------------------------------ argument checks

function assertIndexOrTerm(value: number, what: string): void {
  if (!(Number.isSafeInteger(value) && value >= 0)) assert.fail(`${what} must be a non-negative integer, got ${value}`);
}

function assertHardState(hardState: HardState): void {
  assertIndexOrTerm(hardState.term, 'hard state term');
  assertIndexOrTerm(hardState.vote, 'hard state vote');
  assertIndexOrTerm(hardState.commit, 'hard state commit');
}

function assertSnapshotMeta(meta: SnapshotMeta): void {
  assertIndexOrTerm(meta.index, 'snapshot index');
  assertIndexOrTerm(meta.term, 'snapshot term');
  for (const id of [...meta.confState.voters, ...meta.confState.learners]) {
    if (!(Number.isSafeInteger(id) && id > 0)) assert.fail(`member id ${id} must be a positive integer`);
  }
}

function assertContiguous(entries: readonly Entry[]): void {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as Entry;
    assertIndexOrTerm(entry.term, 'entry term');
    if (!(Number.isSafeInteger(entry.index) && entry.index >= 1)) assert.fail(`entry index ${entry.index} must be a positive integer`);
    if (i === 0) continue;
    const previous = entries[i - 1] as Entry;
    if (!(entry.index === previous.index + 1)) assert.fail(`entries not contiguous: ${entry.index} after ${previous.index}`);
    if (!(entry.term >= previous.term)) assert.fail(`entry ${entry.index} has a lower term than entry ${previous.index}`);
  }
}

/** A private copy, so a caller that reuses its arrays cannot change what we report. */
function copySnapshotMeta(meta: SnapshotMeta): SnapshotMeta {
  return {
    index: meta.index,
    term: meta.term,
    confState: { voters: [...meta.confState.voters], learners: [...meta.confState.learners] },
  };
}
