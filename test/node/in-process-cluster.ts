/**
 * A small in-process cluster for focused node tests: every node runs on its own MemoryEngine (which
 * models power loss, src/storage/memory-engine.ts crash()), behind an engine wrapper that can kill
 * the node at a chosen write, and the nodes talk through a loopback NodeTransport that encodes and
 * decodes every Raft frame as the gRPC transport does. Links can be cut and restored, and a node's
 * reads can be slowed down.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Limits } from '../../src/limits.js';
import { pino } from 'pino';
import { afterEach, expect } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { AtollNode, type NodeTestBugs } from '../../src/node/atoll-node.js';
import type { WatchMessage, WatchSink } from '../../src/api/node-api.js';
import type { AutoSplitConfig } from '../../src/node/cluster/auto-split.js';
import type { AtollNodeConfig } from '../../src/node/node-config.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import { systemClock, systemTimers, type NodeTransport, type TransportEvents, type TransportFactory } from '../../src/node/ports.js';
import type { RaftDriver } from '../../src/node/replica/raft-driver.js';
import { decodeRaftFrame, encodeRaftFrame, type GroupMessage } from '../../src/node/raft-wire.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type { IterateOptions, KeyRange, StorageEngine, StorageEntry, WriteOperation, WriteOptions } from '../../src/storage/storage-engine.js';

/** A watch sink that keeps every message and never pushes back (watch tests). */
export class CollectingSink implements WatchSink {
  readonly messages: WatchMessage[] = [];
  write(message: WatchMessage): boolean {
    this.messages.push(message);
    return true;
  }
  drained(): Promise<boolean> {
    return Promise.resolve(true);
  }
}

export const settle = (ms = 10): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `condition` every 10 ms for at most `timeoutMs`; returns whether it came true. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await settle();
  }
  return condition();
}

/**
 * Registers an afterEach for the tests of a file or describe block: it closes every node or
 * cluster passed to add() since the last one, and puts back process.exitCode, which a node stopped
 * by its loop sets for atoll-server.ts (the test process must not keep it). A test that opens several in a
 * row (a crash loop) closes the ones before with closeAll().
 */
export function closedAfterEach(): { add<T extends { close(): Promise<void> }>(opened: T): T; closeAll(): Promise<void> } {
  const exitCodeBefore = process.exitCode;
  const open: Array<{ close(): Promise<void> }> = [];
  const closeAll = async (): Promise<void> => {
    for (const opened of open.splice(0)) await opened.close();
  };
  afterEach(async () => {
    try {
      await closeAll();
    } finally {
      process.exitCode = exitCodeBefore;
    }
  });
  return {
    add: (opened) => {
      open.push(opened);
      return opened;
    },
    closeAll,
  };
}

/** Of nodes 1..3 (partitions on all three), the one a test lets lag: never the preferred leader of `partition`, whom the balancer would hand leadership. */
export function laggingFollower(partition = 0): number {
  return [1, 2, 3].filter((id) => id !== preferredLeaderOf(partition, [1, 2, 3], 3)).pop() as number;
}

/** Node `node`'s loop driver (private to AtollNode): tests queue loop tasks on it and read its groups. */
export function driverOf(node: AtollNode): RaftDriver<PartitionReplica> {
  return (node as unknown as { driver: RaftDriver<PartitionReplica> }).driver;
}

/** A transport for a node whose peers never answer: sends go nowhere; forwards and cluster reads are refused UNAVAILABLE. */
export function silentTransport(): NodeTransport {
  return {
    send: () => undefined,
    isReachable: () => true,
    forward: () => Promise.reject(new AtollError('UNAVAILABLE', 'no peers in this test')),
    clusterInfo: () => Promise.reject(new AtollError('UNAVAILABLE', 'no peers in this test')),
    close: () => undefined,
  };
}

/**
 * The settings of a node a test opens by itself (with AtollNode.open and its own environment):
 * node 1 alone unless `peers` says otherwise, one partition, replication factor the number of
 * peers, 20 ms ticks, elections after 10, retention and snapshots at 1,000, a silent logger, and
 * a data directory (named after `name`) that is never created, since the test gives the engine;
 * `overrides` replace any of these (a test that opens a node on disk passes its own dataDir).
 */
export function loneNodeConfig(name: string, overrides: Partial<AtollNodeConfig> = {}): AtollNodeConfig {
  const peers = overrides.peers ?? new Map([[1, 'a:1']]);
  return {
    id: 1,
    dataDir: join(tmpdir(), `atoll-${name}-never-created-${process.pid}`),
    partitions: 1,
    replicationFactor: peers.size,
    tickMs: 20,
    electionTicks: 10,
    retentionRevisions: 1_000,
    snapshotEveryEntries: 1_000,
    peerSecrets: ['p'.repeat(32)],
    logger: pino({ level: 'silent' }),
    ...overrides,
    peers,
  };
}

/** Polls until `node` sees a leader for every partition (/readyz's check), for at most `timeoutMs`; fails the test otherwise. */
export async function expectAllLed(node: AtollNode, timeoutMs: number): Promise<void> {
  expect(await waitFor(() => node.allPartitionsLed(), timeoutMs), `every partition led within ${timeoutMs} ms`).toBe(true);
}

/**
 * A StorageEngine over a MemoryEngine that a test can kill at a chosen write: `beforeWrite` sees
 * every write and deleteRange (in order) and returns true to die there. The write is then not
 * made, it throws (the node loop stops on it), and every later call throws: nothing the dead
 * process would still do reaches the memory engine, which the test then crash()es and reopens.
 */
export class CrashableEngine implements StorageEngine {
  dead = false;
  /** When set, every entry an iterator yields takes this long (a slow disk under a snapshot export). */
  iterateDelayMs: number | undefined;
  /** When set, a write takes this many milliseconds per MiB it carries (LevelDB's cost, modelled). */
  writeDelayMsPerMiB: number | undefined;
  beforeWrite: ((operations: readonly WriteOperation[] | 'deleteRange', sync: boolean) => boolean) | undefined;

  constructor(readonly inner: MemoryEngine) {}

  private alive(): void {
    if (this.dead) throw new Error('the node process crashed');
  }

  private dies(operations: readonly WriteOperation[] | 'deleteRange', options: WriteOptions | undefined): void {
    this.alive();
    if (this.beforeWrite?.(operations, options?.sync === true) === true) {
      this.dead = true;
      throw new Error('the node process crashed at this write');
    }
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    this.alive();
    return this.inner.get(key);
  }

  getSync(key: Uint8Array): Uint8Array | undefined {
    this.alive();
    return this.inner.getSync(key);
  }

  async getMany(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    this.alive();
    return this.inner.getMany(keys);
  }

  async *iterate(options: IterateOptions): AsyncIterable<StorageEntry> {
    this.alive();
    for await (const entry of this.inner.iterate(options)) {
      if (this.iterateDelayMs !== undefined) await settle(this.iterateDelayMs);
      this.alive();
      yield entry;
    }
  }

  async write(operations: WriteOperation[], options?: WriteOptions): Promise<void> {
    this.dies(operations, options);
    if (this.writeDelayMsPerMiB !== undefined) {
      let bytes = 0;
      for (const operation of operations) bytes += operation.key.length + (operation.type === 'put' ? operation.value.length : 0);
      const delayMs = (bytes / (1024 * 1024)) * this.writeDelayMsPerMiB;
      if (delayMs >= 1) await settle(delayMs);
      this.alive();
    }
    await this.inner.write(operations, options);
  }

  async deleteRange(range: KeyRange, options?: WriteOptions): Promise<void> {
    this.dies('deleteRange', options);
    await this.inner.deleteRange(range, options);
  }

  async close(): Promise<void> {
    if (!this.dead) await this.inner.close();
  }
}

/** Loopback links between in-process nodes; a cut node neither sends nor receives. */
export class LoopbackNetwork {
  private readonly events = new Map<number, TransportEvents>();
  readonly cut = new Set<number>();
  /** Messages of these groups to or from these nodes are lost (`${node}:${group}`). */
  readonly cutGroups = new Set<string>();
  /** Sees every frame a node sends, before any is lost. */
  onSend: ((from: number, to: number, messages: readonly GroupMessage[]) => void) | undefined;

  private delivered(from: number, to: number, messages: GroupMessage[]): GroupMessage[] {
    if (this.cutGroups.size === 0) return messages;
    return messages.filter(({ group }) => !this.cutGroups.has(`${from}:${group}`) && !this.cutGroups.has(`${to}:${group}`));
  }

  factory(id: number): TransportFactory {
    return (events) => {
      this.events.set(id, events);
      let closed = false;
      const transport: NodeTransport = {
        send: (peer: number, messages: GroupMessage[]) => {
          this.onSend?.(id, peer, messages);
          if (closed || this.cut.has(id) || this.cut.has(peer)) return;
          const kept = this.delivered(id, peer, messages);
          // A frame that the cut groups emptied is lost; an empty one is a node heartbeat
          // (liveness.ts) and goes through. Dropping those too made every quiesced follower take
          // its leader's node for silent after an election timeout, wake and campaign: idle
          // clusters here changed leaders now and then (test/node/watch-service.test.ts saw
          // NO_LEADER in about one run in five).
          if (kept.length === 0 && messages.length > 0) return;
          const frame = encodeRaftFrame(kept);
          setImmediate(() => {
            if (this.cut.has(id) || this.cut.has(peer)) return;
            this.events.get(peer)?.onMessages(id, decodeRaftFrame(frame));
          });
        },
        isReachable: (peer: number) => !this.cut.has(id) && !this.cut.has(peer),
        forward: () => Promise.reject(new AtollError('UNAVAILABLE', 'tests write at the leader')),
        clusterInfo: () => Promise.reject(new AtollError('UNAVAILABLE', 'every node hosts every partition here')),
        close: () => {
          closed = true;
        },
      };
      return transport;
    };
  }
}

export interface ClusterOptions {
  readonly snapshotEveryEntries: number;
  readonly logEntriesKeptAfterSnapshot: number;
  /** Milliseconds per Raft tick (default 10; elections after 10 ticks). */
  readonly tickMs?: number;
  readonly testBugs?: NodeTestBugs;
  /** Limit overrides for every node. */
  readonly limits?: Partial<Limits>;
  /** Turns authentication on (tenants, tokens). */
  readonly adminToken?: string;
  /** Partitions, each replicated on all three nodes (default 1). */
  readonly partitions?: number;
  /** Automatic splits (src/node/cluster/auto-split.ts); off when absent. */
  readonly autoSplit?: AutoSplitConfig;
  /** The key index memory of each node (AtollNodeConfig.keyIndexBytes; default the node's). */
  readonly keyIndexBytes?: number;
}

const NODE_IDS = [1, 2, 3];

/** Three nodes, one partition replicated on all of them. */
export class InProcessCluster {
  readonly network = new LoopbackNetwork();
  readonly memory = new Map<number, MemoryEngine>();
  readonly engines = new Map<number, CrashableEngine>();
  readonly nodes = new Map<number, AtollNode>();

  constructor(private readonly options: ClusterOptions) {}

  async start(): Promise<void> {
    for (const id of NODE_IDS) {
      this.memory.set(id, new MemoryEngine());
      await this.open(id);
    }
  }

  /** Opens node `id` on its memory engine (as it is on disk now), behind a fresh crashable wrapper. */
  async open(id: number): Promise<AtollNode> {
    const engine = new CrashableEngine(this.memory.get(id) as MemoryEngine);
    this.engines.set(id, engine);
    const node = await AtollNode.open(
      {
        id,
        peers: new Map(NODE_IDS.map((peer) => [peer, `n${peer}:1`])),
        dataDir: '/nonexistent/atoll-in-process-cluster',
        partitions: this.options.partitions ?? 1,
        replicationFactor: 3,
        tickMs: this.options.tickMs ?? 10,
        electionTicks: 10,
        retentionRevisions: 1_000,
        snapshotEveryEntries: this.options.snapshotEveryEntries,
        logEntriesKeptAfterSnapshot: this.options.logEntriesKeptAfterSnapshot,
        peerSecrets: ['p'.repeat(32)],
        logger: pino({ level: 'silent' }),
        ...(this.options.testBugs ? { testBugs: this.options.testBugs } : {}),
        ...(this.options.limits ? { limits: this.options.limits } : {}),
        ...(this.options.adminToken ? { adminToken: this.options.adminToken } : {}),
        ...(this.options.autoSplit ? { autoSplit: this.options.autoSplit } : {}),
        ...(this.options.keyIndexBytes !== undefined ? { keyIndexBytes: this.options.keyIndexBytes } : {}),
      },
      { transport: this.network.factory(id), engine, clock: systemClock, timers: systemTimers, random: new Rng(id * 97) },
    );
    this.nodes.set(id, node);
    return node;
  }

  node(id: number): AtollNode {
    return this.nodes.get(id) as AtollNode;
  }

  /** Node `id`'s hosted groups (its driver's map, live). */
  groups(id: number): Map<number, PartitionReplica> {
    return driverOf(this.node(id)).groups;
  }

  replica(id: number, partition = 0): PartitionReplica {
    return driverOf(this.node(id)).groups.get(partition) as PartitionReplica;
  }

  leaderId(partition = 0): number | undefined {
    for (const [id, node] of this.nodes) {
      if (this.network.cut.has(id) || node.failure !== undefined) continue;
      if (this.replica(id, partition).raw.status().role === 'leader') return id;
    }
    return undefined;
  }

  async waitForLeader(timeoutMs = 5_000): Promise<number> {
    await waitFor(() => this.leaderId() !== undefined, timeoutMs);
    const leader = this.leaderId();
    if (leader === undefined) throw new Error('no leader');
    return leader;
  }

  /** Writes `key` = `value` at the current leader, retrying while leadership moves. */
  async put(key: string, value: string): Promise<void> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const leader = await this.waitForLeader();
      try {
        await this.node(leader).put({ key, value: new TextEncoder().encode(value) }, { deadlineMs: Date.now() + 2_000 });
        return;
      } catch (error) {
        if (!(error instanceof AtollError) || !['NOT_LEADER', 'NO_LEADER', 'UNAVAILABLE', 'DEADLINE_EXCEEDED'].includes(error.code)) throw error;
        await settle(20);
      }
    }
    throw new Error(`could not write ${key}`);
  }

  /** Writes keys `${prefix}/${from}` .. `${prefix}/${to - 1}`, a few at a time. */
  async putRange(prefix: string, from: number, to: number, lanes = 4): Promise<void> {
    let next = from;
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        while (next < to) {
          const i = next++;
          await this.put(`${prefix}/${i}`, `v${i}`);
        }
      }),
    );
  }

  /** The value of `key` in node `id`'s store (its local state, not a linearizable read). */
  async localValue(id: number, key: string): Promise<string | undefined> {
    const got = await this.replica(id).mvcc.get(key, { nowMs: Date.now() });
    return got.found && got.value ? new TextDecoder().decode(got.value) : undefined;
  }

  async close(): Promise<void> {
    for (const node of this.nodes.values()) await node.close();
  }
}
