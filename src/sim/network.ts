import type { Rng } from '../raft/rng.js';
import type { Message, NodeId } from '../raft/types.js';

export interface NetworkFaults {
  /** Probability that a message is lost. */
  dropRate: number;
  /** Probability that a message is delivered twice. */
  duplicateRate: number;
  /** Usual delay in ticks is uniform in [0, maxDelayTicks]. */
  maxDelayTicks: number;
  /** Probability that a message takes a long detour (up to longDelayTicks): stale deliveries. */
  longDelayRate: number;
  longDelayTicks: number;
}

export const CALM_NETWORK: NetworkFaults = { dropRate: 0, duplicateRate: 0, maxDelayTicks: 1, longDelayRate: 0, longDelayTicks: 0 };

interface InFlight {
  readonly deliverAt: number;
  readonly order: number;
  readonly message: Message;
}

/**
 * A fake network: every message gets a delivery tick; messages due in the same tick are delivered
 * in a random order (reordering), some are lost or duplicated, and blocked links drop everything.
 * Blocked links are directed, so one-way partitions are possible.
 */
export class SimNetwork {
  faults: NetworkFaults = CALM_NETWORK;
  private readonly blocked = new Set<string>();
  private queue: InFlight[] = [];
  sent = 0;
  dropped = 0;

  constructor(private readonly rng: Rng) {}

  send(message: Message, now: number): void {
    this.sent++;
    if (!this.linkUp(message.from, message.to) || this.rng.chance(this.faults.dropRate)) {
      this.dropped++;
      return;
    }
    this.enqueue(message, now);
    if (this.rng.chance(this.faults.duplicateRate)) this.enqueue(message, now);
  }

  /** Removes and returns the messages due at `now`, shuffled. Links are rechecked at delivery. */
  takeDue(now: number): Message[] {
    const due: InFlight[] = [];
    const later: InFlight[] = [];
    for (const item of this.queue) (item.deliverAt <= now ? due : later).push(item);
    this.queue = later;
    for (let i = due.length - 1; i > 0; i--) {
      const j = this.rng.int(i + 1);
      [due[i], due[j]] = [due[j] as InFlight, due[i] as InFlight];
    }
    const delivered: Message[] = [];
    for (const item of due) {
      if (this.linkUp(item.message.from, item.message.to)) delivered.push(item.message);
      else this.dropped++;
    }
    return delivered;
  }

  pending(): number {
    return this.queue.length;
  }

  block(from: NodeId, to: NodeId): void {
    this.blocked.add(`${from}>${to}`);
  }

  heal(): void {
    this.blocked.clear();
  }

  linkUp(from: NodeId, to: NodeId): boolean {
    return !this.blocked.has(`${from}>${to}`);
  }

  private enqueue(message: Message, now: number): void {
    const delay = this.rng.chance(this.faults.longDelayRate)
      ? this.rng.int(this.faults.longDelayTicks + 1)
      : this.rng.int(this.faults.maxDelayTicks + 1);
    this.queue.push({ deliverAt: now + delay, order: this.sent, message });
  }
}
