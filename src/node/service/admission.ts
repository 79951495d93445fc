/**
 * Admission of client work at a node: how many requests wait on a partition (proposals not yet
 * applied, linearizable reads not yet through their ReadIndex round) and how many this node has
 * forwarded to others, each under a bound from src/limits.ts. Past a bound the request fails at
 * once with OVERLOADED (RESOURCE_EXHAUSTED), before it queues anything, so a flood costs the node
 * a counter check per request instead of memory. The node's own work (ticks, Raft messages,
 * compaction, usage records) never passes through here and is never refused.
 */
import assert from 'node:assert/strict';
import { AtollError } from '../../errors.js';
import type { Limits } from '../../limits.js';
import { systemTenant } from '../../keys/tenant-keys.js';

export type AdmissionLimits = Pick<Limits, 'maxPendingRequestsPerPartition' | 'maxPendingRequestsPerNode' | 'maxForwardsInFlight'>;

export class Admission {
  /** Pending requests by partition. Invariant: the values sum to `pendingTotal`; none is 0. */
  private readonly pendingByPartition = new Map<number, number>();
  private pendingTotal = 0;
  /** Invariant: 0 <= forwardsInFlight <= limits.maxForwardsInFlight. */
  private forwardsInFlight = 0;

  constructor(private readonly limits: AdmissionLimits) {}

  /** Pending requests on the node (all partitions). */
  get pending(): number {
    return this.pendingTotal;
  }

  get forwards(): number {
    return this.forwardsInFlight;
  }

  /**
   * Admits one request on `partition`, or throws OVERLOADED. The returned release must be called
   * once the request is answered (it ignores repeated calls).
   */
  admitRequest(partition: number): () => void {
    const onPartition = this.pendingByPartition.get(partition) ?? 0;
    if (onPartition >= this.limits.maxPendingRequestsPerPartition) {
      throw overloaded(`partition ${partition} has ${onPartition} requests waiting, its maximum: retry later`, {
        partition,
        maxPendingRequestsPerPartition: this.limits.maxPendingRequestsPerPartition,
      });
    }
    if (this.pendingTotal >= this.limits.maxPendingRequestsPerNode) {
      throw overloaded(`this node has ${this.pendingTotal} requests waiting, its maximum: retry later`, {
        maxPendingRequestsPerNode: this.limits.maxPendingRequestsPerNode,
      });
    }
    this.pendingByPartition.set(partition, onPartition + 1);
    this.pendingTotal++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const count = this.pendingByPartition.get(partition) ?? 0;
      assert(count > 0 && this.pendingTotal > 0, 'a release matches an admission');
      if (count === 1) this.pendingByPartition.delete(partition);
      else this.pendingByPartition.set(partition, count - 1);
      this.pendingTotal--;
    };
  }

  /** Admits one forwarded request, or throws OVERLOADED; release once its answer (or failure) came. */
  /**
   * Runs a request that queues work for the loop under the per-partition and per-node bounds:
   * OVERLOADED at once past them. The node's own reads and writes (system tenant: tokens, quotas,
   * usage) are not counted, so a flood of client work never locks out authentication.
   */
  run<T>(partition: number, context: { readonly tenant?: string }, work: () => Promise<T>): Promise<T> {
    if (context.tenant === systemTenant) return work();
    let release: () => void;
    try {
      release = this.admitRequest(partition);
    } catch (error) {
      return Promise.reject(error);
    }
    return work().finally(release);
  }

  admitForward(): () => void {
    if (this.forwardsInFlight >= this.limits.maxForwardsInFlight) {
      throw overloaded(`this node has ${this.forwardsInFlight} forwarded requests in flight, its maximum: retry later`, {
        maxForwardsInFlight: this.limits.maxForwardsInFlight,
      });
    }
    this.forwardsInFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      assert(this.forwardsInFlight > 0, 'a release matches an admission');
      this.forwardsInFlight--;
    };
  }
}

function overloaded(message: string, details: Record<string, unknown>): AtollError {
  return new AtollError('OVERLOADED', message, details);
}
