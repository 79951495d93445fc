/**
 * The follower's side of a snapshot transfer (snapshot-transfer.ts has the protocol): checks each
 * chunk as it arrives, stages it on disk, acknowledges it, and hands a complete transfer to the
 * install. Its one job is the incoming transfers' state.
 *
 * Invariants (each enforced where noted):
 * - At most one transfer per group and MAX_INCOMING_TRANSFERS per node (start).
 * - Chunks are taken in order only: a chunk is staged only when its seq is the next one expected
 *   of the transfer it names (onChunk); anything else is refused and changes nothing.
 * - Bytes buffered (received, not yet written) stay at most TRANSFER_WINDOW chunks per transfer
 *   (accept): the follower never holds more of a snapshot than that.
 * - A transfer is complete only when every chunk passed the MVCC checks in order, the running
 *   digest equals the one every chunk named, and every chunk is written (accept, then the write).
 * - A discarded transfer deletes exactly the chunks it staged, after its pending writes (the
 *   group's write chain), before any later transfer of that group writes: staging never mixes two.
 * - A transfer the core accepted (claim) is not discarded by anything but its release; the install
 *   consumes it (the import's final batch deletes its chunks).
 */
import { timingSafeEqual } from 'node:crypto';
import { equalBytes } from '../../storage/bytes.js';
import type { SnapshotAckItem, SnapshotChunkItem, TransferId } from '../raft-wire.js';
import { PayloadDigest, type SnapshotTicket } from './snapshot-payload.js';
import { readStagedChunks, stagedChunkDeletes, stagingKey } from './snapshot-staging.js';
import { MAX_INCOMING_TRANSFERS, TRANSFER_IDLE_MS, TRANSFER_WINDOW, type TransferGroup, type TransferHost } from './snapshot-transfer.js';

interface Incoming {
  readonly id: TransferId;
  readonly group: number;
  /** The replica it stages chunks for (the host's group object when the transfer started). */
  readonly replica: TransferGroup;
  /** Chunks received and checked (the next expected seq). */
  next: number;
  /** Chunks on disk (acknowledged). */
  written: number;
  /** Bytes received and not yet written. */
  buffered: number;
  /** Every chunk checked, the digest matched, all written. */
  complete: boolean;
  /** The Raft core accepted it (claim): only release() or the install end it. */
  claimed: boolean;
  discarded: boolean;
  lastProgressMs: number;
  readonly check: { add(chunk: Uint8Array): void; finish(): { appliedIndex: number } } | undefined;
  readonly digest: PayloadDigest;
}

/** A complete staged transfer the install reads (StagedSnapshots.claim). */
export interface StagedSnapshot {
  readonly group: number;
  readonly chunkCount: number;
  chunks(): AsyncIterable<Uint8Array>;
  /** Deletes of its staged chunks, for the import's final batch. */
  deleteOps(): ReturnType<typeof stagedChunkDeletes>;
}

export class SnapshotReceiver {
  private readonly incoming = new Map<number, Incoming>();
  /** Per group, the last transfer whose first chunk this node declined to start (see onChunk). */
  private readonly declined = new Map<number, TransferId>();
  /** Per group, the end of its staging writes (see the invariants). */
  private readonly tails = new Map<number, Promise<void>>();
  /** Bytes received and not yet written, all transfers (tests and metrics). */
  bufferedBytes = 0;
  /** The most bufferedBytes ever reached (tests: the memory bound). */
  peakBufferedBytes = 0;
  /** Chunks staged, transfers completed and discarded (tests and metrics). */
  chunksStaged = 0;
  transfersCompleted = 0;
  transfersDiscarded = 0;

  constructor(private readonly host: TransferHost) {}

  /** Transfers in progress or staged (tests). */
  get active(): number {
    return this.incoming.size;
  }

  onChunk(from: number, groupId: number, chunk: SnapshotChunkItem): void {
    const refuse = (reason: string): void => this.host.refuse(from, groupId, `snapshot chunk: ${reason}`);
    const group = this.host.group(groupId);
    if (group === undefined) return refuse('for a group this node does not hold');
    if (chunk.to !== this.host.id || chunk.from !== from) return refuse('not addressed to this node');
    // A non-member leading at this replica's term or newer is taken (peer-message-check.ts, fromLeaderAtTerm).
    if (!group.raw.isMember(from) && group.awaitingFirstSnapshot?.() !== true && chunk.term < group.raw.status().term) return refuse('sender is not a member of the group');
    if (chunk.data.length > this.host.maxChunkBytes) return refuse('larger than a chunk may be');
    if (group.installing === true) return; // Busy installing: the leader resends later.
    // A snapshot the log already covers is still taken: the leader lets its MsgSnap go only after
    // the transfer, and the core then answers it with where its log stands (raft.ts).
    if (chunk.term < group.raw.status().term) return refuse('from an older term');
    let transfer = this.incoming.get(groupId);
    // Invariant: a transfer's staged chunks belong to the replica it started for. A replica that
    // leaves this node deletes its staging records with the rest (ReplicaMoves.leave); a replica
    // opened again for a later move that met the old transfer's state (the same snapshot, so the
    // same id) was told every chunk was staged, and its install found them missing and stopped the
    // node (simulator seed 60097). So a transfer of a replaced replica is discarded, not resumed.
    if (transfer !== undefined && transfer.replica !== group && !transfer.claimed) {
      this.discard(transfer, 'its replica left this node');
      transfer = undefined;
    }
    if (transfer !== undefined && sameTransfer(transfer.id, chunk)) {
      if (chunk.seq < transfer.next || transfer.complete) return this.ack(transfer, false); // A duplicate: say where it stands.
      if (chunk.seq > transfer.next) {
        refuse('out of order');
        return this.ack(transfer, true);
      }
    } else {
      // Another transfer: a new snapshot, or a new leader or term. Only its first chunk starts it.
      // Invariant: a transfer whose first chunk this node declined (below) is not asked to start
      // over by its later chunks: the leader restarts its window at once on that request, so each
      // declined window asked for the next, at network speed, for as long as the decline lasted
      // (simulator seed 2003: millions of events within a few virtual ms). The leader's resend
      // timer brings the first chunk again (snapshot-sender.ts tick).
      if (chunk.seq !== 0) {
        const declined = this.declined.get(groupId);
        if (declined !== undefined && sameTransfer(declined, chunk)) return refuse('for a transfer this node declined to start');
        refuse('for a transfer this node does not expect');
        return this.sendAck(groupId, chunk, 0, true);
      }
      if (transfer !== undefined && (transfer.claimed || transfer.id.term > chunk.term)) {
        this.declined.set(groupId, transferIdOf(chunk));
        return refuse('another transfer is being installed or is newer');
      }
      if (transfer !== undefined) this.discard(transfer, 'a new transfer replaces it');
      if (this.incoming.size >= MAX_INCOMING_TRANSFERS) {
        this.declined.set(groupId, transferIdOf(chunk));
        return; // At the node's bound: the leader retries later.
      }
      this.declined.delete(groupId);
      transfer = this.start(groupId, group, chunk, group.snapshotCheck?.());
    }
    this.accept(transfer, chunk, refuse);
  }

  private start(group: number, replica: TransferGroup, chunk: SnapshotChunkItem, check: Incoming['check']): Incoming {
    const { from, to, term, index, snapTerm, digest } = chunk;
    const transfer: Incoming = {
      id: { from, to, term, index, snapTerm, digest },
      group,
      replica,
      next: 0,
      written: 0,
      buffered: 0,
      complete: false,
      claimed: false,
      discarded: false,
      lastProgressMs: this.host.clock.monotonicMs(),
      check,
      digest: new PayloadDigest(),
    };
    this.incoming.set(group, transfer);
    this.host.logger.info({ partition: group, from, index }, 'receiving a snapshot from the leader (staged chunk by chunk)');
    return transfer;
  }

  /** Checks chunk `transfer.next` and stages it; a chunk that fails a check discards the transfer. */
  private accept(transfer: Incoming, chunk: SnapshotChunkItem, refuse: (reason: string) => void): void {
    if (transfer.buffered + chunk.data.length > TRANSFER_WINDOW * this.host.maxChunkBytes) return refuse('more than the window ahead of the disk');
    try {
      transfer.check?.add(chunk.data);
      transfer.digest.add(chunk.data);
      if (chunk.last) {
        const digest = transfer.digest.digest();
        if (!timingSafeEqual(digest, transfer.id.digest)) throw new Error('the chunks do not match the snapshot digest');
        const header = transfer.check?.finish();
        if (header !== undefined && header.appliedIndex !== transfer.id.index) throw new Error(`the data is at index ${header.appliedIndex}, the transfer names ${transfer.id.index}`);
      }
    } catch (error) {
      refuse(error instanceof Error ? error.message : String(error));
      this.discard(transfer, 'a chunk failed its checks');
      return this.sendAck(transfer.group, transfer.id, 0, true);
    }
    const seq = transfer.next++;
    transfer.buffered += chunk.data.length;
    this.bufferedBytes += chunk.data.length;
    this.peakBufferedBytes = Math.max(this.peakBufferedBytes, this.bufferedBytes);
    transfer.lastProgressMs = this.host.clock.monotonicMs();
    this.chain(transfer.group, async () => {
      try {
        if (!transfer.discarded) await this.host.engine.write([{ type: 'put', key: stagingKey(transfer.group, seq), value: chunk.data }]);
      } finally {
        transfer.buffered -= chunk.data.length;
        this.bufferedBytes -= chunk.data.length;
      }
      if (transfer.discarded) return;
      transfer.written = seq + 1;
      this.chunksStaged++;
      if (chunk.last) {
        transfer.complete = true;
        this.transfersCompleted++;
      }
      this.ack(transfer, false);
    });
  }

  /**
   * Called by the Raft core's acceptSnapshot (a loop task): the complete staged transfer that
   * matches the snapshot's ticket, now claimed for its install, or undefined (the core refuses).
   */
  claim(group: number, index: number, snapTerm: number, ticket: SnapshotTicket): StagedSnapshot | undefined {
    const transfer = this.incoming.get(group);
    if (transfer === undefined || !transfer.complete || transfer.id.index !== index || transfer.id.snapTerm !== snapTerm) return undefined;
    if (!equalBytes(transfer.id.digest, ticket.digest) || transfer.written !== ticket.chunkCount) return undefined;
    transfer.claimed = true;
    const { engine } = this.host;
    return {
      group,
      chunkCount: transfer.written,
      chunks: () => readStagedChunks(engine, group, transfer.written),
      deleteOps: () => stagedChunkDeletes(group, transfer.written),
    };
  }

  /** The install of a claimed transfer ended (its chunks were deleted with the import's batch). */
  installed(group: number): void {
    const transfer = this.incoming.get(group);
    if (transfer?.claimed === true) this.incoming.delete(group);
  }

  /** A claimed transfer the core did not install (its log already covered it): discard it. */
  release(group: number): void {
    const transfer = this.incoming.get(group);
    if (transfer?.claimed === true) this.discard(transfer, 'the group did not need it');
  }

  /**
   * Discards transfers that made no progress for TRANSFER_IDLE_MS, and complete ones the group's
   * log already covers (claimed ones excepted). The core answers a MsgSnap at or below its commit
   * index without asking acceptSnapshot (raft.ts handleSnapshotChunk), so such a transfer would
   * never be claimed: it held one of the node's MAX_INCOMING_TRANSFERS slots until it went idle,
   * and every other group's snapshot was declined meanwhile (simulator seed 1836: a restarted node
   * caught two groups up from the log after staging their snapshots, and two others waited 30 s).
   */
  tick(): void {
    const now = this.host.clock.monotonicMs();
    for (const transfer of [...this.incoming.values()]) {
      if (transfer.claimed) continue;
      if (now - transfer.lastProgressMs > TRANSFER_IDLE_MS) this.discard(transfer, 'no progress');
      else if (transfer.complete && (this.host.group(transfer.group)?.raw.status().commit ?? 0) >= transfer.id.index) this.discard(transfer, 'the log already covers it');
    }
  }

  private discard(transfer: Incoming, why: string): void {
    if (transfer.discarded) return;
    transfer.discarded = true;
    this.transfersDiscarded++;
    if (this.incoming.get(transfer.group) === transfer) this.incoming.delete(transfer.group);
    this.host.logger.info({ partition: transfer.group, index: transfer.id.index, chunks: transfer.next, why }, 'discarded a partial snapshot transfer');
    // After its pending writes (chained): every chunk it may have written is below `next`.
    const staged = transfer.next;
    this.chain(transfer.group, () => this.host.engine.write(stagedChunkDeletes(transfer.group, staged)));
  }

  private chain(group: number, step: () => Promise<void>): void {
    const tail = (this.tails.get(group) ?? Promise.resolve()).then(step).catch((error: unknown) => {
      // A failed unsynced write (the disk is failing): the transfer cannot go on; the leader retries.
      this.host.logger.warn({ err: error, partition: group }, 'snapshot staging write failed');
      const transfer = this.incoming.get(group);
      if (transfer !== undefined && !transfer.claimed) this.discard(transfer, 'a staging write failed');
    });
    this.tails.set(group, tail);
    void tail.then(() => {
      if (this.tails.get(group) === tail) this.tails.delete(group);
    });
  }

  private ack(transfer: Incoming, refused: boolean): void {
    this.sendAck(transfer.group, transfer.id, transfer.written, refused);
  }

  private sendAck(group: number, id: TransferId, next: number, refused: boolean): void {
    const { from, term, index, snapTerm, digest } = id;
    const ack: SnapshotAckItem = { kind: 'ack', from: this.host.id, to: from, term, index, snapTerm, digest, next, refused };
    this.host.send(from, [{ group, transfer: ack }]);
  }
}

function transferIdOf(chunk: SnapshotChunkItem): TransferId {
  const { from, to, term, index, snapTerm, digest } = chunk;
  return { from, to, term, index, snapTerm, digest };
}

function sameTransfer(a: TransferId, b: TransferId): boolean {
  return a.from === b.from && a.term === b.term && a.index === b.index && a.snapTerm === b.snapTerm && equalBytes(a.digest, b.digest);
}
