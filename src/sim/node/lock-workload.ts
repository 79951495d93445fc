/**
 * The lock clients of the whole-node simulator (issue 32): every seed runs a few simulated
 * processes that take one lock by the recipe of src/client/lock.ts (docs/api.md "Locks and
 * fencing"), through random nodes' NodeApi calls, and write a guarded key with their fencing token
 * while they hold it:
 *
 * 1. Lease GRANT in the lock bucket's partition (TTL 2 s), kept alive every third of it;
 * 2. Put `<bucket>/m/<lease id>` (empty, if_absent, with the lease): its revision is the token;
 * 3. GetByPrefix `<bucket>/m/`: no key with a lower create revision means the lock is held; else
 *    watch the next lower one (NodeApi.watch with a WatchSink, from the read's revision, at most
 *    3 s per attempt) until it is deleted, then read again (the watch plumbing of the simulator's
 *    watch workload is not used: this is the node's own watch API, and a watch that fails or stays
 *    quiet is simply followed by another read, i.e. polling);
 * 4. While holding: one to three Puts of `<bucket>/data` with `ifFence: token` (its value names the
 *    token), sometimes after a pause longer than the TTL with no keepalives (a holder that lost its
 *    lock without knowing: its next fenced write must be refused once a newer holder wrote);
 * 5. Unlock: Lease REVOKE (its answer's revision is the revision that deleted the waiter key).
 *
 * Everything is recorded for lease-checker.ts (checkLocks). The lock bucket's hash lies just
 * above 2^31, the start of a founding partition whichever the partition count, below every other
 * bucket there, so no split moves it (see lease-workload.ts).
 *
 * Negative control NodeTestBugs.lockGrantsBeforeDelete (planted here: locks are a client recipe):
 * the simulated clients share one process, and the defective client hands the lock to the waiter
 * behind a holder as soon as that holder asks to unlock (sends its revoke), before the revoke is
 * applied, as a library that hands a lock to its own next waiter might. The waiter then writes
 * with its token while the predecessor's key may still exist (the revoke not yet applied, or lost
 * and the key kept until its lease expires): two holders at once in the applied history.
 */
import type { WatchSink } from '../../api/node-api.js';
import type { Rng } from '../../raft/rng.js';
import { SimClients, type CallRecord, type SimClientsOptions } from './sim-clients.js';

/** fnv1a32("lock7948") = 2147516142, just above 2^31 (see the file comment). */
export const LOCK_BUCKET = 'lock7948';
const LOCK_PREFIX = `${LOCK_BUCKET}/m/`;
export const GUARDED_KEY = `${LOCK_BUCKET}/data`;
const LOCK_TTL_MS = 2_000;
/** One watch attempt of a predecessor lasts at most this long; then the waiters are read again. */
const WATCH_WINDOW_MS = 3_000;

export interface FencedWriteRecord extends CallRecord {
  readonly token: number;
  /** The revision of an applied write. */
  readonly revision?: number;
  /** Refused with FENCED (a newer token wrote the key). */
  readonly fenced: boolean;
}

export interface LockHoldRecord {
  readonly client: number;
  readonly lease: string;
  /** The waiter key's create revision: the fencing token. */
  readonly token: number;
  readonly key: string;
  /** Set once the client held the lock: the revision of the read that granted it (or, with the defect, of its last read). */
  grantRevision?: number;
  grantedAtMs?: number;
  readonly keepAlives: CallRecord[];
  readonly writes: FencedWriteRecord[];
  revoke?: CallRecord & { readonly revision?: number };
}

export interface LockWorkloadOptions extends SimClientsOptions {
  /** NodeTestBugs.lockGrantsBeforeDelete (see the file comment). */
  readonly grantBeforeDelete: boolean;
}

export class LockWorkload extends SimClients<LockWorkloadOptions> {
  readonly holds: LockHoldRecord[] = [];
  /** Waiter keys whose holder asked to unlock (what the defective client hands the lock on at). */
  private readonly releasing = new Set<string>();
  private readonly releaseListeners = new Set<(key: string) => void>();
  granted = 0;

  run(rng: Rng, untilMs: number): Promise<void> {
    return this.runClients(rng, untilMs).then(() => {
      this.trace.add(`locks: ${this.holds.length} waiters, ${this.granted} grants, ${this.holds.reduce((sum, h) => sum + h.writes.filter((w) => w.outcome === 'ok').length, 0)} fenced writes applied`);
    });
  }

  protected async client(process: number, rng: Rng): Promise<void> {
    await this.workload.sleep(rng.int(300));
    while (this.now < this.stopAtMs) {
      await this.oneLock(process, rng);
      await this.workload.sleep(rng.int(300));
    }
  }

  private async oneLock(process: number, rng: Rng): Promise<void> {
    const granted = await this.workload.call(this.pickNode(rng), (api, context) => api.lease({ action: 'grant', key: LOCK_BUCKET, ttlMs: LOCK_TTL_MS }, context));
    if (!granted.ok) return this.workload.sleep(100 + rng.int(200));
    const lease = granted.value.lease;
    const key = LOCK_PREFIX + lease;
    const keeper = { stopped: false, paused: false, lost: false, acks: [] as CallRecord[] };
    const put = await this.workload.call(this.pickNode(rng), (api, context) => api.put({ key, value: new Uint8Array(0), ifAbsent: true, lease }, context));
    if (!put.ok || !put.value.applied) {
      await this.revoke(lease, rng);
      return;
    }
    const hold: LockHoldRecord = { client: process, lease, token: put.value.revision, key, keepAlives: keeper.acks, writes: [] };
    this.holds.push(hold);
    const keeping = this.keepAlive(lease, keeper, rng.fork());
    try {
      const turn = await this.waitForTurn(hold, keeper, rng);
      if (turn === undefined) return;
      hold.grantRevision = turn;
      hold.grantedAtMs = this.now;
      this.granted++;
      for (let i = 0, writes = 1 + rng.int(3); i < writes && !keeper.lost; i++) {
        if (i > 0) {
          if (rng.chance(0.1)) {
            // A long pause (a stalled process): the lease ends meanwhile and the lock passes on.
            keeper.paused = true;
            await this.workload.sleep(LOCK_TTL_MS * 1.5);
            keeper.paused = false;
          } else await this.workload.sleep(20 + rng.int(200));
        }
        const value = new TextEncoder().encode(`${hold.token}/${process}/${i}`);
        const write = await this.timed(() => this.workload.call(this.pickNode(rng), (api, context) => api.put({ key: GUARDED_KEY, value, ifFence: hold.token }, context)));
        const fenced = !write.outcome.ok && write.outcome.error.startsWith('FENCED');
        hold.writes.push({ ...write.record, ...(fenced && { outcome: 'fail' as const }), token: hold.token, fenced, ...(write.outcome.ok && { revision: write.outcome.value.revision }) });
        // Refused: a newer holder wrote, this one lost the lock.
        if (fenced) break;
      }
    } finally {
      // Unlock (or leave the line): revoke the lease, which deletes the waiter key.
      this.announceRelease(key);
      keeper.stopped = true;
      hold.revoke = await this.revoke(lease, rng);
      await keeping;
    }
  }

  private async revoke(lease: string, rng: Rng): Promise<CallRecord & { revision?: number }> {
    const revoked = await this.timed(() => this.workload.call(this.pickNode(rng), (api, context) => api.lease({ action: 'revoke', lease }, context)));
    return { ...revoked.record, ...(revoked.outcome.ok && { revision: revoked.outcome.value.revision }) };
  }

  private async keepAlive(lease: string, keeper: { stopped: boolean; paused: boolean; lost: boolean; acks: CallRecord[] }, rng: Rng): Promise<void> {
    while (!keeper.stopped && !keeper.lost) {
      await this.workload.sleep(LOCK_TTL_MS / 3 - 50 + rng.int(100));
      if (keeper.stopped || keeper.paused) continue;
      const kept = await this.timed(() => this.workload.call(this.pickNode(rng), (api, context) => api.lease({ action: 'keepAlive', lease }, context)));
      keeper.acks.push(kept.record);
      if (!kept.outcome.ok && kept.outcome.error.startsWith('LEASE_NOT_FOUND')) keeper.lost = true;
    }
  }

  /** The revision of the read that found no earlier waiter, or undefined when the client gave up (lease lost, run over). */
  private async waitForTurn(hold: LockHoldRecord, keeper: { lost: boolean }, rng: Rng): Promise<number | undefined> {
    while (!keeper.lost && this.now < this.stopAtMs) {
      const read = await this.workload.call(this.pickNode(rng), (api, context) => api.getByPrefix({ prefix: LOCK_PREFIX, limit: 100 }, context));
      if (!read.ok) {
        await this.workload.sleep(100 + rng.int(200));
        continue;
      }
      const waiters = read.value.items.map((item) => ({ key: item.key, createRevision: item.createRevision }));
      if (!waiters.some((waiter) => waiter.key.endsWith(hold.key))) return undefined; // its lease ended
      let predecessor: { key: string; createRevision: number } | undefined;
      for (const waiter of waiters) {
        if (waiter.createRevision < hold.token && (predecessor === undefined || waiter.createRevision > predecessor.createRevision)) predecessor = waiter;
      }
      if (predecessor === undefined) return read.value.revision;
      const predecessorKey = LOCK_PREFIX + predecessor.key.slice(predecessor.key.indexOf(LOCK_PREFIX) + LOCK_PREFIX.length);
      const waited = await this.waitForDelete(predecessorKey, read.value.revision, rng);
      // The defect: a predecessor that asked to unlock counts as gone, and this waiter holds at once.
      if (waited === 'released') return read.value.revision;
    }
    return undefined;
  }

  /**
   * Watches `key` from `fromRevision` on a random node until a delete of it shows (or, with the
   * defect, its holder asks to unlock), the watch fails, or WATCH_WINDOW_MS pass.
   */
  private waitForDelete(key: string, fromRevision: number, rng: Rng): Promise<'deleted' | 'released' | 'ended'> {
    const controller = new AbortController();
    return new Promise<'deleted' | 'released' | 'ended'>((resolve) => {
      let done = false;
      const finish = (how: 'deleted' | 'released' | 'ended'): void => {
        if (done) return;
        done = true;
        this.releaseListeners.delete(onRelease);
        controller.abort();
        resolve(how);
      };
      const onRelease = (released: string): void => {
        if (released === key) finish('released');
      };
      if (this.options.grantBeforeDelete) {
        if (this.releasing.has(key)) return finish('released');
        this.releaseListeners.add(onRelease);
      }
      const sink: WatchSink = {
        write: (message) => {
          if (message.events.some((event) => event.type === 'delete')) finish('deleted');
          return true;
        },
        drained: () => Promise.resolve(true),
      };
      void this.workload
        .call(this.pickNode(rng), (api, context) => api.watch({ key, startRevision: fromRevision }, { ...context, signal: controller.signal }, sink), WATCH_WINDOW_MS)
        .then(() => finish('ended'));
      void this.workload.sleep(WATCH_WINDOW_MS).then(() => finish('ended'));
    });
  }

  private announceRelease(key: string): void {
    this.releasing.add(key);
    for (const listener of [...this.releaseListeners]) listener(key);
  }
}
