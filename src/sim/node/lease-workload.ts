/**
 * The lease clients of the whole-node simulator (issue 32): every seed runs a few of them through
 * the fault window, each through random nodes' NodeApi `lease` and KV calls, as a service keeping a
 * registration alive would. A client grants a lease (KV.Lease GRANT, a TTL of 1 to 2.5 s) in the
 * lease bucket's partition, attaches one or two keys of its own to it (Put with `lease`), keeps it
 * alive every third of its TTL for a few rounds while reading its keys (linearizable gets), then
 * either revokes it or abandons it (stops keeping it alive) and reads its keys again once the TTL
 * passed. Everything is recorded for lease-checker.ts: each call's invoke and completion instant
 * (virtual time) and outcome. After the faults stop, `finish()` reads every key that was ever
 * attached, until it is gone (bounded), and asks for each lease's info (LEASE_NOT_FOUND expected).
 *
 * The lease bucket is chosen so that no split of the simulator ever moves it: its bucket hash
 * (fnv1a32, SIM_BUCKET_HASH) lies just above 2^31, the start of a founding partition whether there
 * are 2 or 4, below every other bucket there but the lock bucket's, so a split of its partition (at
 * the median bucket hash) keeps it on the left, the side that keeps the lease table; a split that
 * would move a leased key is refused ('leased-keys'), and so is a merge whose right side holds a
 * lease (docs/api.md). It is not in partition 0, whose split the transactions of txn-span.ts meet.
 */
import type { Rng } from '../../raft/rng.js';
import { SimClients, type CallRecord, type Interval, type SimClientsOptions } from './sim-clients.js';

export type { CallRecord, Interval } from './sim-clients.js';

/** fnv1a32("lease2093") = 2147597271, 2^31 + 113,623 (see the file comment). */
export const LEASE_BUCKET = 'lease2093';
/** How long finish() reads a key that should be gone before it reports it (virtual ms). */
const FINAL_GONE_BOUND_MS = 20_000;

export interface LeaseKeyRecord {
  readonly key: string;
  /** The Put with `lease`: only an acknowledged one certainly attached the key. */
  readonly put: CallRecord;
}

export interface LeaseReadRecord extends Interval {
  readonly key: string;
  readonly found: boolean;
}

export interface SimLeaseRecord {
  readonly client: number;
  readonly lease: string;
  readonly ttlMs: number;
  /** The acknowledged grant (a lease with no acknowledged grant is not recorded). */
  readonly grant: Interval;
  readonly keepAlives: CallRecord[];
  readonly keys: LeaseKeyRecord[];
  /** Linearizable gets of the lease's keys (during the run and the final ones). */
  readonly reads: LeaseReadRecord[];
  revoke?: CallRecord & { readonly revision?: number };
  /** Set by finish(): the info call after the faults stopped answered LEASE_NOT_FOUND (true), the lease still existed (false), or no answer came (undefined). */
  finalGone?: boolean;
}

export class LeaseWorkload extends SimClients<SimClientsOptions> {
  readonly leases: SimLeaseRecord[] = [];
  /** Failures finish() found (a key that stayed, a lease that did not end). */
  readonly finalProblems: string[] = [];
  private counter = 0;

  run(rng: Rng, untilMs: number): Promise<void> {
    return this.runClients(rng, untilMs);
  }

  protected async client(process: number, rng: Rng): Promise<void> {
    await this.workload.sleep(rng.int(500));
    while (this.now < this.stopAtMs) {
      const ttlMs = rng.pick([1_000, 1_500, 2_500]);
      const granted = await this.timed(() => this.workload.call(this.pickNode(rng), (api, context) => api.lease({ action: 'grant', key: LEASE_BUCKET, ttlMs }, context)));
      if (!granted.outcome.ok) {
        await this.workload.sleep(100 + rng.int(300));
        continue;
      }
      const record: SimLeaseRecord = { client: process, lease: granted.outcome.value.lease, ttlMs, grant: granted.record, keepAlives: [], keys: [], reads: [] };
      this.leases.push(record);
      const n = ++this.counter;
      for (let i = 0, count = 1 + rng.int(2); i < count; i++) {
        const key = `${LEASE_BUCKET}/p${process}-${n}-k${i}`;
        const put = await this.timed(() => this.workload.call(this.pickNode(rng), (api, context) => api.put({ key, value: new Uint8Array([n & 0xff]), lease: record.lease }, context)));
        record.keys.push({ key, put: put.record });
      }
      let lost = false;
      for (let round = 0, rounds = rng.int(6); round < rounds && !lost && this.now < this.stopAtMs; round++) {
        await this.workload.sleep(ttlMs / 3 - 50 + rng.int(100));
        const kept = await this.timed(() => this.workload.call(this.pickNode(rng), (api, context) => api.lease({ action: 'keepAlive', lease: record.lease }, context)));
        record.keepAlives.push(kept.record);
        if (!kept.outcome.ok && kept.outcome.error.startsWith('LEASE_NOT_FOUND')) lost = true;
        if (rng.chance(0.6)) await this.readKey(record, rng.pick(record.keys).key, this.pickNode(rng));
      }
      if (rng.chance(0.5)) {
        const revoked = await this.timed(() => this.workload.call(this.pickNode(rng), (api, context) => api.lease({ action: 'revoke', lease: record.lease }, context)));
        record.revoke = { ...revoked.record, ...(revoked.outcome.ok && { revision: revoked.outcome.value.revision }) };
        for (const { key } of record.keys) await this.readKey(record, key, this.pickNode(rng));
      } else {
        // Abandoned: no more keepalives; once its TTL passed the leader revokes it.
        await this.workload.sleep(ttlMs + rng.int(ttlMs));
        for (const { key } of record.keys) await this.readKey(record, key, this.pickNode(rng));
      }
      await this.workload.sleep(rng.int(200));
    }
  }

  /** A linearizable get of `key`, recorded when it answered. Returns whether it answered. */
  private async readKey(record: SimLeaseRecord, key: string, node: number): Promise<{ answered: boolean; found: boolean }> {
    const invokeMs = this.now;
    const outcome = await this.workload.call(node, (api, context) => api.get({ key }, context));
    if (!outcome.ok) return { answered: false, found: false };
    record.reads.push({ key, invokeMs, completeMs: this.now, found: outcome.value.found });
    return { answered: true, found: outcome.value.found };
  }

  /**
   * Once the faults stopped (and the clients stopped keeping anything alive): every key ever put
   * with a lease must be gone, and every lease with it, within FINAL_GONE_BOUND_MS (a lease lives
   * at most its TTL after its last keepalive, plus a full TTL from each new leader's takeover).
   */
  async finish(): Promise<void> {
    const giveUpAt = this.now + FINAL_GONE_BOUND_MS;
    const nodes = this.cluster.nodeIds;
    let turn = 0;
    for (const record of this.leases) {
      for (const { key } of record.keys) {
        let found = true;
        while (found && this.now < giveUpAt) {
          const read = await this.readKey(record, key, nodes[turn++ % nodes.length] as number);
          found = !read.answered || read.found;
          if (found) await this.workload.sleep(250);
        }
        if (found) this.finalProblems.push(`key ${key} of lease ${record.lease} (ttl ${record.ttlMs} ms) is still present (or unreadable) ${FINAL_GONE_BOUND_MS} ms after the faults stopped`);
      }
      while (record.finalGone === undefined && this.now < giveUpAt) {
        const info = await this.workload.call(nodes[turn++ % nodes.length] as number, (api, context) => api.lease({ action: 'info', lease: record.lease }, context));
        if (info.ok) record.finalGone = false;
        else if (info.error.startsWith('LEASE_NOT_FOUND')) record.finalGone = true;
        if (record.finalGone === false) {
          // Still there: it may be in its last TTL under a new leader; ask again a little later.
          record.finalGone = undefined;
          await this.workload.sleep(250);
        } else if (record.finalGone === undefined) await this.workload.sleep(100);
      }
      if (record.finalGone !== true) this.finalProblems.push(`lease ${record.lease} (ttl ${record.ttlMs} ms) still exists (or its info never answered) ${FINAL_GONE_BOUND_MS} ms after the faults stopped`);
    }
    this.trace.add(`leases: ${this.leases.length} granted, ${this.leases.filter((r) => r.revoke?.outcome === 'ok').length} revoked, ${this.leases.reduce((sum, r) => sum + r.keepAlives.filter((k) => k.outcome === 'ok').length, 0)} keepalives acknowledged`);
  }
}
