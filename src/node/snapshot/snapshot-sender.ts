/**
 * The leader's side of a snapshot transfer (snapshot-transfer.ts has the protocol): streams the
 * held export's chunks to a follower, at most TRANSFER_WINDOW unacknowledged, and lets the Raft
 * core's MsgSnap (a ticket) go once the follower has every chunk. Its one job is the outgoing
 * transfers' state.
 *
 * Invariants:
 * - One transfer per (group, follower), at most MAX_OUTGOING_TRANSFERS unfinished per node
 *   (onSnapMessage); a MsgSnap for another snapshot or term replaces the transfer.
 * - acked <= sent <= chunk count, and sent - acked <= TRANSFER_WINDOW (sendWindow).
 * - The MsgSnap reaches the follower only after it acknowledged the last chunk (onAck): its core
 *   never sees a ticket whose chunks it has not staged, except after its own restart (it then
 *   refuses the ticket, and answers the next chunk as a transfer it does not expect: it starts over).
 * - The transfer holds no chunks: it reads chunk N from the leader's spool (held-snapshot.ts) when
 *   it sends it, and sends it at once, so the bytes it holds are at most one chunk per transfer
 *   (peakReadBytes). Reads of one transfer run one after another, in order; a batch whose
 *   transfer was rewound, replaced or given up meanwhile sends nothing (generation). A spool
 *   released meanwhile (the replica stopped leading or gave the export up) ends the transfer; the
 *   core asks for a snapshot again.
 */
import type { Message } from '../../raft/types.js';
import { equalBytes } from '../../storage/bytes.js';
import type { SnapshotAckItem } from '../raft-wire.js';
import { MAX_OUTGOING_TRANSFERS, TRANSFER_IDLE_MS, TRANSFER_RESEND_MS, TRANSFER_WINDOW, type ExportedSnapshot, type TransferHost } from './snapshot-transfer.js';

interface Outgoing {
  readonly group: number;
  readonly peer: number;
  readonly term: number;
  readonly index: number;
  readonly snapTerm: number;
  readonly digest: Uint8Array;
  exported: ExportedSnapshot;
  readonly chunkCount: number;
  /** Bumped whenever `sent` moves back or the transfer restarts: older read batches send nothing. */
  generation: number;
  /** The transfer's spool reads, chained so chunks go out in order. */
  reading: Promise<void>;
  /** Chunks the follower has written. */
  acked: number;
  /** The next chunk to send. */
  sent: number;
  /** The core's latest MsgSnap for this transfer, held until the follower has every chunk. */
  held: Message;
  done: boolean;
  /** When the held MsgSnap last went to the follower (done). */
  passedAtMs: number;
  lastProgressMs: number;
  lastSendMs: number;
}

export class SnapshotSender {
  private readonly outgoing = new Map<string, Outgoing>();
  /** Chunks sent (resends included) and transfers finished (tests and metrics). */
  chunksSent = 0;
  transfersFinished = 0;
  /** Chunk bytes read from spools and not yet handed to the transport, now and at most (tests). */
  private readBytes = 0;
  peakReadBytes = 0;

  constructor(private readonly host: TransferHost) {}

  /** Unfinished transfers (tests). */
  get active(): number {
    let count = 0;
    for (const transfer of this.outgoing.values()) if (!transfer.done) count++;
    return count;
  }

  /** The core sends MsgSnap `message` for `group`: whether it may go now (see the invariants). */
  onSnapMessage(groupId: number, message: Message): boolean {
    const meta = message.snapshot;
    const group = this.host.group(groupId);
    if (meta === undefined || group?.exportedSnapshot === undefined) return true;
    const key = `${groupId}:${message.to}`;
    let transfer = this.outgoing.get(key);
    if (transfer !== undefined && (transfer.index !== meta.index || transfer.snapTerm !== meta.term || transfer.term !== message.term)) {
      this.outgoing.delete(key);
      transfer = undefined;
    }
    if (transfer?.done === true) {
      const now = this.host.clock.monotonicMs();
      // The core sends it again only when the follower did not install it (lost, or the follower
      // restarted and refuses a ticket it holds no chunks for): after a while, probe with chunk 0.
      // A follower that still holds every chunk acknowledges them all at once; one that lost them
      // takes the transfer again.
      if (now - transfer.passedAtMs <= TRANSFER_RESEND_MS) return true;
      const exported = group.exportedSnapshot(meta.index, meta.term);
      if (exported === undefined || !equalBytes(exported.digest, transfer.digest)) {
        this.outgoing.delete(key);
        return false;
      }
      Object.assign(transfer, { done: false, exported, acked: 0, sent: 0, held: message, lastProgressMs: now, generation: transfer.generation + 1 });
      this.sendWindow(transfer, 1);
      return false;
    }
    if (transfer !== undefined) {
      transfer.held = message;
      return false;
    }
    if (this.active >= MAX_OUTGOING_TRANSFERS) return false; // The core resends it every heartbeat round.
    const exported = group.exportedSnapshot(meta.index, meta.term);
    if (exported === undefined) {
      this.host.logger.debug({ partition: groupId, index: meta.index }, 'no export held for a snapshot the core sends');
      return false;
    }
    const now = this.host.clock.monotonicMs();
    transfer = {
      group: groupId,
      peer: message.to,
      term: message.term,
      index: meta.index,
      snapTerm: meta.term,
      digest: exported.digest,
      exported,
      chunkCount: exported.chunkCount,
      generation: 0,
      reading: Promise.resolve(),
      acked: 0,
      sent: 0,
      held: message,
      done: false,
      passedAtMs: 0,
      lastProgressMs: now,
      lastSendMs: now,
    };
    this.outgoing.set(key, transfer);
    this.host.logger.info({ partition: groupId, to: message.to, index: meta.index, chunks: transfer.chunkCount }, 'streaming a snapshot to a follower');
    this.sendWindow(transfer);
    return false;
  }

  onAck(from: number, groupId: number, ack: SnapshotAckItem): void {
    const transfer = this.outgoing.get(`${groupId}:${from}`);
    if (
      transfer === undefined ||
      ack.from !== from ||
      ack.to !== this.host.id ||
      ack.term !== transfer.term ||
      ack.index !== transfer.index ||
      ack.snapTerm !== transfer.snapTerm ||
      !equalBytes(ack.digest, transfer.digest)
    ) {
      this.host.refuse(from, groupId, 'snapshot ack for a transfer this node does not run');
      return;
    }
    if (transfer.done || ack.next > transfer.chunkCount) return;
    const now = this.host.clock.monotonicMs();
    if (ack.refused) {
      // The follower wants chunk `next` again (a lost or reordered chunk, or it started over).
      transfer.acked = ack.next;
      transfer.sent = ack.next;
      transfer.generation++;
      transfer.lastProgressMs = now;
    } else if (ack.next > transfer.acked) {
      transfer.acked = ack.next;
      transfer.sent = Math.max(transfer.sent, ack.next);
      transfer.lastProgressMs = now;
    } else {
      return; // A duplicate or stale answer.
    }
    if (transfer.acked === transfer.chunkCount) {
      transfer.done = true;
      transfer.passedAtMs = this.host.clock.monotonicMs();
      this.transfersFinished++;
      this.host.logger.info({ partition: groupId, to: from, index: transfer.index }, 'the follower has every snapshot chunk; sending the snapshot message');
      this.host.send(from, [{ group: groupId, message: transfer.held }]);
      return;
    }
    this.sendWindow(transfer);
  }

  /** Resends stalled windows, and forgets transfers given up, finished long ago, or no longer led. */
  tick(): void {
    const now = this.host.clock.monotonicMs();
    for (const [key, transfer] of this.outgoing) {
      const group = this.host.group(transfer.group);
      if (group === undefined || group.raw.role !== 'leader' || now - transfer.lastProgressMs > TRANSFER_IDLE_MS) {
        this.outgoing.delete(key);
        continue;
      }
      if (!transfer.done && now - transfer.lastSendMs > TRANSFER_RESEND_MS) {
        // No acknowledgement for a while: chunks or their acks were lost. Go back to the first unacknowledged one.
        transfer.sent = transfer.acked;
        transfer.generation++;
        this.sendWindow(transfer);
      }
    }
  }

  private sendWindow(transfer: Outgoing, window = TRANSFER_WINDOW): void {
    const seqs: number[] = [];
    while (transfer.sent < transfer.chunkCount && transfer.sent - transfer.acked < window) seqs.push(transfer.sent++);
    if (seqs.length === 0) return;
    this.chunksSent += seqs.length;
    transfer.lastSendMs = this.host.clock.monotonicMs();
    const { generation, exported } = transfer;
    transfer.reading = transfer.reading
      .then(async () => {
        for (const seq of seqs) {
          if (!this.current(transfer, generation)) return;
          const data = await exported.readChunk(seq);
          if (!this.current(transfer, generation)) return;
          if (data === undefined) {
            this.giveUp(transfer, 'the export was released');
            return;
          }
          this.readBytes += data.length;
          this.peakReadBytes = Math.max(this.peakReadBytes, this.readBytes);
          const { peer: to, term, index, snapTerm, digest } = transfer;
          // One chunk per frame: a frame stays far below the gRPC message limit.
          this.host.send(to, [{ group: transfer.group, transfer: { kind: 'chunk', from: this.host.id, to, term, index, snapTerm, digest, seq, last: seq === transfer.chunkCount - 1, data } }]);
          this.readBytes -= data.length;
        }
      })
      .catch((error: unknown) => {
        this.readBytes = 0;
        if (this.current(transfer, generation)) this.giveUp(transfer, error instanceof Error ? error.message : String(error));
      });
  }

  /** Whether a read batch started at `generation` may still send (see the invariants). */
  private current(transfer: Outgoing, generation: number): boolean {
    return !transfer.done && transfer.generation === generation && this.outgoing.get(`${transfer.group}:${transfer.peer}`) === transfer;
  }

  private giveUp(transfer: Outgoing, reason: string): void {
    this.outgoing.delete(`${transfer.group}:${transfer.peer}`);
    this.host.logger.info({ partition: transfer.group, to: transfer.peer, index: transfer.index, reason }, 'gave up a snapshot transfer: its chunks cannot be read');
  }
}
