/**
 * Wires snapshot transfers (snapshot-transfer.ts has the protocol) into the node loop: the driver
 * calls it in three places (an outgoing MsgSnap, an incoming transfer item, a tick). Its one job is
 * that dispatch.
 */
import type { Message } from '../../raft/types.js';
import { transferRefusal } from '../peers/peer-message-check.js';
import type { SnapshotTransferItem } from '../raft-wire.js';
import { SnapshotReceiver } from './snapshot-receiver.js';
import { SnapshotSender } from './snapshot-sender.js';
import type { TransferHost } from './snapshot-transfer.js';

export class SnapshotTransfers {
  readonly receiver: SnapshotReceiver;
  readonly sender: SnapshotSender;

  constructor(private readonly host: TransferHost) {
    this.receiver = new SnapshotReceiver(host);
    this.sender = new SnapshotSender(host);
  }

  /** A transfer item from peer `from` (a loop task). */
  onItem(from: number, group: number, item: SnapshotTransferItem): void {
    const refusal = transferRefusal(item, this.host.maxChunkBytes);
    if (refusal !== undefined) return this.host.refuse(from, group, refusal);
    if (item.kind === 'chunk') this.receiver.onChunk(from, group, item);
    else this.sender.onAck(from, group, item);
  }

  /** Whether the loop may send this Raft message now (a MsgSnap waits for its transfer). */
  outgoing(group: number, message: Message): boolean {
    return message.type !== 'snap' || this.sender.onSnapMessage(group, message);
  }

  /** Resends and gives up by time (called on the loop's ticks). */
  tick(): void {
    this.sender.tick();
    this.receiver.tick();
  }
}
