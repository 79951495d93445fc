/**
 * A client lease (`client.lease(ttlMs)`): one lease as the application sees it, over one server
 * lease per bucket it touches. A server lease lives in one partition and holds keys of that
 * partition only (docs/api.md, "Leases"), so the client grants one lazily for each bucket a key is
 * put under (a bucket's keys share its partition), keeps them all alive together from one
 * background loop, and reports them lost together: the first keepalive refused with
 * LEASE_NOT_FOUND, or no acknowledged keepalive for a whole TTL, loses the whole lease (its
 * listeners run once, every server lease is revoked as far as it still exists, and later puts
 * with it fail with LEASE_NOT_FOUND).
 *
 * Timing: a keepalive round every ttl/3, each call with a deadline of ttl/3. The server keeps a
 * lease at least ttl after its last acknowledged keepalive, so the keys stay while the rounds
 * succeed, and vanish within ttl (plus a leader's round) after they stop.
 */
import { AtollError } from '../errors.js';
import { bucketOf } from '../keys/bucket.js';
import type { LeaseRequest, LeaseResponse } from '../api/node-api.js';
import type { CallOptions } from './call-options.js';

/** What a lease needs from the client: one lease call, routed by its key or its lease id. */
export interface LeaseTransport {
  call(request: LeaseRequest, options: CallOptions): Promise<LeaseResponse>;
}

/** Buckets one client lease may span (one server lease each). */
export const maxLeaseBuckets = 256;

export class Lease {
  /** Server lease ids by bucket; a pending grant is its promise. */
  private readonly ids = new Map<string, Promise<string>>();
  /** When each server lease was last acknowledged (the send time of the keepalive, Date.now()). */
  private readonly ackedAtMs = new Map<string, number>();
  private readonly listeners = new Set<(error: AtollError) => void>();
  private lostError: AtollError | undefined;
  private revoked = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly transport: LeaseTransport,
    readonly ttlMs: number,
  ) {
    const everyMs = Math.max(1, Math.floor(ttlMs / 3));
    this.timer = setInterval(() => void this.keepAliveRound(everyMs), everyMs);
    // A lease alone does not keep the process alive.
    this.timer.unref();
  }

  /** The reason the lease was lost, or undefined while it lives (and after a revoke). */
  get lost(): AtollError | undefined {
    return this.lostError;
  }

  /** Calls `listener` once when the lease is lost (at once if it already is); returns an unsubscribe. */
  onLost(listener: (error: AtollError) => void): () => void {
    if (this.lostError !== undefined) {
      listener(this.lostError);
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The server lease id for `key`'s bucket, granted on first use. */
  async idFor(key: string): Promise<string> {
    this.checkUsable();
    const bucket = bucketOf(key);
    let id = this.ids.get(bucket);
    if (id === undefined) {
      if (this.ids.size >= maxLeaseBuckets) throw new AtollError('RESOURCE_EXHAUSTED', `a client lease spans at most ${maxLeaseBuckets} buckets`);
      const sentAtMs = Date.now();
      id = this.transport.call({ action: 'grant', key: bucket, ttlMs: this.ttlMs }, {}).then((granted) => {
        this.ackedAtMs.set(granted.lease, sentAtMs);
        return granted.lease;
      });
      this.ids.set(bucket, id);
      // A failed grant is forgotten, so the next put tries again.
      id.catch(() => this.ids.get(bucket) === id && this.ids.delete(bucket));
    }
    const granted = await id;
    this.checkUsable();
    return granted;
  }

  /** Ends the lease: every server lease is revoked, deleting its keys; the keepalives stop. */
  async revoke(): Promise<void> {
    this.stop();
    this.revoked = true;
    const ids = await this.grantedIds();
    await Promise.all(
      ids.map((lease) =>
        this.transport.call({ action: 'revoke', lease }, {}).catch((error: unknown) => {
          if (!(error instanceof AtollError && error.code === 'LEASE_NOT_FOUND')) throw error;
        }),
      ),
    );
  }

  /** Stops the keepalives without revoking (client.close()): the keys go within the TTL. */
  close(): void {
    this.stop();
  }

  private checkUsable(): void {
    if (this.lostError !== undefined) throw new AtollError('LEASE_NOT_FOUND', `the lease was lost: ${this.lostError.message}`);
    if (this.revoked) throw new AtollError('LEASE_NOT_FOUND', 'the lease was revoked');
  }

  private async grantedIds(): Promise<string[]> {
    const settled = await Promise.allSettled([...this.ids.values()]);
    return settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  }

  private async keepAliveRound(timeoutMs: number): Promise<void> {
    if (this.timer === undefined) return;
    const ids = await this.grantedIds();
    await Promise.all(
      ids.map(async (lease) => {
        const sentAtMs = Date.now();
        try {
          await this.transport.call({ action: 'keepAlive', lease }, { timeoutMs });
          this.ackedAtMs.set(lease, Math.max(this.ackedAtMs.get(lease) ?? 0, sentAtMs));
        } catch (error) {
          if (error instanceof AtollError && error.code === 'LEASE_NOT_FOUND') this.lose(error);
        }
      }),
    );
    // No acknowledged keepalive for a whole TTL: the server may have ended it already.
    const now = Date.now();
    for (const [lease, ackedAtMs] of this.ackedAtMs) {
      if (now - ackedAtMs >= this.ttlMs) this.lose(new AtollError('LEASE_NOT_FOUND', `no keepalive of lease ${lease} was acknowledged within its TTL (${this.ttlMs} ms)`));
    }
  }

  private lose(error: AtollError): void {
    if (this.lostError !== undefined || this.revoked) return;
    this.lostError = error;
    this.stop();
    for (const listener of this.listeners) listener(error);
    this.listeners.clear();
    // The rest of the lease goes too, so its keys do not outlive the part that was lost.
    void this.grantedIds().then((ids) => Promise.allSettled(ids.map((lease) => this.transport.call({ action: 'revoke', lease }, {}))));
  }

  private stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
