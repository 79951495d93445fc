/**
 * A leader replica's exported snapshot, held for its lagging followers (one job: that export's
 * life). PartitionReplica builds it when Raft asks for snapshot data (snapshotData throws
 * SNAPSHOT_TEMPORARILY_UNAVAILABLE and marks it wanted), exports it beside the loop, adopts it in
 * an iteration, and the node's sender (snapshot-sender.ts) streams its chunks; Raft carries only
 * its ticket (snapshot-payload.ts).
 *
 * Invariant: while it is held, the recorded snapshot point is its index and the log is not
 * compacted (pinsSnapshotPoint: PartitionReplica.needsCompaction is false), so Raft's next request
 * for a snapshot names exactly this export and one export serves a lagging follower however long it
 * takes. It is released when every follower's match reaches its index and none is receiving a
 * snapshot (acknowledged), when the replica stops leading, when no transfer used it for the idle
 * time (releaseIdle), or when the log grew past maxEntriesWhileHeld behind it (log bound); one
 * per group. Its chunks are not in memory: export() writes them to the spool (snapshot-spool.ts)
 * as the MVCC export yields them, one chunk at a time, and the sender reads chunk N from there when
 * it sends it. Spool invariants (asserted below): the spool is complete before the ticket is
 * offered; a group has at most one held spool plus the one being written; a released spool reads
 * as gone at once and is deleted beside the loop. A transfer running when it is released ends (its
 * next read finds nothing) and Raft asks for a snapshot again.
 */
import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import type { MvccStore } from '../../mvcc/index.js';
import { readSnapshotHeader } from '../../mvcc/snapshot-format.js';
import { RaftError } from '../../raft/errors.js';
import type { RawNode } from '../../raft/rawnode.js';
import type { Snapshot, SnapshotMeta } from '../../raft/types.js';
import type { StorageEngine } from '../../storage/storage-engine.js';
import type { PersistentLogStorage } from '../raftlog/raft-log-store.js';
import { encodeSnapshotTicket, PayloadDigest } from './snapshot-payload.js';
import { deleteSpool, spoolKey } from './snapshot-spool.js';
import type { ExportedSnapshot } from './snapshot-transfer.js';

export interface HeldSnapshotHost {
  readonly id: number;
  readonly nodeId: number;
  readonly raw: RawNode;
  readonly mvcc: MvccStore;
  readonly storage: PersistentLogStorage;
  /** Monotonic milliseconds (the node's clock port). */
  nowMs(): number;
  readonly maxEntriesWhileHeld: number;
  /** Where the export's chunks are spooled (the node's engine). */
  readonly engine: StorageEngine;
  readonly logger?: Logger;
}

/** One export's spooled chunks (keys: snapshot-spool.ts). */
interface Spool extends ExportedSnapshot {
  readonly exportId: number;
  released: boolean;
}

export class HeldSnapshot {
  /** The adopted export's Raft snapshot (its data is the ticket). */
  private snapshot: Snapshot | undefined;
  /** The spooled chunks the ticket names. */
  private exported: Spool | undefined;
  /** An export's spool between export() and adopt(). */
  private pending: { readonly index: number; readonly exported: Spool } | undefined;
  /** Spools written and not yet released (the invariant: at most the held one and one being written). */
  private readonly liveSpools = new Set<number>();
  /** Export ids: every export spools under a new one, so a late read never sees another export's chunks. */
  private exportIds = 0;
  /** Deletes of released spools, one after another, beside the loop. */
  private deleting: Promise<void> = Promise.resolve();
  /** Bytes of export chunks this replica held in memory at once, at most (tests: one chunk). */
  peakExportBytes = 0;
  /** When it was last handed out, built or seen in a transfer. */
  private usedAtMs = 0;
  /** An export finished and waits for adopt(): the snapshot point must not move meanwhile. */
  private awaitingAdoption = false;
  /** Raft asked for data not held: the loop starts an export. */
  wanted = false;
  /** Exports made (tests and metrics). */
  exportsCount = 0;

  constructor(private readonly host: HeldSnapshotHost) {}

  /** SnapshotSource for the log storage: the ticket of the held export, or wanted and throws. */
  data(meta: SnapshotMeta): Uint8Array {
    if (this.snapshot && this.snapshot.meta.index === meta.index) {
      this.usedAtMs = this.host.nowMs();
      return this.snapshot.data;
    }
    this.wanted = true;
    throw new RaftError('SNAPSHOT_TEMPORARILY_UNAVAILABLE', `partition ${this.host.id}: snapshot being built`);
  }

  get holds(): boolean {
    return this.snapshot !== undefined;
  }

  /** Whether the snapshot point must stay where it is (see the invariant). */
  get pinsSnapshotPoint(): boolean {
    return this.awaitingAdoption || this.snapshot !== undefined;
  }

  /** The chunks of the held export for snapshot (index, snapTerm), for the sender. */
  exportedFor(index: number, snapTerm: number): ExportedSnapshot | undefined {
    const held = this.snapshot;
    if (held === undefined || held.meta.index !== index || held.meta.term !== snapTerm) return undefined;
    this.usedAtMs = this.host.nowMs();
    return this.exported;
  }

  drop(): void {
    this.snapshot = undefined;
    if (this.exported !== undefined) this.release(this.exported);
    this.exported = undefined;
  }

  /** Resolves once every spool released so far is deleted (tests). */
  spoolDeleted(): Promise<void> {
    return this.deleting;
  }

  /** Ends a spool: reads find nothing from now on, and its keys go in bounded batches beside the loop. */
  private release(spool: Spool): void {
    if (spool.released) return;
    spool.released = true;
    this.liveSpools.delete(spool.exportId);
    const { engine, id, logger } = this.host;
    this.deleting = this.deleting
      .then(() => deleteSpool(engine, id, spool.exportId, spool.chunkCount))
      // Left behind, it is deleted when the replica next opens (snapshot-spool.ts).
      .catch((error: unknown) => logger?.warn({ err: error, partition: id }, 'could not delete a snapshot spool'));
  }

  /** Drops an export no follower asked for within `idleMs` (its spool is the cost). */
  releaseIdle(nowMs: number, idleMs: number): void {
    if (this.snapshot && !this.wanted && nowMs - this.usedAtMs > idleMs) this.drop();
  }

  /** Releases the export once the followers no longer need it (see the invariant); refreshes it while a transfer runs. */
  releaseDelivered(): void {
    const held = this.snapshot;
    if (held === undefined) return;
    const status = this.host.raw.status();
    if (status.role !== 'leader') {
      this.drop();
      return;
    }
    let acknowledged = true;
    for (const [id, progress] of status.progress) {
      if (id === this.host.nodeId) continue;
      if (progress.state === 'snapshot') {
        // A transfer is running: keep the export for a resend.
        this.usedAtMs = this.host.nowMs();
        return;
      }
      if (progress.match < held.meta.index) acknowledged = false;
    }
    if (acknowledged || status.lastIndex - held.meta.index > this.host.maxEntriesWhileHeld) this.drop();
  }

  /**
   * Exports a state-machine snapshot while the group keeps running (PartitionReplica.exportSnapshot
   * says when the point is fixed). Resolves with the Raft snapshot (a ticket), or undefined when
   * there is nothing newer than the one held.
   */
  async export(): Promise<Snapshot | undefined> {
    const { mvcc, storage, raw } = this.host;
    this.wanted = false;
    this.awaitingAdoption = false;
    const index = mvcc.appliedIndex;
    if (index <= storage.snapshotMeta().index && this.snapshot) return undefined;
    const meta: SnapshotMeta = { index, term: storage.term(index), confState: raw.status().confState };
    if (this.pending !== undefined) this.release(this.pending.exported); // Never adopted.
    this.pending = undefined;
    const { engine, id } = this.host;
    const exportId = ++this.exportIds;
    const iterator = mvcc.exportSnapshot()[Symbol.asyncIterator]();
    const digest = new PayloadDigest();
    let chunkCount = 0;
    let byteCount = 0;
    try {
      for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
        const chunk = next.value;
        if (chunkCount === 0) assert.equal(readSnapshotHeader(chunk).appliedIndex, index, 'the export started at the applied index it was fixed at');
        digest.add(chunk);
        this.peakExportBytes = Math.max(this.peakExportBytes, chunk.length);
        // One chunk per unsynced write: memory holds this chunk only. A failed write throws and
        // gives up the export (the caller logs it; Raft asks again).
        await engine.write([{ type: 'put', key: spoolKey(id, exportId, chunkCount), value: chunk }]);
        chunkCount++;
        byteCount += chunk.length;
      }
    } catch (error) {
      // The failed write may have landed: delete it too.
      this.release({ exportId, chunkCount: chunkCount + 1, digest: new Uint8Array(), released: false, readChunk: async () => undefined });
      throw error;
    } finally {
      await iterator.return?.();
    }
    // Invariant: the spool is complete before the ticket is offered (every chunk written, the last one readable).
    assert(chunkCount > 0 && (await engine.get(spoolKey(id, exportId, chunkCount - 1))) !== undefined, 'the spool holds every chunk of the export');
    this.liveSpools.add(exportId);
    // Invariant: at most the held spool and this new one.
    assert(this.liveSpools.size <= 2, 'a group spools at most its held export and the one being built');
    this.exportsCount++;
    this.awaitingAdoption = true;
    const spool: Spool = {
      exportId,
      chunkCount,
      digest: digest.digest(),
      released: false,
      readChunk: async (seq) => (spool.released || seq < 0 || seq >= chunkCount ? undefined : engine.get(spoolKey(id, exportId, seq))),
    };
    this.pending = { index, exported: spool };
    // Raft carries only the ticket; the chunks travel beside it (snapshot-transfer.ts).
    return { meta, data: encodeSnapshotTicket({ digest: spool.digest, chunkCount, byteCount }) };
  }

  /**
   * Holds a snapshot export() built; returns true when the caller must record it as the snapshot
   * point (false: overtaken meanwhile, by an install from the leader or a newer point).
   */
  adopt(snapshot: Snapshot, installing: boolean): boolean {
    this.awaitingAdoption = false;
    const pending = this.pending;
    this.pending = undefined;
    const current = this.host.storage.snapshotMeta().index;
    const refused = installing || snapshot.meta.index < current || (snapshot.meta.index === current && this.snapshot) || pending === undefined || pending.index !== snapshot.meta.index;
    if (refused) {
      if (pending !== undefined) this.release(pending.exported);
      return false;
    }
    // The newer export replaces the held one: its spool goes.
    this.drop();
    this.snapshot = snapshot;
    this.exported = pending.exported;
    // Requests made while it was exported named the older point; Raft's next one names this one.
    this.wanted = false;
    // Invariant: one held spool per group (the one just adopted).
    assert(this.liveSpools.size === 1 && this.liveSpools.has(pending.exported.exportId), 'a group holds one spooled export');
    this.usedAtMs = this.host.nowMs();
    return true;
  }
}
