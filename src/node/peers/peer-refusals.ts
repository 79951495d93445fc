/**
 * Counts the peer Raft messages the node loop drops (sender not a member, content that would break
 * a Raft invariant: peer-message-check.ts), and logs at most one debug line per second saying how
 * many and the last reason.
 */
import type { Logger } from 'pino';
import type { NodeClock } from '../ports.js';

export class PeerRefusals {
  /** Dropped since the node started (tests). */
  total = 0;
  private sinceReport = 0;
  private reportedAtMs = 0;

  constructor(
    private readonly clock: NodeClock,
    private readonly logger: Logger,
  ) {}

  note(from: number, group: number, reason: string): void {
    this.sinceReport++;
    this.total++;
    const nowMs = this.clock.monotonicMs();
    if (nowMs - this.reportedAtMs < 1_000) return;
    this.logger.debug({ from, partition: group, reason, dropped: this.sinceReport }, 'dropped peer raft messages');
    this.reportedAtMs = nowMs;
    this.sinceReport = 0;
  }
}
