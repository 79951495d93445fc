/**
 * Watch on a real three-node cluster (issue 21): a watcher on a bucket sees exactly the committed
 * history of the bucket (puts, deletes, an expiry) in revision order while the partition's leader
 * is killed (kill -9) and restarted and then moved, checked by the chaos checker watch-history.
 * Watchers run on both paths: the multiplexed KV.Stream (the client's default) and KV.Watch (a
 * client without pipelining). The negative control, a client whose resume skips one change (a
 * test-only option), must be caught by the same check.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient, type WatchItem } from '../../src/client/index.js';
import { checkWatchHistory, type AcknowledgedWrite, type WatchRecord } from '../../src/chaos/checkers/index.js';
import { partitionOf } from '../../src/keys/partition-table.js';
import { LocalCluster } from './local-cluster.js';
import { untilAtLeast } from './paced.js';

const PARTITIONS = 3;
const BUCKET = 'wsvc';
const WRITE_MS = 9_000;

function recordOf(item: WatchItem): WatchRecord | undefined {
  if (item.type === 'progress') return undefined;
  return item.type === 'put'
    ? { revision: item.revision, key: item.key, type: 'put', value: Buffer.from(item.value).toString() }
    : { revision: item.revision, key: item.key, type: 'delete', reason: item.reason };
}

/** Runs a watch in the background, recording its changes, until `stop`. */
function watchInBackground(client: AtollClient, fromRevision: number, options: { skipOnResume?: boolean } = {}) {
  const abort = new AbortController();
  const records: WatchRecord[] = [];
  let caughtUpTo = fromRevision;
  let failure: unknown;
  const done = (async () => {
    try {
      for await (const item of client.watch(BUCKET, { fromRevision, progress: true, signal: abort.signal, ...(options.skipOnResume && { testSkipOneEventOnResume: true }) })) {
        const record = recordOf(item);
        if (record !== undefined) records.push(record);
        caughtUpTo = item.revision;
      }
    } catch (error) {
      failure = error;
    }
  })();
  return {
    records,
    caughtUpTo: () => caughtUpTo,
    failure: () => failure,
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const giveUpAt = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > giveUpAt) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('watch across leader changes', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: PARTITIONS });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('a watcher sees exactly the committed history of a bucket while the leader is killed and moved; a skipping resume is caught', async () => {
    const partition = partitionOf(`${BUCKET}/x`, PARTITIONS);
    const writer = cluster.client();
    const start = (await writer.put(`${BUCKET}/start`, 'x')).revision;
    // The watcher's client counts its resumes, to show the faults reached it.
    let resumes = 0;
    const watchClient = new AtollClient({
      endpoints: [...cluster.addresses.values()],
      defaultTimeoutMs: 5_000,
      logger: { debug: (_object, message) => void (message?.includes('resuming') === true && resumes++), warn: () => undefined },
    });
    const brokenClient = cluster.client();
    const unaryClient = new AtollClient({ endpoints: [...cluster.addresses.values()], defaultTimeoutMs: 5_000, pipelining: false });
    const watcher = watchInBackground(watchClient, start);
    const unaryWatcher = watchInBackground(unaryClient, start);
    const broken = watchInBackground(brokenClient, start, { skipOnResume: true });

    const acknowledged: AcknowledgedWrite[] = [];
    const leaderOf = async (): Promise<number> => Number((await writer.clusterInfo()).partitions[partition]?.leader ?? 0);
    // Writes run WRITE_MS and then until the faults are over and at least 110 writes were
    // acknowledged (paced.ts: a loaded machine writes slowly), at most 60 s; the kill waits for 40.
    const startedAt = Date.now();
    let faultsOver = false;
    const writing = (): boolean => {
      const elapsed = Date.now() - startedAt;
      return elapsed < WRITE_MS || (elapsed < 60_000 && (!faultsOver || acknowledged.length <= 110));
    };
    const writes = (async () => {
      // An expiring key early on: the leader's expire command deletes it during the run.
      const ttl = await writer.put(`${BUCKET}/ephemeral`, 'gone soon', { ttlMs: 300 });
      acknowledged.push({ revision: ttl.revision, key: `${BUCKET}/ephemeral`, type: 'put' });
      for (let i = 0; writing() && i < 4_000; i++) {
        const key = `${BUCKET}/k${i % 7}`;
        try {
          if (i % 4 === 3) {
            const result = await writer.delete(key, { timeoutMs: 2_000 });
            if (result.deleted) acknowledged.push({ revision: result.revision, key, type: 'delete' });
          } else {
            const result = await writer.put(key, `v${i}`, { timeoutMs: 2_000 });
            acknowledged.push({ revision: result.revision, key, type: 'put' });
          }
        } catch {
          // Indeterminate during the kill: the committed history decides whether it happened.
        }
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
    })();
    const faults = (async () => {
      await untilAtLeast(() => acknowledged.length, 40, 30_000);
      const killed = await leaderOf();
      expect(killed).toBeGreaterThan(0);
      await cluster.kill(killed);
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      cluster.startNode(killed);
      await cluster.waitReady();
      const leader = await leaderOf();
      const target = leader === 0 ? 1 : 1 + (leader % 3);
      await writer.transferLeader(partition, target).catch(() => undefined);
    })().finally(() => {
      faultsOver = true;
    });
    await Promise.all([writes, faults]);
    const end = (await writer.put(`${BUCKET}/end`, 'x')).revision;
    acknowledged.push({ revision: end, key: `${BUCKET}/end`, type: 'put' });

    // The committed history: a fresh watch reads the partition's retained history (no faults now).
    const referenceClient = cluster.client();
    const reference = watchInBackground(referenceClient, start);
    await until(() => reference.caughtUpTo() >= end, 20_000, 'the reference read');
    await until(() => watcher.caughtUpTo() >= end && broken.caughtUpTo() >= end && unaryWatcher.caughtUpTo() >= end, 20_000, 'the watchers');
    await Promise.all([reference.stop(), watcher.stop(), broken.stop(), unaryWatcher.stop()]);
    for (const client of [writer, watchClient, brokenClient, referenceClient, unaryClient]) client.close();
    expect(watcher.failure()).toBeUndefined();
    expect(unaryWatcher.failure()).toBeUndefined();
    expect(reference.failure()).toBeUndefined();
    const committed = reference.records.filter((record) => record.revision <= end);

    const verdict = checkWatchHistory({ observed: watcher.records.filter((r) => r.revision <= end), committed, acknowledged });
    expect(verdict.valid, verdict.valid === false ? verdict.explanation : '').toBe(true);
    expect(verdict.summary.expiries).toBeGreaterThanOrEqual(1);
    expect(verdict.summary.committed).toBeGreaterThan(100);
    expect(resumes).toBeGreaterThanOrEqual(1);
    const unaryVerdict = checkWatchHistory({ observed: unaryWatcher.records.filter((r) => r.revision <= end), committed, acknowledged });
    expect(unaryVerdict.valid, unaryVerdict.valid === false ? unaryVerdict.explanation : '').toBe(true);

    const control = checkWatchHistory({ observed: broken.records.filter((r) => r.revision <= end), committed, acknowledged });
    expect(control.valid).toBe(false);
    expect(control.valid === false && control.anomalies.some((anomaly) => anomaly.kind === 'gap')).toBe(true);
  }, 120_000);
});
