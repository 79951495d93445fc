/**
 * The transaction workload against a real three-node cluster in one process (AtollNode, memory
 * engines, an in-memory transport that carries encoded Raft frames and forwards requests to the
 * peer node): a few hundred concurrent transactions through random nodes must give a history the
 * isolation checker accepts; and the same workload through a TxnApi wrapper with a planted bug
 * (reads from a stale snapshot; a commit that drops a write but acknowledges it) must be caught.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { AtollNode, type NodeTestBugs } from '../../src/node/atoll-node.js';
import type { CallContext } from '../../src/api/node-api.js';
import type { NodeTransport, TransportEvents } from '../../src/node/ports.js';
import { decodeRaftFrame, encodeRaftFrame } from '../../src/node/raft-wire.js';
import { Rng } from '../../src/raft/rng.js';
import { checkIsolation, type IsolationVerdict, type TxnIsolation, type TxnRecord } from '../../src/sim/node/isolation-checker.js';
import { commitCertainlyFailed, runRandomTransaction, type TxnApi } from '../../src/sim/node/txn-workload.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';

const nodeIds = [1, 2, 3];
let nodes: AtollNode[] = [];

/** Raft frames go through the wire codec and arrive on a later turn; forwards call the peer node. */
function memoryTransport(self: number, byId: ReadonlyMap<number, AtollNode>, events: Map<number, TransportEvents>): NodeTransport {
  let closed = false;
  return {
    send: (peer, messages) => {
      const frame = encodeRaftFrame(messages);
      setImmediate(() => {
        if (!closed) events.get(peer)?.onMessages(self, decodeRaftFrame(frame));
      });
    },
    isReachable: () => !closed,
    forward: async (peer, operation, hops, deadlineMs, signal, tenant) => {
      const node = byId.get(peer);
      if (node === undefined || closed) throw new AtollError('UNAVAILABLE', `node ${peer} is not running`, { fromTransport: true });
      return node.executeForwarded(operation, { deadlineMs, hops, ...(signal !== undefined && { signal }), ...(tenant !== undefined && { tenant }) });
    },
    clusterInfo: (peer, deadlineMs) => byId.get(peer)!.clusterInfo({ deadlineMs }),
    close: () => {
      closed = true;
    },
  };
}

/** Three nodes on memory engines and the memory transport, every partition led when it returns. */
async function startCluster(testBugs?: NodeTestBugs): Promise<AtollNode[]> {
  const peers = new Map(nodeIds.map((id) => [id, `node${id}:7000`]));
  const byId = new Map<number, AtollNode>();
  const events = new Map<number, TransportEvents>();
  const started: AtollNode[] = [];
  for (const id of nodeIds) {
    const node = await AtollNode.open(
      {
        id,
        peers,
        dataDir: `/nonexistent/atoll-txn-workload-${id}`,
        partitions: 2,
        replicationFactor: 3,
        tickMs: 50,
        electionTicks: 10,
        retentionRevisions: 10_000,
        snapshotEveryEntries: 10_000,
        peerSecrets: ['s'.repeat(32)],
        logger: pino({ level: 'silent' }),
        ...(testBugs !== undefined && { testBugs }),
      },
      {
        transport: (nodeEvents) => {
          events.set(id, nodeEvents);
          return memoryTransport(id, byId, events);
        },
        engine: new MemoryEngine(),
        random: new Rng(id),
      },
    );
    byId.set(id, node);
    started.push(node);
  }
  for (let attempt = 0; attempt < 200 && !started.every((node) => node.allPartitionsLed()); attempt++) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(started.every((node) => node.allPartitionsLed())).toBe(true);
  return started;
}

beforeAll(async () => {
  nodes = await startCluster();
});

afterAll(async () => {
  await Promise.all(nodes.map((node) => node.close()));
  nodes = [];
});

const context = (): CallContext => ({ deadlineMs: Date.now() + 5_000 });

interface RunOptions {
  readonly bucket: string;
  readonly seed: number;
  readonly workers: number;
  readonly perWorker: number;
  /** Wraps the API each transaction runs through (a planted bug). */
  readonly wrap?: (api: TxnApi) => TxnApi;
}

/** Concurrent workers, each running bounded transactions through a random node; plus a few plain puts. */
async function runWorkload(options: RunOptions, on: readonly AtollNode[] = nodes): Promise<TxnRecord[]> {
  const keys = Array.from({ length: 5 }, (_, i) => `${options.bucket}/k${i}`);
  const prefixes = [options.bucket, `${options.bucket}/k1`];
  const records: TxnRecord[] = [];
  const root = new Rng(options.seed);
  // One wrapper per node, so a wrapper's state spans the run.
  const apis = new Map<AtollNode, TxnApi>(on.map((node) => [node, options.wrap ? options.wrap(node) : node]));
  const worker = async (rng: Rng, index: number): Promise<void> => {
    for (let i = 0; i < options.perWorker; i++) {
      const node = rng.pick(on);
      if (rng.chance(0.08)) {
        records.push(await plainPut(node, rng.pick(keys), `put-${options.seed}-${index}-${i}`));
        continue;
      }
      const isolation: TxnIsolation = rng.chance(0.5) ? 'SERIALIZABLE' : 'SNAPSHOT';
      records.push(await runRandomTransaction(apis.get(node)!, rng, { keys, prefixes, isolation, context }));
    }
  };
  await Promise.all(Array.from({ length: options.workers }, (_, index) => worker(root.fork(), index)));
  return records;
}

/** A non-transactional put, recorded as a one-write committed transaction (snapshot = revision - 1). */
async function plainPut(node: AtollNode, key: string, id: string): Promise<TxnRecord> {
  const base = { id, isolation: 'SERIALIZABLE' as const, partition: 0, reads: [], prefixReads: [], writes: [{ key, value: id }] };
  try {
    const put = await node.put({ key, value: new TextEncoder().encode(id) }, context());
    return { ...base, outcome: 'committed', snapshotRevision: put.revision - 1, commitRevision: put.revision };
  } catch (error) {
    return { ...base, outcome: commitCertainlyFailed(error) ? 'aborted' : 'unknown', snapshotRevision: 0 };
  }
}

function summary(verdict: IsolationVerdict): string {
  return JSON.stringify({ counts: verdict.counts, anomalies: verdict.anomalies.slice(0, 5).map((anomaly) => anomaly.message) }, undefined, 1);
}

describe('random transactions on a three-node cluster', () => {
  it('a few hundred concurrent transactions through random nodes give a valid history', async () => {
    const records = await runWorkload({ bucket: 'ok', seed: 1, workers: 8, perWorker: 40 });
    const verdict = checkIsolation(records);
    expect(verdict.valid, summary(verdict)).toBe(true);
    expect(verdict.anomalies).toEqual([]);
    expect(records.length).toBe(320);
    // Enough of each to mean something: commits, conflicts, prefix reads, dependency edges.
    expect(verdict.counts.committed).toBeGreaterThan(100);
    expect(records.filter((record) => record.note?.includes('TXN_CONFLICT')).length).toBeGreaterThan(10);
    expect(records.filter((record) => record.outcome === 'committed' && record.prefixReads.length > 0).length).toBeGreaterThan(10);
    expect(verdict.counts.edges).toBeGreaterThan(200);
    // What SNAPSHOT allows may appear (write skew, phantoms), and nothing else.
    for (const anomaly of verdict.allowed) expect(['G2', 'G2-item']).toContain(anomaly.kind);
  });

  it('a commit whose answer is lost is unknown, and counts as committed once a read sees its write', async () => {
    const records = await runWorkload({ bucket: 'lost', seed: 4, workers: 6, perWorker: 30, wrap: losesAnswers });
    const verdict = checkIsolation(records);
    expect(verdict.valid, summary(verdict)).toBe(true);
    expect(verdict.counts.unknown).toBeGreaterThan(10);
    expect(verdict.counts.unknownIncluded).toBeGreaterThan(0);
    expect(verdict.counts.unknownIncluded).toBeLessThan(verdict.counts.unknown);
  });

  it('catches reads served from a stale snapshot', async () => {
    const records = await runWorkload({ bucket: 'stale', seed: 2, workers: 6, perWorker: 30, wrap: staleReads });
    const verdict = checkIsolation(records);
    expect(verdict.valid).toBe(false);
    const kinds = new Set(verdict.anomalies.map((anomaly) => anomaly.kind));
    expect([...kinds], summary(verdict)).toContain('stale-read');
    // Stale reads feed writes: the dependency graph sees them too, as cycles SNAPSHOT forbids.
    expect([...kinds].some((kind) => kind === 'G-single' || kind === 'G-nonadjacent' || kind === 'lost-update'), summary(verdict)).toBe(true);
  });

  it('catches a commit that drops a write but acknowledges it', async () => {
    const records = await runWorkload({ bucket: 'drop', seed: 3, workers: 6, perWorker: 30, wrap: dropsAWrite });
    const verdict = checkIsolation(records);
    expect(verdict.valid).toBe(false);
    const kinds = new Set(verdict.anomalies.map((anomaly) => anomaly.kind));
    // A later snapshot misses the acknowledged version: a stale read, and a cycle through it.
    expect([...kinds], summary(verdict)).toContain('stale-read');
    expect([...kinds].some((kind) => kind.startsWith('G')), summary(verdict)).toBe(true);
  });
});

describe('a node-level bug', () => {
  it('catches torn transactions (the first write of a commit in a log entry of its own)', async () => {
    const torn = await startCluster({ tornTransactions: true });
    try {
      const records = await runWorkload({ bucket: 'torn', seed: 5, workers: 6, perWorker: 30 }, torn);
      const verdict = checkIsolation(records);
      expect(verdict.valid).toBe(false);
      // A read sees the first write at the revision before the one the commit answered with.
      expect(verdict.anomalies.map((anomaly) => anomaly.kind), summary(verdict)).toContain('garbage-read');
    } finally {
      await Promise.all(torn.map((node) => node.close()));
    }
  });
});

/**
 * Not a bug: every third commit's answer is lost (DEADLINE_EXCEEDED), half of them after the
 * commit applied and half before it was sent, as a dropped connection does.
 */
function losesAnswers(inner: TxnApi): TxnApi {
  let commits = 0;
  const lost = (): AtollError => new AtollError('DEADLINE_EXCEEDED', 'the answer was lost');
  return {
    beginTransaction: (request, callContext) => inner.beginTransaction(request, callContext),
    get: (request, callContext) => inner.get(request, callContext),
    getByPrefix: (request, callContext) => inner.getByPrefix(request, callContext),
    commit: async (request, callContext) => {
      commits++;
      if (commits % 6 === 0) throw lost();
      const result = await inner.commit(request, callContext);
      if (commits % 6 === 3) throw lost();
      return result;
    },
  };
}

/** Planted bug: reads inside a transaction are served two revisions before its snapshot. */
function staleReads(inner: TxnApi): TxnApi {
  const snapshots = new Map<string, number>();
  const staleRevision = (transaction: string | undefined): number | undefined => {
    const snapshot = transaction === undefined ? undefined : snapshots.get(transaction);
    return snapshot === undefined || snapshot <= 3 ? undefined : snapshot - 2;
  };
  return {
    beginTransaction: async (request, callContext) => {
      const begun = await inner.beginTransaction(request, callContext);
      snapshots.set(begun.transaction, begun.snapshotRevision);
      return begun;
    },
    get: (request, callContext) => {
      const revision = staleRevision(request.transaction);
      return revision === undefined ? inner.get(request, callContext) : inner.get({ key: request.key, revision }, callContext);
    },
    getByPrefix: (request, callContext) => {
      const revision = staleRevision(request.transaction);
      if (revision === undefined || request.pageToken !== undefined) return inner.getByPrefix(request, callContext);
      return inner.getByPrefix({ prefix: request.prefix, revision, ...(request.limit !== undefined && { limit: request.limit }) }, callContext);
    },
    commit: (request, callContext) => inner.commit(request, callContext),
  };
}

/** Planted bug: a commit of two or more writes sends all but the first, and reports success. */
function dropsAWrite(inner: TxnApi): TxnApi {
  return {
    beginTransaction: (request, callContext) => inner.beginTransaction(request, callContext),
    get: (request, callContext) => inner.get(request, callContext),
    getByPrefix: (request, callContext) => inner.getByPrefix(request, callContext),
    commit: (request, callContext) => inner.commit(request.writes.length > 1 ? { ...request, writes: request.writes.slice(1) } : request, callContext),
  };
}
