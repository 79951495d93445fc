/**
 * A node importing a large snapshot for one partition keeps leading its other partitions (issue
 * 16, "Snapshot install"): the import runs beside the node loop (src/node/snapshot/snapshot-imports.ts), so
 * the loop goes on ticking, replicating and acknowledging for every other group. Before, the import
 * ran inside the loop's stage(): the whole node stopped for its duration (80-160 ms per MiB on
 * LevelDB), and its other partitions' followers elected new leaders.
 *
 * Setup: three nodes, two partitions. Node 2 is partition 1's preferred leader (the balancer keeps
 * it there) and a follower of partition 0. Partition 0's messages to and from node 2 are cut while
 * 12 MiB are written to partition 0, so its leader compacts past node 2 and must send it a
 * snapshot. Node 2's engine models LevelDB's write cost (160 ms per MiB, the high end measured),
 * so the import takes 2-3 s, longer than the shortest election timeout (1.5 s). Writes to
 * partition 1 go on at node 2 throughout.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { partitionOf } from '../../src/keys/partition-table.js';
import { AtollError } from '../../src/errors.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import { CrashableEngine, InProcessCluster, settle, waitFor } from './in-process-cluster.js';

const PARTITIONS = 2;
const IMPORTING = preferredLeaderOf(1, [1, 2, 3], 3);
const VALUE_BYTES = 256 * 1024;
const LARGE_WRITES = 48; // 12 MiB
const WRITE_MS_PER_MIB = 160;
const TICK_MS = 150; // election timeout: 10 to 20 ticks, 1.5-3 s
/**
 * The longest node 2 may go without sending partition 1 anything while its import runs: the
 * shortest election timeout (10 ticks). It sends a heartbeat every tick and appends for the writes,
 * so a follower that hears from it within that never campaigns. Measured while importing: 140-780
 * ms on this shared 2-core machine under load (the event loop is shared by the three nodes and the
 * import's writes; the high end with the simulator running beside). Over the whole catch-up the
 * silence is longer (0.7-2.2 s measured): the synchronous parts that remain, the leader framing its
 * export and node 2 checking the whole payload when the last chunk arrives (architecture.md
 * section 8), so elections outside the import are possible here and not asserted on. Before this
 * change the silence while importing was the whole import (2.8-3.7 s measured), with an election.
 */
const MAX_SILENCE_MS = 10 * TICK_MS;

/** A bucket whose keys live in `partition`. */
function bucketOf(partition: number): string {
  for (let i = 0; i < 1_000; i++) if (partitionOf(`b${i}/k`, PARTITIONS) === partition) return `b${i}`;
  throw new Error('no bucket');
}

let cluster: InProcessCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

/** Writes `key` at partition's leader, retrying while leadership moves; resolves with its latency. */
async function putAt(c: InProcessCluster, partition: number, key: string, value: Uint8Array): Promise<number> {
  const startedMs = Date.now();
  for (let attempt = 0; attempt < 100; attempt++) {
    const leader = c.leaderId(partition);
    if (leader === undefined) {
      await settle(20);
      continue;
    }
    try {
      await c.node(leader).put({ key, value }, { deadlineMs: Date.now() + 5_000 });
      return Date.now() - startedMs;
    } catch (error) {
      if (!(error instanceof AtollError) || !['NOT_LEADER', 'NO_LEADER', 'UNAVAILABLE', 'DEADLINE_EXCEEDED'].includes(error.code)) throw error;
      await settle(20);
    }
  }
  throw new Error(`could not write ${key}`);
}

describe('a snapshot import beside the node loop', () => {
  it('leaves the importing node leading its other partitions, with no long silence', async () => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 10, logEntriesKeptAfterSnapshot: 5, tickMs: TICK_MS, partitions: PARTITIONS });
    const c = cluster;
    await c.start();
    // The balancer moves each partition's leadership to its preferred node.
    expect(await waitFor(() => c.leaderId(1) === IMPORTING && c.leaderId(0) !== undefined && c.leaderId(0) !== IMPORTING, 15_000)).toBe(true);
    const big = bucketOf(0);
    const small = bucketOf(1);

    // Node 2 misses ~20 MiB of partition 0: its leader compacts past it and will send a snapshot.
    c.network.cutGroups.add(`${IMPORTING}:0`);
    const value = new Uint8Array(VALUE_BYTES).fill(7);
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < LARGE_WRITES) await putAt(c, 0, `${big}/${next++}`, value);
      }),
    );
    const leader0 = c.leaderId(0) as number;
    expect(c.replica(leader0, 0).raw.status().firstIndex).toBeGreaterThan(c.replica(IMPORTING, 0).appliedIndex + 1);

    // Watch what node 2 sends for partition 1 (the loop sends in every iteration it has something
    // for the group: appends for the writes below, heartbeats every tick). A silence counts when
    // partition 0's import (its mark: needsSnapshot) ran at some point during it; the whole
    // catch-up (transfer, checks, import) is reported too.
    const termBefore = c.replica(IMPORTING, 1).raw.status().term;
    const termNow = (): number => c.replica(IMPORTING, 1).raw.status().term;
    let lastSentMs = Date.now();
    let longestSilenceMs = 0;
    let longestSilenceInCatchUpMs = 0;
    let importSeen = false;
    let catchingUp = false;
    let importFirstSeenMs: number | undefined;
    let importLastSeenMs = 0;
    const importing = (): boolean => c.replica(IMPORTING, 0).mvcc.needsSnapshot;
    // Partition 1's term as its followers know it (a node stuck in its loop learns of an election late).
    const partition1Term = (): number => Math.max(...[1, 2, 3].map((id) => c.replica(id, 1).raw.status().term));
    let termAtImportStart: number | undefined;
    let termAtImportEnd: number | undefined;
    let ledAtImportEnd = false;
    const poll = setInterval(() => {
      if (!importing()) return;
      importSeen = true;
      importFirstSeenMs ??= Date.now();
      importLastSeenMs = Date.now();
      termAtImportStart ??= partition1Term();
      termAtImportEnd = partition1Term();
      ledAtImportEnd = c.replica(IMPORTING, 1).raw.status().role === 'leader';
    }, 5);
    c.network.onSend = (from, _to, messages) => {
      if (from !== IMPORTING || !messages.some(({ group }) => group === 1)) return;
      const nowMs = Date.now();
      if (importSeen) longestSilenceMs = Math.max(longestSilenceMs, nowMs - lastSentMs);
      if (catchingUp) longestSilenceInCatchUpMs = Math.max(longestSilenceInCatchUpMs, nowMs - lastSentMs);
      importSeen = importing();
      lastSentMs = nowMs;
    };
    (c.engines.get(IMPORTING) as CrashableEngine).writeDelayMsPerMiB = WRITE_MS_PER_MIB;
    let writing = true;
    let slowestSmallPutMs = 0;
    const smallWrites = (async () => {
      for (let i = 0; writing && i < 2_000; i++) {
        slowestSmallPutMs = Math.max(slowestSmallPutMs, await putAt(c, 1, `${small}/${i}`, new Uint8Array([i & 0xff])));
        await settle(10);
      }
    })();

    // The Ready contract: while the import runs (installing), nothing ticks or steps partition 0's
    // RawNode on node 2 (its Ready is outstanding until a later iteration advances it).
    const raw0 = c.replica(IMPORTING, 0).raw;
    let installingSeen = false;
    let touchedWhileInstalling = 0;
    for (const method of ['tick', 'step', 'propose', 'readIndex', 'campaign'] as const) {
      const original = raw0[method].bind(raw0) as (...args: unknown[]) => unknown;
      (raw0 as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
        if (c.replica(IMPORTING, 0).installing) touchedWhileInstalling++;
        return original(...args);
      };
    }
    const watchInstalling = setInterval(() => {
      installingSeen ||= c.replica(IMPORTING, 0).installing;
    }, 5);
    const catchUpStartedMs = Date.now();
    catchingUp = true;
    lastSentMs = Date.now();
    c.network.cutGroups.delete(`${IMPORTING}:0`);
    const caughtUp = await waitFor(() => c.replica(IMPORTING, 0).appliedIndex >= c.replica(leader0, 0).appliedIndex, 40_000);
    catchingUp = false;
    clearInterval(poll);
    clearInterval(watchInstalling);
    const catchUpTookMs = Date.now() - catchUpStartedMs;
    const importTookMs = importLastSeenMs - (importFirstSeenMs ?? importLastSeenMs);
    writing = false;
    await smallWrites;
    (c.engines.get(IMPORTING) as CrashableEngine).writeDelayMsPerMiB = undefined;

    expect(caughtUp).toBe(true);
    // The import cost what it models (12 MiB at 160 ms per MiB), above the shortest election timeout.
    expect(importTookMs).toBeGreaterThan(1_800);
    console.log(
      `catch-up ${catchUpTookMs} ms, import ${importTookMs} ms; node ${IMPORTING} silent on partition 1 at most ${longestSilenceMs} ms ` +
        `while importing, ${longestSilenceInCatchUpMs} ms in the whole catch-up; slowest partition 1 write ${slowestSmallPutMs} ms; ` +
        `partition 1 terms: ${termBefore} before, ${termAtImportStart}-${termAtImportEnd} during the import, ${termNow()} after`,
    );
    // No election for partition 1 while the import ran. (Outside it, the synchronous steps that
    // remain, architecture.md section 8, can still stall this one process for up to 2 s under load.)
    // Node 2 leads at the end in the term that was current at the start: it led throughout.
    expect(termAtImportEnd, 'no election of partition 1 during the import').toBe(termAtImportStart);
    expect(ledAtImportEnd, 'node 2 leads partition 1 at the end of the import').toBe(true);
    expect(longestSilenceMs).toBeLessThan(MAX_SILENCE_MS);
    expect(installingSeen).toBe(true);
    expect(touchedWhileInstalling).toBe(0);
    expect(await c.localValue(IMPORTING, `${big}/${LARGE_WRITES - 1}`)).toBeDefined();
    expect(c.node(IMPORTING).failure).toBeUndefined();
  }, 60_000);
});
