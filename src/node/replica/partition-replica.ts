import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { AtollError } from '../../errors.js';
import { decodeCommand, writeCheckedCommand, writeCheckedWrite, type ApplyResult, type Command, type MvccStore } from '../../mvcc/index.js';
import { HeldSnapshot } from '../snapshot/held-snapshot.js';
import { decodeSnapshotTicket } from '../snapshot/snapshot-payload.js';
import type { StagedSnapshot } from '../snapshot/snapshot-receiver.js';
import type { ExportedSnapshot } from '../snapshot/snapshot-transfer.js';
import { RaftError } from '../../raft/errors.js';
import { RawNode, type Ready } from '../../raft/rawnode.js';
import type { RaftConfig } from '../../raft/config.js';
import type { Rng } from '../../raft/rng.js';
import { decodeConfChange, EntryType, type ConfState, type Entry, type Snapshot, type SnapshotMeta } from '../../raft/types.js';
import { ByteReader, ByteWriter } from '../../storage/byte-codec.js';
import type { StorageEngine, WriteOperation } from '../../storage/storage-engine.js';
import type { PersistentLogStorage } from '../raftlog/raft-log-store.js';
import { ReadBarrier, type LeaseClock, type ReadWaiter } from './read-barrier.js';
import { confAfter } from './conf-after.js';
import { isFreezeEntry, isMergeEntry } from './merge-entry.js';
import { isSplitEntry } from './split-entry.js';

/** Raft settings the node uses for every partition group. */
export interface GroupSettings {
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly quiesceAfterTicks: number;
  /** Commit notices instead of commit-only appends (RaftConfig.commitNotices; the node coalesces them, node-batch.ts). */
  readonly commitNotices?: boolean;
  /** Record a snapshot point and compact the log after this many applied entries. */
  readonly snapshotEveryEntries: number;
  /** Entries kept behind a snapshot so slightly lagging followers catch up from the log. */
  readonly logEntriesKeptAfterSnapshot: number;
}

/** How a replica is run, beyond its Raft settings. */
export interface ReplicaOptions {
  /** Monotonic milliseconds (the node's clock port): when exported snapshot data was last used. */
  readonly nowMs?: () => number;
  /**
   * Test-only defect (NodeTestBugs.nonAtomicSnapshotInstall, a regression control): the install
   * imports the snapshot (synced) before the loop's batch records it in the Raft log, and an
   * interrupted install is not reconciled on open.
   */
  readonly nonAtomicSnapshotInstall?: boolean;
  /** Test-only defect (NodeTestBugs.applyBeforeCommit): apply entries as soon as they are appended. */
  readonly applyBeforeCommit?: boolean;
  /** Test-only defect (NodeTestBugs.noticeCommitBeyondMatch, RaftBugs of the same name). */
  readonly noticeCommitBeyondMatch?: boolean;
  /** Serve linearizable reads under the leader lease (read-barrier.ts); absent: ReadIndex rounds only. */
  readonly lease?: LeaseClock;
  /**
   * Snapshots received from leaders, staged by the node (snapshot-receiver.ts): the Raft core
   * accepts a snapshot only when its chunks are staged here, whole and checked.
   */
  readonly stagedSnapshots?: StagedSnapshots;
  /** Where a leader spools the export it holds for followers (held-snapshot.ts): the node's engine. */
  readonly spool?: { readonly engine: StorageEngine; readonly logger?: Logger };
  /** Applies split entries (split-apply.ts); without it a split entry is a broken invariant. */
  readonly splits?: { apply(source: PartitionReplica, entry: Entry, conf: ConfState): Promise<ApplyResult> };
  /**
   * Applies merge entries (merge-apply.ts): the freeze in the right partition's log, the merge in
   * the left one's; without it either entry is a broken invariant.
   */
  readonly merges?: {
    applyFreeze(replica: PartitionReplica, entry: Entry, conf: ConfState): Promise<ApplyResult>;
    applyMerge(replica: PartitionReplica, entry: Entry, conf: ConfState): Promise<ApplyResult>;
    installed?(replica: PartitionReplica): void;
  };
  /** Opens the partition after a range an install shrank (split-heal.ts): a split this replica skipped. */
  readonly splitHeal?: {
    opsBeforeInstall(partition: number, before: HashRange | undefined): WriteOperation[];
    opsAfterInstall(partition: number, carried: HashRange | undefined): WriteOperation[];
    installed(partition: number): void;
  };
}

type HashRange = { readonly start: number; readonly end: number };

/** The receiver's part the replica uses (SnapshotReceiver). */
export interface StagedSnapshots {
  claim(group: number, index: number, snapTerm: number, ticket: NonNullable<ReturnType<typeof decodeSnapshotTicket>>): StagedSnapshot | undefined;
  installed(group: number): void;
  release(group: number): void;
}

/**
 * One append per follower per loop iteration, and no answers to commit-only appends (issue 18);
 * with commit notices, no commit-only appends either (issue 35, src/raft/commit-notice.ts).
 */
function appendBatching(settings: GroupSettings, options: ReplicaOptions): Pick<RaftConfig, 'batchAppends' | 'commitNotices' | 'bugs'> {
  return {
    batchAppends: true,
    ...(settings.commitNotices === true && { commitNotices: true }),
    ...(options.noticeCommitBeyondMatch === true && { bugs: { noticeCommitBeyondMatch: true } }),
  };
}

/**
 * While a leader holds exported snapshot data for a follower, its log is not compacted past it (so
 * the follower can continue from the log after installing it), at most this many entries.
 */
const MIN_ENTRIES_WHILE_SNAPSHOT_HELD = 10_000;

interface ProposalWaiter {
  readonly term: number;
  resolve(result: ApplyResult): void;
  reject(error: unknown): void;
}

/**
 * Log entry payload: the leader's clock when it proposed, at least the partition clock (the store
 * applies it at max(this, the previous entry's time), so every replica agrees on expiry), the
 * client's request id if any (exactly-once retries, deduplicated by the state machine), then the
 * encoded MVCC command. Layout: nowMs u64 | requestId text (empty: none) | command bytes.
 */
export function encodeEntryPayload(nowMs: number, command: Uint8Array, requestId?: string): Uint8Array {
  return new ByteWriter(command.length + 32).uint64(nowMs).text(requestId ?? '').raw(command).finish();
}

/**
 * The same payload for a command not yet encoded (one whose rules were checked: validateCommand or a
 * request's one validation), written in one pass into one buffer sized for it: a put's value is
 * copied once, from the request into the entry, and the buffer is not copied again.
 */
export function encodeCommandEntry(nowMs: number, command: Command, requestId?: string): Uint8Array {
  // An upper bound of the bytes, so the writer never grows (UTF-8 takes at most 3 bytes per UTF-16 unit).
  const put = command.type === 'put' ? command : undefined;
  const bound = 96 + 3 * (requestId?.length ?? 0) + (put === undefined ? 192 : 3 * put.key.length + put.value.length + (put.ifValue?.length ?? 0));
  const writer = new ByteWriter(bound).uint64(nowMs).text(requestId ?? '');
  // A put, the commonest command, is written as the one write it is, without the command's dispatch.
  if (put !== undefined) writeCheckedWrite(writer, put, true);
  else writeCheckedCommand(writer, command);
  return writer.written();
}

function decodeEntryPayload(data: Uint8Array): { nowMs: number; requestId: string | undefined; command: Command } {
  const reader = new ByteReader(data, 'log entry');
  const nowMs = reader.uint64();
  const requestId = reader.text();
  return { nowMs, requestId: requestId === '' ? undefined : requestId, command: decodeCommand(data.subarray(data.length - reader.remaining)) };
}

export { frameChunks, PayloadDigest, snapshotPayloadRefusal, unframeChunks } from '../snapshot/snapshot-payload.js';

/**
 * Reconciles a snapshot install a crash interrupted, before the replica is built: the store holds
 * the import mark, so its contents are torn, and the log is as it was before the install (see
 * PartitionReplica.installSnapshot). The install cannot be finished (the snapshot's bytes were only
 * in memory), so it is undone: the store is emptied and the log goes back to the founding state
 * with the same term and vote, in one synced batch with the removal of the mark (a crash before it
 * just repeats this at the next open). The leader then sends the snapshot again and the node
 * rejoins. Returns the interrupted install's index (0 when the mark did not name it), or undefined
 * when there was nothing to reconcile.
 */
export async function discardInterruptedInstall(storage: PersistentLogStorage, mvcc: MvccStore): Promise<number | undefined> {
  if (!mvcc.needsSnapshot) return undefined;
  const index = mvcc.interruptedImportIndex ?? 0;
  // A group that never bootstrapped has no log to forget (the owner bootstraps it next).
  await mvcc.discardInterruptedImport(storage.snapshotMeta().index === 0 ? [] : storage.stageRestartAfterInterruptedInstall());
  return index;
}

/**
 * One replica of one partition on this node: its Raft group, its log storage and its MVCC state
 * machine, plus the callers waiting on proposals and reads. Only the node loop calls into it, so
 * the RawNode is never touched between a Ready and its advance.
 */
export class PartitionReplica {
  readonly raw: RawNode;
  private readonly proposals = new Map<number, ProposalWaiter>();
  /** Linearizable reads: the lease or ReadIndex rounds, then the wait for apply (read-barrier.ts). */
  readonly reads: ReadBarrier;
  /** The export held for lagging followers (held-snapshot.ts has its invariants). */
  private readonly held: HeldSnapshot;
  /** True while exportSnapshot runs (one export per group at a time). */
  exporting = false;
  /** Snapshots this replica exported for followers (tests and metrics). */
  get snapshotsExported(): number {
    return this.held.exportsCount;
  }
  /** True while a physical compaction step runs beside the loop (one per group at a time). */
  compactingStorage = false;
  /**
   * True while a snapshot from the leader imports beside the loop (set and cleared by the driver,
   * src/node/snapshot/snapshot-imports.ts). Invariant: meanwhile its Ready is outstanding, so nothing may
   * touch this.raw: propose and startReadRound refuse (asserted there), the driver skips the rest.
   */
  installing = false;
  /** The snapshot beginSnapshotImport imported; stage() of its Ready then skips the install. */
  private importedSnapshot: Snapshot | undefined;
  /** The staged transfer acceptSnapshot claimed, for the install of that snapshot. */
  private acceptedSnapshot: { readonly index: number; readonly staged: StagedSnapshot } | undefined;
  private appliedSinceSnapshot = 0;
  /** The configuration as of the entry being applied (apply, applyEntry: split entries read it). */
  private confAtEntry: ConfState | undefined;
  /** Highest log index applied, including entries the state machine ignores (empty, membership). */
  appliedIndex: number;
  /**
   * The apply of the Ready in flight (apply), and the snapshot import running beside the loop
   * (beginSnapshotImport), if any: a merge in the left neighbour waits for both before it reads
   * this replica's store (merge-apply.ts), since the loop applies groups side by side.
   */
  private applyingNow: Promise<void> | undefined;
  private importingNow: Promise<void> | undefined;
  /**
   * Set when the replica left the node for good (merged away, merge-apply.ts) while jobs beside
   * the loop may still finish for it: from then on it stages no log record, so nothing writes its
   * deleted Raft state back.
   */
  private retired = false;

  retire(): void {
    this.retired = true;
  }

  /** Proposals waiting to be applied (metrics). */
  get proposalsPending(): number {
    return this.proposals.size;
  }

  constructor(
    readonly id: number,
    readonly nodeId: number,
    readonly storage: PersistentLogStorage,
    readonly mvcc: MvccStore,
    private readonly settings: GroupSettings,
    rng: Rng,
    /** Told when a snapshot from the leader is refused (logging). */
    onSnapshotRefused: (reason: string) => void = () => undefined,
    private readonly options: ReplicaOptions = {},
  ) {
    if (options.nonAtomicSnapshotInstall !== true) assertStoreMatchesLog(id, mvcc, storage);
    this.appliedIndex = Math.max(mvcc.appliedIndex, storage.snapshotMeta().index);
    storage.raiseCommitTo(this.appliedIndex);
    this.raw = new RawNode({
      id: nodeId,
      storage,
      rng,
      applied: this.appliedIndex,
      electionTicks: settings.electionTicks,
      heartbeatTicks: settings.heartbeatTicks,
      preVote: true,
      checkQuorum: true,
      readMode: 'safe',
      quiesceAfterTicks: settings.quiesceAfterTicks,
      ...appendBatching(settings, options),
      // One Raft message stays far below the gRPC message limit (limits.maxMessageBytes).
      maxMessageBytes: 1024 * 1024,
      maxInflightBytes: 64 * 1024 * 1024,
      snapshotChunkBytes: 1024 * 1024,
      // A replica opened empty for a move votes only once it committed what its leader had (replica-moves.ts prepare).
      voteFloor: storage.voteFloor(),
      acceptSnapshot: (snapshot) => {
        // The data is a ticket; its chunks came beside Raft and were checked as they were staged
        // (snapshot-receiver.ts). Accepted only when a complete staged transfer matches it.
        const ticket = decodeSnapshotTicket(snapshot.data);
        const staged = ticket && options.stagedSnapshots?.claim(id, snapshot.meta.index, snapshot.meta.term, ticket);
        if (ticket === undefined) onSnapshotRefused('snapshot data is not a transfer ticket');
        else if (staged === undefined) onSnapshotRefused('no complete staged transfer matches the snapshot');
        if (this.acceptedSnapshot !== undefined && this.acceptedSnapshot.staged !== staged) this.releaseAccepted();
        if (staged) this.acceptedSnapshot = { index: snapshot.meta.index, staged };
        return staged !== undefined;
      },
    });
    this.reads = new ReadBarrier(id, this.raw, options.lease, (cause) => this.notLeaderError(cause));
    this.reads.release(this.appliedIndex);
    const maxEntriesWhileHeld = Math.max(MIN_ENTRIES_WHILE_SNAPSHOT_HELD, 10 * settings.snapshotEveryEntries);
    assert(options.spool !== undefined, 'a replica needs an engine to spool its exports in');
    const { engine, logger } = options.spool;
    this.held = new HeldSnapshot({ id, nodeId, raw: this.raw, mvcc, storage, nowMs: options.nowMs ?? (() => performance.now()), maxEntriesWhileHeld, engine, ...(logger && { logger }) });
  }

  /** SnapshotSource for the log storage: the ticket of the held export (held-snapshot.ts). */
  snapshotData(meta: SnapshotMeta): Uint8Array {
    return this.held.data(meta);
  }

  // ------------------------------------------------------------ requests (called by the loop)

  propose(payload: Uint8Array, waiter: Omit<ProposalWaiter, 'term'>, ackBeforeCommit = false): void {
    // An installing replica is a follower whose Ready is outstanding: refuse (retryable) before raw.
    if (this.installing) throw this.notLeaderError();
    const { index, term } = this.raw.propose(payload);
    if (ackBeforeCommit) {
      // Test-only defect (a negative control): claim success before the entry is committed.
      waiter.resolve({ index, revision: 0, applied: true, replayed: false, writes: [] });
      return;
    }
    this.proposals.set(index, { term, resolve: waiter.resolve, reject: waiter.reject });
  }

  enqueueRead(waiter: ReadWaiter): void {
    this.reads.enqueue(waiter);
  }

  /** Serves the reads that arrived since the previous call under the lease, or starts a ReadIndex round for them. */
  startReadRound(): void {
    if (this.installing) assert.fail(`partition ${this.id}: no read round while a snapshot imports (its Ready is outstanding)`);
    this.reads.startRound(this.appliedIndex);
  }

  // ------------------------------------------------------------ Ready handling

  /**
   * Step 1 of the Ready contract: everything this group needs in the node's one write, and whether
   * that write must be synced: only for entries, a snapshot, or a new term or vote (etcd's
   * MustSync), and for a commit index that commits a configuration change. Any other commit
   * index alone may be lost in a crash (see raiseCommitTo).
   */
  async stage(ready: Ready): Promise<{ ops: WriteOperation[]; mustSync: boolean }> {
    const previous = this.storage.hardState();
    // Invariant: a replica applies a configuration change only once a synced record says it is
    // committed. Without it, a crash took a move's configuration back on every survivor while the
    // node it moved off had been removed for good: the group never elected again (fault suite
    // seed 202; test/node/move-commit-durable.test.ts). Rare: one record per configuration change.
    const commitsConfChange = ready.committedEntries.some((entry) => entry.type === EntryType.ConfChange);
    const mustSync =
      commitsConfChange ||
      ready.snapshot !== undefined ||
      ready.entries.length > 0 ||
      (ready.hardState !== undefined && (ready.hardState.term !== previous.term || ready.hardState.vote !== previous.vote));
    const ops: WriteOperation[] = [];
    if (ready.snapshot && this.options.nonAtomicSnapshotInstall === true) {
      // The regression control: the store takes the snapshot (synced) before the loop's batch
      // records it in the log; a crash in between leaves the store ahead of the log.
      await this.mvcc.importSnapshot(this.takeAccepted(ready.snapshot.meta).chunks());
      this.options.stagedSnapshots?.installed(this.id);
      this.appliedIndex = ready.snapshot.meta.index;
      ops.push(...this.storage.stageSnapshot(ready.snapshot.meta));
    } else if (ready.snapshot && this.importedSnapshot === ready.snapshot) {
      // Imported beside the loop (beginSnapshotImport): the store and the log already hold it.
      this.importedSnapshot = undefined;
    } else if (ready.snapshot) {
      await this.installSnapshot(ready.snapshot, ready.hardState);
    } else {
      // An accepted transfer the core did not adopt (its log already covered it): release it.
      this.releaseAccepted();
    }
    ops.push(...this.storage.stageEntries(ready.entries));
    // A commit index alone is not written at all (stageHardState's lazyCommit): one record fewer per
    // group per iteration; except when it commits a configuration change (above). The commit index
    // that covers it may have reached memory in an earlier Ready (committed entries come in pages).
    const hardState = ready.hardState ? this.storage.stageHardState(ready.hardState, { lazyCommit: true }) : [];
    ops.push(...(hardState.length === 0 && commitsConfChange ? [this.storage.hardStateRecord()] : hardState));
    return { ops, mustSync };
  }

  /** False for the regression control (nonAtomicSnapshotInstall), whose stage() installs in the loop. */
  get importsBesideLoop(): boolean {
    return this.options.nonAtomicSnapshotInstall !== true;
  }

  /**
   * Imports the Ready's snapshot beside the loop (src/node/snapshot/snapshot-imports.ts): the driver keeps
   * the Ready outstanding and hands it to stage() once this resolves; every other group keeps
   * running meanwhile.
   */
  beginSnapshotImport(ready: Ready): Promise<void> {
    const snapshot = ready.snapshot;
    if (!(snapshot !== undefined && this.importsBesideLoop)) assert.fail(`partition ${this.id}: only a snapshot Ready imports beside the loop`);
    if (!(this.installing && this.importedSnapshot === undefined)) assert.fail(`partition ${this.id}: one snapshot import at a time, under the driver's installing mark`);
    const importing = this.installSnapshot(snapshot, ready.hardState).then(() => {
      this.importedSnapshot = snapshot;
    });
    this.importingNow = importing;
    return importing;
  }

  /**
   * Resolves when the apply in flight and the snapshot import beside the loop (if any) are done
   * (never rejects: a failed one stops the node anyway). Called from another group's apply in the
   * same iteration, it must first let the loop start every group's apply: the driver starts them
   * in one synchronous pass, so one microtask later this replica's is recorded.
   */
  async settled(): Promise<void> {
    await Promise.resolve();
    await this.importingNow?.catch(() => undefined);
    await this.applyingNow?.catch(() => undefined);
  }

  /**
   * Applies this replica's own stored entries from its applied index through `index`, outside
   * any Ready (merge-apply.ts: the left neighbour's merge entry proves they are committed, and
   * this replica leaves the loop right after, so its RawNode's applied index no longer matters).
   * Throws when the log does not hold them.
   */
  async applyStoredThrough(index: number): Promise<void> {
    if (this.installing) assert.fail(`partition ${this.id}: no catch-up while a snapshot imports`);
    this.confAtEntry = this.raw.confState();
    while (this.appliedIndex < index) {
      const from = this.appliedIndex + 1;
      if (from < this.storage.firstIndex() || index > this.storage.lastIndex()) {
        throw new AtollError('INTERNAL', `partition ${this.id}: entries ${from}..${index} are not in the local log [${this.storage.firstIndex()}, ${this.storage.lastIndex()}]`);
      }
      const entries = this.storage.entries(from, index + 1, 4 * 1024 * 1024);
      if (!(entries.length > 0 && entries[0]!.index === from)) assert.fail(`partition ${this.id}: the log returns entry ${from}`);
      for (const entry of entries) await this.applyEntry(entry);
    }
  }

  /**
   * Installs a snapshot from the leader, crash-atomically: the log's record of the snapshot (its
   * metadata, truncated state and the removal of the entries it replaces) and the hard state (its
   * term and vote, commit at most the snapshot index) are staged first and written in the import's
   * final synced batch, the one that removes the store's import mark (MvccStore.importSnapshot,
   * alsoWrite). So on disk the store and the log either both hold the snapshot, or the store holds
   * the mark and the log is untouched (the mark is written, synced, before anything is deleted);
   * open reconciles that second case (discardInterruptedInstall). The Ready's entries and full
   * hard state follow in the loop's batch, as for any Ready. If the import throws, memory is ahead
   * of disk and the loop stops the node; the restart reconciles.
   */
  private async installSnapshot(snapshot: Snapshot, hardState: Ready['hardState']): Promise<void> {
    const meta = snapshot.meta;
    const logOps = this.storage.stageSnapshot(meta);
    // A commit index beyond the snapshot would name entries that reach disk only in the loop's batch.
    if (hardState) logOps.push(...this.storage.stageHardState({ ...hardState, commit: Math.min(hardState.commit, meta.index) }));
    // The staged transfer acceptSnapshot claimed (the Raft core adopts only what it accepted):
    // read from disk one chunk at a time, checked again as it is written; its staged chunks are
    // deleted in the import's final batch.
    const staged = this.takeAccepted(meta);
    // A range the snapshot shrinks means a split this replica skipped: the heal's records land in
    // the same batch (split-heal.ts). Only a replica that held state had a range to shrink: one
    // past its founding snapshot (index 1), even when its store applied nothing yet (a founder cut
    // off from the start owns its equal-table range: simulator seed 1302, where such a replica's
    // first install came after a split and the new partition ran on two replicas, and a merge
    // back waited for the third for good).
    // Its record of the current range's end goes first, unsynced: the import's synced mark, written
    // next, makes it durable, and an import a crash cuts off empties the store but not the record.
    const heal = this.options.splitHeal;
    const recordHole = heal?.opsBeforeInstall(this.id, this.appliedIndex > 0 ? this.mvcc.hashRange : undefined) ?? [];
    if (recordHole.length > 0) await this.options.spool?.engine.write(recordHole);
    await this.mvcc.importSnapshot(staged.chunks(), {
      alsoWrite: [...logOps, ...staged.deleteOps()],
      checkedIndex: meta.index,
      ...(heal !== undefined && { alsoWriteFor: (after) => heal.opsAfterInstall(this.id, after) }),
    });
    heal?.installed(this.id);
    // Partitions merged into this one while this replica lagged leave the node (merge-apply.ts).
    this.options.merges?.installed?.(this);
    this.options.stagedSnapshots?.installed(this.id);
    assert.equal(this.mvcc.appliedIndex, meta.index, 'the installed store is at the snapshot index the log records');
    this.appliedIndex = meta.index;
  }

  private takeAccepted(meta: SnapshotMeta): StagedSnapshot {
    const accepted = this.acceptedSnapshot;
    // Invariant: the core adopts a snapshot only right after acceptSnapshot claimed its transfer.
    if (!(accepted !== undefined && accepted.index === meta.index)) assert.fail(`partition ${this.id}: the snapshot to install is the staged one the core accepted`);
    this.acceptedSnapshot = undefined;
    return accepted.staged;
  }

  private releaseAccepted(): void {
    if (this.acceptedSnapshot === undefined) return;
    this.acceptedSnapshot = undefined;
    this.options.stagedSnapshots?.release(this.id);
  }

  /** Step 3: apply committed entries in order and answer the callers waiting on them. */
  apply(ready: Ready): Promise<void> {
    const applying = this.applyReady(ready);
    this.applyingNow = applying;
    return applying;
  }

  private async applyReady(ready: Ready): Promise<void> {
    // Raft's configuration covers the previous Readies' conf changes (advance() applies this one's
    // after the batch); applyEntry folds this Ready's in, entry by entry, for split entries.
    this.confAtEntry = this.raw.confState();
    if (this.options.applyBeforeCommit === true) {
      // The defect: appended entries apply at once, contiguous with what is applied; committed
      // entries at or below the applied index are then skipped, even when the log replaced them.
      for (const entry of ready.entries) if (entry.index === this.appliedIndex + 1) await this.applyEntry(entry);
      for (const entry of ready.committedEntries) if (entry.index > this.appliedIndex) await this.applyEntry(entry);
    } else {
      for (const entry of ready.committedEntries) await this.applyEntry(entry);
    }
    this.reads.onReady(ready.readStates, ready.droppedReads);
    this.reads.release(this.appliedIndex);
    if (ready.softState && ready.softState.role !== 'leader') this.failProposalsOnStepDown();
  }

  private async applyEntry(entry: Entry): Promise<void> {
    const waiter = this.proposals.get(entry.index);
    if (waiter) this.proposals.delete(entry.index);
    this.appliedIndex = entry.index;
    if (entry.type !== EntryType.Normal || entry.data.length === 0) {
      if (entry.type === EntryType.ConfChange && this.confAtEntry !== undefined) this.confAtEntry = confAfter(this.confAtEntry, decodeConfChange(entry.data));
      waiter?.reject(this.notLeaderError());
      return;
    }
    if (isSplitEntry(entry.data)) {
      if (!(this.options.splits !== undefined)) assert.fail(`partition ${this.id}: a split entry on a replica that cannot split`);
      return this.answer(waiter, entry, await this.options.splits.apply(this, entry, this.confAtEntry ?? this.raw.confState()));
    }
    if (isFreezeEntry(entry.data) || isMergeEntry(entry.data)) {
      const merges = this.options.merges;
      if (!(merges !== undefined)) assert.fail(`partition ${this.id}: a merge entry on a replica that cannot merge`);
      const conf = this.confAtEntry ?? this.raw.confState();
      return this.answer(waiter, entry, await (isFreezeEntry(entry.data) ? merges.applyFreeze(this, entry, conf) : merges.applyMerge(this, entry, conf)));
    }
    const { nowMs, requestId, command } = decodeEntryPayload(entry.data);
    const result = await this.mvcc.apply(command, { index: entry.index, nowMs, ...(requestId !== undefined ? { requestId } : {}) });
    this.answer(waiter, entry, result);
  }

  private answer(waiter: ProposalWaiter | undefined, entry: Entry, result: ApplyResult): void {
    this.appliedSinceSnapshot++;
    if (!waiter) return;
    // Another leader's entry took this index: ours was never committed, so it is safe to retry.
    if (waiter.term !== entry.term) waiter.reject(this.notLeaderError());
    else waiter.resolve(result);
  }

  /**
   * Proposals above the commit index of a deposed leader may or may not commit under the next
   * leader; we cannot know, so they keep waiting (their callers' deadlines bound them). Proposals
   * whose index the new leader overwrote are failed when that index applies (term mismatch).
   */
  private failProposalsOnStepDown(): void {
    // Nothing to do eagerly; see applyEntry. Kept as a named step for readers of the loop.
  }

  // ------------------------------------------------------------ snapshots and compaction

  /** Raft asked for snapshot data this replica does not hold (a follower needs it). */
  needsSnapshotBuild(): boolean {
    return !this.retired && this.held.wanted;
  }

  /** Versions below the compaction floor await physical removal and no step runs now. */
  needsStorageCompaction(): boolean {
    return !this.compactingStorage && this.mvcc.storageCompactionPending;
  }

  /**
   * One bounded step of physical compaction (MvccStore.compactStorageStep), run beside the loop:
   * applies and reads go on meanwhile. Resolves true when more remains and may run at once (false
   * when done, or deferred by a snapshot export or import).
   */
  async compactStorageStep(): Promise<boolean> {
    const step = await this.mvcc.compactStorageStep();
    return !step.done && !step.deferred;
  }

  /** Whether the log is due for compaction; the loop asks once per iteration. */
  needsCompaction(): boolean {
    this.held.releaseDelivered();
    // See HeldSnapshot: the snapshot point stays put while an export is running, waiting for
    // adoption, or held for a follower.
    if (this.exporting || this.held.pinsSnapshotPoint) return false;
    return this.appliedSinceSnapshot >= this.settings.snapshotEveryEntries;
  }

  /**
   * Records the state machine's applied index as the snapshot point and compacts the log behind
   * it, without exporting anything: the state machine lives in the same LevelDB and is its own
   * snapshot, and the bytes a follower needs are exported only when Raft asks (snapshotData), at
   * the applied index of that moment. Returns the log ops for the loop's next synced write.
   *
   * Crash safety: every MVCC write up to the applied index went to the engine before these ops,
   * and the engine keeps write order (write-behind layers fold into the next synced batch), so a
   * recorded snapshot point never runs ahead of the state machine on disk.
   */
  compactLog(): WriteOperation[] {
    this.appliedSinceSnapshot = 0;
    if (this.retired) return [];
    const index = this.mvcc.appliedIndex;
    if (index <= this.storage.snapshotMeta().index) return [];
    // Data built for an older point would no longer match the metadata; a follower in the middle
    // of receiving it loses its transfer (its spool is deleted) and Raft asks again.
    this.held.drop();
    return this.recordSnapshot({ index, term: this.storage.term(index), confState: this.raw.confState() });
  }

  /** Drops exported snapshot data no follower asked for within `idleMs` (its spool is the cost). */
  releaseIdleSnapshot(nowMs: number, idleMs: number): void {
    this.held.releaseIdle(nowMs, idleMs);
  }

  /** The chunks of the held export for snapshot (index, snapTerm), for the sender (snapshot-transfer.ts). */
  exportedSnapshot(index: number, snapTerm: number): ExportedSnapshot | undefined {
    return this.held.exportedFor(index, snapTerm);
  }

  /** Checks a snapshot's chunks one at a time (the receiver, as they arrive). */
  snapshotCheck(): { add(chunk: Uint8Array): void; finish(): { appliedIndex: number } } {
    return this.mvcc.snapshotCheck();
  }

  /** Whether exported snapshot data is held (tests and metrics). */
  get holdsSnapshotData(): boolean {
    return this.held.holds;
  }

  /**
   * Exports a state-machine snapshot while the group keeps running. The loop calls it between
   * iterations: the point the snapshot describes (the state machine's applied index, that entry's
   * term, the membership) is fixed synchronously, in the same step that starts the export (an async
   * generator runs to its first yield at once, and the header it yields is that applied index;
   * checked below). The export then reads that point while applies go on (MvccStore exports are
   * consistent under concurrent applies; an import in between makes it throw). Resolves with the
   * snapshot, or undefined when there is nothing newer than the last one. The loop installs the
   * result with adoptSnapshot, inside an iteration.
   */
  async exportSnapshot(): Promise<Snapshot | undefined> {
    this.appliedSinceSnapshot = 0;
    return this.held.export();
  }

  /**
   * Installs a snapshot exportSnapshot built (called by the loop, between Readys): keeps it for
   * followers and returns the log ops that record it and compact the log behind it, for the loop's
   * next synced write. A snapshot overtaken meanwhile (one installed from the leader) is dropped.
   */
  adoptSnapshot(snapshot: Snapshot): WriteOperation[] {
    if (this.retired) return [];
    return this.held.adopt(snapshot, this.installing) ? this.recordSnapshot(snapshot.meta) : [];
  }

  private recordSnapshot(meta: SnapshotMeta): WriteOperation[] {
    const ops = this.storage.stageSnapshotMeta(meta);
    const compactTo = meta.index - this.settings.logEntriesKeptAfterSnapshot;
    if (compactTo > this.storage.firstIndex()) ops.push(...this.storage.stageCompact(compactTo));
    return ops;
  }

  // ------------------------------------------------------------ errors

  notLeaderError(cause?: unknown): AtollError {
    const status = this.raw.status();
    const lead = status.lead;
    if (status.role === 'leader' && cause instanceof RaftError && /uncommitted/.test(cause.message)) {
      // The leader is fine but its log is backed up: that is back-pressure, not a lost leader.
      return new AtollError('RESOURCE_EXHAUSTED', `partition ${this.id}: ${cause.message}; retry later`, { partition: this.id });
    }
    const reason = cause instanceof Error ? cause.message : 'leadership changed before the request completed';
    return new AtollError(lead === 0 ? 'NO_LEADER' : 'NOT_LEADER', `partition ${this.id}: ${reason}`, {
      partition: this.id,
      ...(lead !== 0 && lead !== this.nodeId ? { leaderId: lead } : {}),
    });
  }

  /** No voters and no learners: an empty replica a move opened, before its first snapshot (raft-driver.ts). */
  awaitingFirstSnapshot(): boolean {
    const { voters, learners } = this.raw.confState();
    return voters.length === 0 && learners.length === 0;
  }

  /**
   * Fails everything still waiting (shutdown, or the replica leaves this node). `proposalsError`,
   * when given, is what the proposals get instead of `error` (see ReplicaMoves.leave).
   */
  failAll(error: AtollError, proposalsError: AtollError = error): void {
    for (const waiter of this.proposals.values()) waiter.reject(proposalsError);
    this.proposals.clear();
    this.reads.failAll(error);
  }
}

/**
 * Checks, at open, the invariant a crash-atomic snapshot install keeps between a partition's
 * store and its Raft log (see PartitionReplica.installSnapshot).
 */
function assertStoreMatchesLog(id: number, mvcc: MvccStore, storage: PersistentLogStorage): void {
  // Invariant (crash-atomic snapshot install, see stage): on disk, either the store carries no
  // import mark and the log covers what it applied (snapshot point <= applied index <= last
  // log index; an empty store is the founding state at index 1), or the store carries the mark
  // and the log is as it was before that install began. The owner reconciles the second case
  // before building the replica (discardInterruptedInstall), so here only the first remains.
  if (mvcc.needsSnapshot) assert.fail(`partition ${id}: an interrupted snapshot install was not reconciled before open`);
  assert.ok(
    Math.max(mvcc.appliedIndex, 1) >= storage.snapshotMeta().index && mvcc.appliedIndex <= storage.lastIndex(),
    `partition ${id}: store applied ${mvcc.appliedIndex} outside the log [snapshot ${storage.snapshotMeta().index}, last ${storage.lastIndex()}]`,
  );
}
