/**
 * Node-level Raft messages (issue 35, items 1 and 2): what many groups say to the same peer in one
 * loop iteration, as ONE item of the frame instead of one message per group.
 *
 * - 'commits': every commit notice (RaftConfig.commitNotices, src/raft/commit-notice.ts) this
 *   node's leaders owe one follower node: group, term, index, logTerm, commit each.
 * - 'acks': every plain acknowledgement (an appResp that is not a refusal) this node's followers
 *   send one leader node: group, term, index, commit each.
 *
 * The receiver expands an item back into the exact Raft messages it stands for (expandBatch) and
 * steps them in one pass, through the same membership and content checks as any message
 * (raft-driver.ts stepMessages). So a batch changes how messages travel, never what a group is
 * told: the Raft core's safety arguments hold as they are.
 *
 * Their codec is in src/node/raft-wire.ts. Rolling upgrade: a node that does not know these items
 * refuses the whole frame that carries one (decodeRaftFrame: unknown code), so they are sent only
 * when the node is configured to (AtollNodeConfig.coalesceRaftMessages, off by default): turn it
 * on once every node runs a version that decodes them (this one does, whatever its setting).
 */
import type { Message } from '../../raft/types.js';
import type { NodeTimers, TimerHandle } from '../ports.js';
import type { GroupMessage, NodeBatch, NodeBatchItem } from '../raft-wire.js';

/**
 * The longest a commit notice waits for a frame to its peer (NoticeHoldMode 'frame'): what a
 * follower's apply may lag its leader's by for it. Measured (docs/performance.md, "Node-level commit
 * notices and acknowledgements"): at 64 partitions and 1,500 puts/s the held notices rode other
 * frames and took 1.8 frames per put away, as many as holding them for a whole tick did.
 */
export const MAX_NOTICE_HOLD_MS = 5;

/** Whether `message` travels in an 'acks' batch: a plain acknowledgement, nothing else. */
function isPlainAck(message: Message): boolean {
  return (
    message.type === 'appResp' &&
    message.reject !== true &&
    message.index !== undefined &&
    message.commit !== undefined &&
    message.logTerm === undefined &&
    message.rejectHint === undefined
  );
}

/**
 * One peer's outgoing items with every commit notice and plain acknowledgement folded into one
 * 'commits' and one 'acks' item, each where the first message it holds was. Other items keep their
 * order. Invariant: expandBatch of the batches gives back exactly the messages folded in.
 */
export function coalesceForPeer(list: readonly GroupMessage[], from: number, to: number): GroupMessage[] {
  let commits: NodeBatchItem[] | undefined;
  let acks: NodeBatchItem[] | undefined;
  const out: GroupMessage[] = [];
  for (const item of list) {
    const message = item.message;
    if (message !== undefined && message.type === 'commit') {
      if (commits === undefined) {
        commits = [];
        out.push({ group: 0, batch: { kind: 'commits', from, to, items: commits } });
      }
      commits.push({ group: item.group, term: message.term, index: message.index ?? 0, logTerm: message.logTerm ?? 0, commit: message.commit ?? 0 });
    } else if (message !== undefined && isPlainAck(message)) {
      if (acks === undefined) {
        acks = [];
        out.push({ group: 0, batch: { kind: 'acks', from, to, items: acks } });
      }
      acks.push({ group: item.group, term: message.term, index: message.index ?? 0, logTerm: 0, commit: message.commit ?? 0 });
    } else {
      out.push(item);
    }
  }
  return out;
}

/** The Raft messages a batch stands for, each with its group. */
export function expandBatch(batch: NodeBatch): Array<{ group: number; message: Message }> {
  const { from, to } = batch;
  if (batch.kind === 'commits') {
    return batch.items.map(({ group, term, index, logTerm, commit }) => ({ group, message: { type: 'commit', from, to, term, index, logTerm, commit } }));
  }
  return batch.items.map(({ group, term, index, commit }) => ({ group, message: { type: 'appResp', from, to, term, index, commit } }));
}

/**
 * When commit notices leave (NoticeHold.mode): 'iteration', in the frame of the iteration that
 * made them; 'frame', with the next frame that goes to their peer anyway, or at the next node tick
 * at the latest; 'tick', at the next node tick. Held notices cost only time: a notice is a fact
 * about committed entries for good (commit-notice.ts N1, N2 hold whenever it arrives), the
 * follower's heartbeat answers, not the notice, tell its leader its commit (quiescence waits for
 * those), and a heartbeat carries the commit as well.
 */
export type NoticeHoldMode = 'iteration' | 'frame' | 'tick';

/** Commit notices waiting for their peer's next frame or the next tick (NoticeHoldMode), the newest per group. */
export class NoticeHold {
  private readonly held = new Map<number, Map<number, GroupMessage>>();

  constructor(readonly mode: NoticeHoldMode) {}

  /**
   * Takes this iteration's items for `peer`: with a hold, its commit notices are kept (a newer one
   * replaces a group's older one), and the rest goes with every notice held for the peer when the
   * mode lets a frame carry them. Returns what to send now (possibly nothing).
   */
  take(peer: number, list: readonly GroupMessage[]): GroupMessage[] {
    if (this.mode === 'iteration') return list.slice();
    const rest: GroupMessage[] = [];
    for (const item of list) {
      if (item.message?.type === 'commit') {
        let held = this.held.get(peer);
        if (held === undefined) this.held.set(peer, (held = new Map()));
        held.set(item.group, item);
      } else {
        rest.push(item);
      }
    }
    const held = this.held.get(peer);
    if (held !== undefined) {
      // An append of the same group in this frame carries the leader's newer commit, which the
      // follower takes through the append's last entry, as a rule at or past the notice's index.
      // When not (the follower was sent back to probing), dropping the notice is losing it: the
      // group's next heartbeat carries the commit (as for any lost notice).
      for (const item of rest) if (item.message?.type === 'app') held.delete(item.group);
      if (held.size === 0) this.held.delete(peer);
    }
    if (rest.length > 0 && this.mode === 'frame') rest.push(...this.release(peer));
    return rest;
  }

  /** Every notice held for `peer`, now (the tick's flush, or a frame that carries them). */
  release(peer: number): GroupMessage[] {
    const held = this.held.get(peer);
    if (held === undefined) return [];
    this.held.delete(peer);
    return [...held.values()];
  }

  /** The peers with notices held. */
  peers(): number[] {
    return [...this.held.keys()];
  }
}

export interface OutboxOptions {
  readonly from: number;
  readonly tickMs: number;
  readonly timers: NodeTimers;
  /** When commit notices leave (default 'frame'). */
  readonly noticeHold?: NoticeHoldMode;
  /** The longest a notice waits for a frame to its peer (default MAX_NOTICE_HOLD_MS; at most a tick, when the driver flushes). */
  readonly maxNoticeHoldMs?: number;
  /** Runs `task` in the node loop. */
  enqueue(task: () => void): void;
  /** Sends one frame. */
  send(peer: number, items: GroupMessage[]): void;
}

/**
 * A coalescing node's frames (raft-driver.ts, AtollNodeConfig.coalesceRaftMessages): each one's
 * commit notices held (NoticeHold) and its notices and acknowledgements folded (coalesceForPeer).
 * Notices no frame took leave within maxNoticeHoldMs (one timer at most, whose flush runs in the
 * loop), and at every node tick (flush, called by the driver).
 */
export class CoalescingOutbox {
  private readonly hold: NoticeHold;
  private readonly maxHoldMs: number;
  private timer: TimerHandle | undefined;

  constructor(private readonly options: OutboxOptions) {
    this.hold = new NoticeHold(options.noticeHold ?? 'frame');
    this.maxHoldMs = Math.min(options.maxNoticeHoldMs ?? MAX_NOTICE_HOLD_MS, options.tickMs);
  }

  send(peer: number, list: readonly GroupMessage[]): void {
    this.frame(peer, this.hold.take(peer, list));
    if (this.timer === undefined && this.hold.mode === 'frame' && this.maxHoldMs < this.options.tickMs && this.hold.peers().length > 0) {
      this.timer = this.options.timers.after(this.maxHoldMs, () => this.options.enqueue(() => this.flush()));
    }
  }

  /** Every held notice leaves now. */
  flush(): void {
    this.timer?.cancel();
    this.timer = undefined;
    for (const peer of this.hold.peers()) this.frame(peer, this.hold.release(peer));
  }

  private frame(peer: number, items: readonly GroupMessage[]): void {
    if (items.length > 0) this.options.send(peer, coalesceForPeer(items, this.options.from, peer));
  }
}
