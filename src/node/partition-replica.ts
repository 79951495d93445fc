import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { AtollError } from '../errors.js';
import { decodeCommand, type ApplyResult, type Command, type MvccStore } from '../mvcc/index.js';
import { readSnapshotHeader } from '../mvcc/snapshot-format.js';
import { checkedSnapshotChunks, frameChunks, PayloadDigest, unframeChunks } from './snapshot-payload.js';
import { RaftError } from '../raft/errors.js';
import { RawNode, type Ready } from '../raft/rawnode.js';
import type { Rng } from '../raft/rng.js';
import { EntryType, type Entry, type Snapshot, type SnapshotMeta } from '../raft/types.js';
import { ByteReader, ByteWriter } from '../storage/byte-codec.js';
import type { WriteOperation } from '../storage/storage-engine.js';
import type { PersistentLogStorage } from './raft-log-store.js';

/** Raft settings the node uses for every partition group. */
export interface GroupSettings {
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly quiesceAfterTicks: number;
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

interface ReadWaiter {
  resolve(): void;
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

function decodeEntryPayload(data: Uint8Array): { nowMs: number; requestId: string | undefined; command: Command } {
  const reader = new ByteReader(data, 'log entry');
  const nowMs = reader.uint64();
  const requestId = reader.text();
  return { nowMs, requestId: requestId === '' ? undefined : requestId, command: decodeCommand(data.subarray(data.length - reader.remaining)) };
}

export { frameChunks, PayloadDigest, snapshotPayloadRefusal, unframeChunks } from './snapshot-payload.js';

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
  /** Reads that arrived since the last ReadIndex round started: they join the next round. */
  private readsWaitingForRound: ReadWaiter[] = [];
  private readonly readRounds = new Map<string, ReadWaiter[]>();
  /** Reads whose index is known, waiting for the state machine to apply it. */
  private readsWaitingForApply: Array<{ index: number; waiter: ReadWaiter }> = [];
  private roundCounter = 0;
  /**
   * Snapshot data exported for a follower that needs it, kept until the followers have it. Only
   * Raft's request for it (snapshotData) builds one: the log is compacted without exporting anything.
   * Invariant: while it is held, the recorded snapshot point is its index and the log is not
   * compacted (needsCompaction is false), so Raft's next request for a snapshot names exactly this
   * data and one export serves a lagging follower however long it takes. It is released when every
   * follower's match reaches its index and none is receiving a snapshot (acknowledged), when this
   * replica stops leading, when no transfer used it for the idle time (releaseIdleSnapshot), or
   * when the log grew past maxEntriesWhileSnapshotHeld behind it (memory bound); one per group.
   */
  private builtSnapshot: Snapshot | undefined;
  /** When builtSnapshot was last handed out, built or seen in a transfer (options.nowMs). */
  private builtSnapshotUsedAtMs = 0;
  /** An export finished and waits for adoptSnapshot: the snapshot point must not move meanwhile. */
  private exportAwaitingAdoption = false;
  snapshotWanted = false;
  /** True while exportSnapshot runs (one export per group at a time). */
  exporting = false;
  /** Snapshots this replica exported for followers (tests and metrics). */
  snapshotsExported = 0;
  private readonly nowMs: () => number;
  private readonly maxEntriesWhileSnapshotHeld: number;
  /** True while a physical compaction step runs beside the loop (one per group at a time). */
  compactingStorage = false;
  /**
   * True while a snapshot from the leader imports beside the loop (set and cleared by the driver,
   * src/node/snapshot-imports.ts). Invariant: meanwhile its Ready is outstanding, so nothing may
   * touch this.raw: propose and startReadRound refuse (asserted there), the driver skips the rest.
   */
  installing = false;
  /** The snapshot beginSnapshotImport imported; stage() of its Ready then skips the install. */
  private importedSnapshot: Snapshot | undefined;
  /** The last payload acceptSnapshot checked, and its chunks (views into it). */
  private acceptedSnapshot: { readonly data: Uint8Array; readonly chunks: Uint8Array[] } | undefined;
  private appliedSinceSnapshot = 0;
  /** Highest log index applied, including entries the state machine ignores (empty, membership). */
  appliedIndex: number;

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
    this.nowMs = options.nowMs ?? (() => performance.now());
    this.maxEntriesWhileSnapshotHeld = Math.max(MIN_ENTRIES_WHILE_SNAPSHOT_HELD, 10 * settings.snapshotEveryEntries);
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
      // One Raft message stays far below the gRPC message limit (limits.maxMessageBytes).
      maxMessageBytes: 1024 * 1024,
      maxInflightBytes: 64 * 1024 * 1024,
      snapshotChunkBytes: 1024 * 1024,
      acceptSnapshot: (snapshot) => {
        const checked = checkedSnapshotChunks(snapshot, mvcc);
        if (typeof checked === 'string') onSnapshotRefused(checked);
        // Kept for the install of exactly this payload, so it is not unframed and checked twice.
        this.acceptedSnapshot = typeof checked === 'string' ? undefined : { data: snapshot.data, chunks: checked };
        return typeof checked !== 'string';
      },
    });
  }

  /** SnapshotSource for the log storage: the bytes of the snapshot the metadata describes. */
  snapshotData(meta: SnapshotMeta): Uint8Array {
    if (this.builtSnapshot && this.builtSnapshot.meta.index === meta.index) {
      this.builtSnapshotUsedAtMs = this.nowMs();
      return this.builtSnapshot.data;
    }
    this.snapshotWanted = true;
    throw new RaftError('SNAPSHOT_TEMPORARILY_UNAVAILABLE', `partition ${this.id}: snapshot being built`);
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
    this.readsWaitingForRound.push(waiter);
    // The loop visits only groups with work (group-activity.ts): this is work outside Raft.
    this.raw.notifyHost();
  }

  /** Starts a ReadIndex round for every read that arrived since the previous one started. */
  startReadRound(): void {
    if (this.readsWaitingForRound.length === 0) return;
    assert.ok(!this.installing, `partition ${this.id}: no read round while a snapshot imports (its Ready is outstanding)`);
    const waiters = this.readsWaitingForRound;
    this.readsWaitingForRound = [];
    const context = `${this.id}:${++this.roundCounter}`;
    try {
      this.raw.readIndex(context);
      this.readRounds.set(context, waiters);
    } catch (error) {
      for (const waiter of waiters) waiter.reject(this.notLeaderError(error));
    }
  }

  // ------------------------------------------------------------ Ready handling

  /**
   * Step 1 of the Ready contract: everything this group needs in the node's one write, and whether
   * that write must be synced: only for entries, a snapshot, or a new term or vote (etcd's
   * MustSync). A commit index alone may be lost in a crash (see raiseCommitTo).
   */
  async stage(ready: Ready): Promise<{ ops: WriteOperation[]; mustSync: boolean }> {
    const previous = this.storage.hardState();
    const mustSync =
      ready.snapshot !== undefined ||
      ready.entries.length > 0 ||
      (ready.hardState !== undefined && (ready.hardState.term !== previous.term || ready.hardState.vote !== previous.vote));
    const ops: WriteOperation[] = [];
    if (ready.snapshot && this.options.nonAtomicSnapshotInstall === true) {
      // The regression control: the store takes the snapshot (synced) before the loop's batch
      // records it in the log; a crash in between leaves the store ahead of the log.
      await this.mvcc.importSnapshot(unframeChunks(ready.snapshot.data));
      this.appliedIndex = ready.snapshot.meta.index;
      ops.push(...this.storage.stageSnapshot(ready.snapshot.meta));
    } else if (ready.snapshot && this.importedSnapshot === ready.snapshot) {
      // Imported beside the loop (beginSnapshotImport): the store and the log already hold it.
      this.importedSnapshot = undefined;
    } else if (ready.snapshot) {
      await this.installSnapshot(ready.snapshot, ready.hardState);
    } else {
      // An accepted payload the core did not adopt (its log already covered it): release it.
      this.acceptedSnapshot = undefined;
    }
    ops.push(...this.storage.stageEntries(ready.entries));
    if (ready.hardState) ops.push(...this.storage.stageHardState(ready.hardState));
    return { ops, mustSync };
  }

  /** False for the regression control (nonAtomicSnapshotInstall), whose stage() installs in the loop. */
  get importsBesideLoop(): boolean {
    return this.options.nonAtomicSnapshotInstall !== true;
  }

  /**
   * Imports the Ready's snapshot beside the loop (src/node/snapshot-imports.ts): the driver keeps
   * the Ready outstanding and hands it to stage() once this resolves; every other group keeps
   * running meanwhile.
   */
  beginSnapshotImport(ready: Ready): Promise<void> {
    const snapshot = ready.snapshot;
    assert.ok(snapshot !== undefined && this.importsBesideLoop, `partition ${this.id}: only a snapshot Ready imports beside the loop`);
    assert.ok(this.installing && this.importedSnapshot === undefined, `partition ${this.id}: one snapshot import at a time, under the driver's installing mark`);
    return this.installSnapshot(snapshot, ready.hardState).then(() => {
      this.importedSnapshot = snapshot;
    });
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
    // The payload acceptSnapshot checked (the same bytes: the Raft core adopted what it accepted)
    // is not checked again as a whole; the import still checks each chunk as it writes it.
    const accepted = this.acceptedSnapshot?.data === snapshot.data ? this.acceptedSnapshot : undefined;
    this.acceptedSnapshot = undefined;
    const chunks = accepted?.chunks ?? unframeChunks(snapshot.data);
    await this.mvcc.importSnapshot(chunks, { alsoWrite: logOps, ...(accepted ? { checkedIndex: meta.index } : {}) });
    assert.equal(this.mvcc.appliedIndex, meta.index, 'the installed store is at the snapshot index the log records');
    this.appliedIndex = meta.index;
  }

  /** Step 3: apply committed entries in order and answer the callers waiting on them. */
  async apply(ready: Ready): Promise<void> {
    if (this.options.applyBeforeCommit === true) {
      // The defect: appended entries apply at once, contiguous with what is applied; committed
      // entries at or below the applied index are then skipped, even when the log replaced them.
      for (const entry of ready.entries) if (entry.index === this.appliedIndex + 1) await this.applyEntry(entry);
      for (const entry of ready.committedEntries) if (entry.index > this.appliedIndex) await this.applyEntry(entry);
    } else {
      for (const entry of ready.committedEntries) await this.applyEntry(entry);
    }
    for (const state of ready.readStates) {
      const waiters = this.readRounds.get(state.context);
      if (!waiters) continue;
      this.readRounds.delete(state.context);
      for (const waiter of waiters) this.readsWaitingForApply.push({ index: state.index, waiter });
    }
    for (const context of ready.droppedReads) {
      const waiters = this.readRounds.get(context) ?? [];
      this.readRounds.delete(context);
      for (const waiter of waiters) waiter.reject(this.notLeaderError());
    }
    this.releaseReads();
    if (ready.softState && ready.softState.role !== 'leader') this.failProposalsOnStepDown();
  }

  private async applyEntry(entry: Entry): Promise<void> {
    const waiter = this.proposals.get(entry.index);
    if (waiter) this.proposals.delete(entry.index);
    this.appliedIndex = entry.index;
    if (entry.type !== EntryType.Normal || entry.data.length === 0) {
      waiter?.reject(this.notLeaderError());
      return;
    }
    const { nowMs, requestId, command } = decodeEntryPayload(entry.data);
    const result = await this.mvcc.apply(command, { index: entry.index, nowMs, ...(requestId !== undefined ? { requestId } : {}) });
    this.appliedSinceSnapshot++;
    if (!waiter) return;
    // Another leader's entry took this index: ours was never committed, so it is safe to retry.
    if (waiter.term !== entry.term) waiter.reject(this.notLeaderError());
    else waiter.resolve(result);
  }

  private releaseReads(): void {
    const applied = this.appliedIndex;
    const still: typeof this.readsWaitingForApply = [];
    for (const read of this.readsWaitingForApply) {
      if (read.index <= applied) read.waiter.resolve();
      else still.push(read);
    }
    this.readsWaitingForApply = still;
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
    return this.snapshotWanted;
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
    this.releaseDeliveredSnapshot();
    // See builtSnapshot: the snapshot point stays put while an export is running, waiting for
    // adoption, or held for a follower.
    if (this.exporting || this.exportAwaitingAdoption || this.builtSnapshot !== undefined) return false;
    return this.appliedSinceSnapshot >= this.settings.snapshotEveryEntries;
  }

  /** Releases held snapshot data the followers no longer need (see builtSnapshot); refreshes it while a transfer runs. */
  private releaseDeliveredSnapshot(): void {
    const held = this.builtSnapshot;
    if (held === undefined) return;
    const status = this.raw.status();
    if (status.role !== 'leader') {
      this.builtSnapshot = undefined;
      return;
    }
    let acknowledged = true;
    for (const [id, progress] of status.progress) {
      if (id === this.nodeId) continue;
      if (progress.state === 'snapshot') {
        // A transfer is running (Raft's progress holds the data too): keep it for a resend.
        this.builtSnapshotUsedAtMs = this.nowMs();
        return;
      }
      if (progress.match < held.meta.index) acknowledged = false;
    }
    if (acknowledged || status.lastIndex - held.meta.index > this.maxEntriesWhileSnapshotHeld) this.builtSnapshot = undefined;
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
    const index = this.mvcc.appliedIndex;
    if (index <= this.storage.snapshotMeta().index) return [];
    // Data built for an older point would no longer match the metadata; a follower in the middle
    // of receiving it keeps its own reference (Raft's progress holds the snapshot it sends).
    this.builtSnapshot = undefined;
    return this.recordSnapshot({ index, term: this.storage.term(index), confState: this.raw.status().confState });
  }

  /** Drops exported snapshot data no follower asked for within `idleMs` (memory is the cost). */
  releaseIdleSnapshot(nowMs: number, idleMs: number): void {
    if (this.builtSnapshot && !this.snapshotWanted && nowMs - this.builtSnapshotUsedAtMs > idleMs) this.builtSnapshot = undefined;
  }

  /** Whether exported snapshot data is held (tests and metrics). */
  get holdsSnapshotData(): boolean {
    return this.builtSnapshot !== undefined;
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
    this.snapshotWanted = false;
    this.appliedSinceSnapshot = 0;
    this.exportAwaitingAdoption = false;
    const index = this.mvcc.appliedIndex;
    if (index <= this.storage.snapshotMeta().index && this.builtSnapshot) return undefined;
    const meta: SnapshotMeta = { index, term: this.storage.term(index), confState: this.raw.status().confState };
    const iterator = this.mvcc.exportSnapshot()[Symbol.asyncIterator]();
    const chunks: Uint8Array[] = [];
    const digest = new PayloadDigest();
    try {
      for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
        chunks.push(next.value);
        digest.add(next.value);
      }
    } finally {
      await iterator.return?.();
    }
    assert.equal(readSnapshotHeader(chunks[0] as Uint8Array).appliedIndex, index, 'the export started at the applied index it was fixed at');
    this.snapshotsExported++;
    this.exportAwaitingAdoption = true;
    return { meta, data: frameChunks(chunks, digest.digest()) };
  }

  /**
   * Installs a snapshot exportSnapshot built (called by the loop, between Readys): keeps it for
   * followers and returns the log ops that record it and compact the log behind it, for the loop's
   * next synced write. A snapshot overtaken meanwhile (one installed from the leader) is dropped.
   */
  adoptSnapshot(snapshot: Snapshot): WriteOperation[] {
    this.exportAwaitingAdoption = false;
    const current = this.storage.snapshotMeta().index;
    if (this.installing || snapshot.meta.index < current || (snapshot.meta.index === current && this.builtSnapshot)) return [];
    this.builtSnapshot = snapshot;
    this.builtSnapshotUsedAtMs = this.nowMs();
    return this.recordSnapshot(snapshot.meta);
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
    const { voters, learners } = this.raw.status().confState;
    return voters.length === 0 && learners.length === 0;
  }

  /** Fails everything still waiting (shutdown). */
  failAll(error: AtollError): void {
    for (const waiter of this.proposals.values()) waiter.reject(error);
    this.proposals.clear();
    for (const waiters of this.readRounds.values()) for (const waiter of waiters) waiter.reject(error);
    this.readRounds.clear();
    for (const waiter of this.readsWaitingForRound) waiter.reject(error);
    this.readsWaitingForRound = [];
    for (const read of this.readsWaitingForApply) read.waiter.reject(error);
    this.readsWaitingForApply = [];
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
  assert.ok(!mvcc.needsSnapshot, `partition ${id}: an interrupted snapshot install was not reconciled before open`);
  assert.ok(
    Math.max(mvcc.appliedIndex, 1) >= storage.snapshotMeta().index && mvcc.appliedIndex <= storage.lastIndex(),
    `partition ${id}: store applied ${mvcc.appliedIndex} outside the log [snapshot ${storage.snapshotMeta().index}, last ${storage.lastIndex()}]`,
  );
}
