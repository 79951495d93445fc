/**
 * The cluster descriptor (src/node/cluster/cluster-descriptor.ts): written at a new cluster's first start
 * (synced: it survives a power loss right after), the same id on every node of one cluster and
 * another for another cluster, restarts with contradicting flags refused naming the flag, another
 * cluster's data directory refused, and a data directory from before descriptors adopting fnv1a32.
 * Then whole nodes: an old data directory's keys stay readable, and ClusterInfo names the hash.
 */
import { createHash } from 'node:crypto';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import type { BucketHashName } from '../../src/keys/bucket-hash.js';
import { partitionOf, partitionTable } from '../../src/keys/partition-table.js';
import { AtollNode, type AtollNodeConfig } from '../../src/node/atoll-node.js';
import {
  decodeDescriptor,
  descriptorKey,
  encodeDescriptor,
  settleClusterDescriptor,
  type ClusterDescriptor,
} from '../../src/node/cluster/cluster-descriptor.js';
import type { NodeTransport } from '../../src/node/ports.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';

const SECRET = 's'.repeat(43);
const OTHER_SECRET = 'o'.repeat(43);
const peers = new Map([
  [1, 'node1:7001'],
  [2, 'node2:7001'],
  [3, 'node3:7001'],
]);

function configOf(overrides: Partial<AtollNodeConfig> = {}): AtollNodeConfig {
  return {
    id: 1,
    peers,
    dataDir: '/data/node1',
    partitions: 16,
    replicationFactor: 3,
    tickMs: 10,
    electionTicks: 10,
    retentionRevisions: 1_000,
    snapshotEveryEntries: 1_000,
    peerSecrets: [SECRET],
    logger: pino({ level: 'silent' }),
    ...overrides,
  };
}

async function settle(engine: MemoryEngine, overrides: Partial<AtollNodeConfig> = {}) {
  const config = configOf(overrides);
  return settleClusterDescriptor(engine, config, config.peerSecrets?.[0] ?? 'x'.repeat(43));
}

/** Runs `settle` expecting a refusal; returns the error (CLUSTER_MISMATCH, one line). */
async function refusal(engine: MemoryEngine, overrides: Partial<AtollNodeConfig>): Promise<AtollError> {
  const error = await settle(engine, overrides).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AtollError);
  expect((error as AtollError).code).toBe('CLUSTER_MISMATCH');
  expect((error as AtollError).message).not.toContain('\n');
  return error as AtollError;
}

describe('the cluster descriptor', () => {
  it('is written with a synced write at a new cluster first start, naming the new hash and the whole table', async () => {
    const engine = new MemoryEngine();
    const { descriptor, event } = await settle(engine);
    expect(event).toBe('created');
    expect(descriptor).toMatchObject({ nodeId: 1, partitionCount: 16, replicationFactor: 3, hashFunction: 'murmur3_32', origin: 'created' });
    expect(descriptor.clusterId).toMatch(/^[0-9a-f]{32}$/);
    expect(descriptor.partitions).toEqual(partitionTable(16));
    expect(descriptor.members.map((member) => [member.id, member.clientAddress])).toEqual([...peers]);
    // A power loss right after the start keeps it: the write was synced.
    engine.crash();
    const stored = await engine.get(descriptorKey);
    expect(stored).toBeDefined();
    expect(decodeDescriptor(stored as Uint8Array)).toEqual(descriptor);
    // The next start finds it and changes nothing.
    const again = await settle(engine);
    expect(again.event).toBe('found');
    expect(again.descriptor).toEqual(descriptor);
  });

  it('gives every node of a cluster the same id, and another cluster another one', async () => {
    const ids = await Promise.all([1, 2, 3].map(async (id) => (await settle(new MemoryEngine(), { id, dataDir: `/data/node${id}` })).descriptor.clusterId));
    expect(new Set(ids).size).toBe(1);
    const otherSecret = (await settle(new MemoryEngine(), { peerSecrets: [OTHER_SECRET] })).descriptor.clusterId;
    const otherFlags = (await settle(new MemoryEngine(), { partitions: 8 })).descriptor.clusterId;
    expect(new Set([ids[0], otherSecret, otherFlags]).size).toBe(3);
  });

  it('keeps the id a data directory recorded with the version-1 derivation (an unsalted SHA-256 of the secret and flags); new clusters get the keyed one', async () => {
    const engine = new MemoryEngine();
    const { descriptor } = await settle(engine);
    const flags = JSON.stringify({ partitionCount: 16, replicationFactor: 3, hashFunction: 'murmur3_32', members: [...peers] });
    const v1 = createHash('sha256').update(`atoll-cluster-id/v1\n${SECRET}\n${flags}`, 'utf8').digest('hex').slice(0, 32);
    // The new derivation is not the old one (which anyone could test guesses of the secret against).
    expect(descriptor.clusterId).not.toBe(v1);
    // A descriptor an older build wrote, with a version-1 id: found, and its id kept.
    const old = new MemoryEngine();
    await old.write([{ type: 'put', key: descriptorKey, value: encodeDescriptor({ ...descriptor, clusterId: v1 }) }], { sync: true });
    const found = await settle(old);
    expect(found.event).toBe('found');
    expect(found.descriptor.clusterId).toBe(v1);
    expect(decodeDescriptor((await old.get(descriptorKey)) as Uint8Array).clusterId).toBe(v1);
  });

  it('refuses a restart whose flags contradict it, naming the flag, the recorded value and the given one; writes nothing', async () => {
    const engine = new MemoryEngine();
    const { descriptor } = await settle(engine);
    const before = await engine.get(descriptorKey);
    const partitions = await refusal(engine, { partitions: 32 });
    expect(partitions.message).toMatch(/^--partitions: .*created with 16 partitions; --partitions is 32/);
    expect(partitions.message).toContain(descriptor.clusterId);
    expect((await refusal(engine, { replicationFactor: 1 })).message).toMatch(/^--replication-factor: .*replication factor 3; --replication-factor is 1/);
    expect((await refusal(engine, { id: 2 })).message).toMatch(/^--id: .*as node 1; --id is 2/);
    expect((await refusal(engine, { bucketHash: 'fnv1a32' })).message).toMatch(/^--bucket-hash: .*routes by murmur3_32; --bucket-hash is fnv1a32/);
    const moved = new Map(peers).set(2, 'elsewhere:7001');
    expect((await refusal(engine, { peers: moved })).message).toMatch(/^--peers: .*node 2's address is node2:7001; --peers says elsewhere:7001/);
    const grown = new Map(peers).set(4, 'node4:7001');
    expect((await refusal(engine, { peers: grown })).message).toMatch(/^--peers: .*members 1,2,3; --peers names 1,2,3,4/);
    const peerPorts = new Map([...peers].map(([id, address]) => [id, address.replace('7001', '7101')]));
    await settle(engine, { peerAddresses: peerPorts });
    expect((await refusal(engine, { peerAddresses: new Map(peerPorts).set(3, 'node3:9999') })).message).toMatch(
      /^--peer-addresses: .*node 3's peer address is node3:7101; it is now node3:9999/,
    );
    // The refusals wrote nothing: what is recorded still decodes to the same cluster and flags.
    expect(decodeDescriptor((await engine.get(descriptorKey)) as Uint8Array)).toMatchObject({ clusterId: descriptor.clusterId, partitionCount: 16 });
    expect(before).toBeDefined();
  });

  it('refuses a data directory of another cluster (no peer secret in common), and follows a step-by-step rotation', async () => {
    const engine = new MemoryEngine();
    const { descriptor } = await settle(engine);
    const foreign = await refusal(engine, { peerSecrets: [OTHER_SECRET] });
    expect(foreign.message).toContain(`belongs to cluster ${descriptor.clusterId}`);
    expect(foreign.message).toContain('another cluster');
    // Rotation: add the new secret second, make it first, drop the old: one in common each time.
    for (const secrets of [[SECRET, OTHER_SECRET], [OTHER_SECRET, SECRET], [OTHER_SECRET]]) {
      const { descriptor: found } = await settle(engine, { peerSecrets: secrets });
      expect(found.clusterId).toBe(descriptor.clusterId);
    }
    // Now the old secret alone is the stranger.
    await refusal(engine, { peerSecrets: [SECRET] });
  });

  it('adopts fnv1a32 for a data directory written before descriptors existed, and refuses another hash for it', async () => {
    const engine = new MemoryEngine();
    await engine.write([{ type: 'put', key: Uint8Array.of(0x02, 0, 0, 0, 0, 1), value: Uint8Array.of(1) }], { sync: true });
    await refusal(engine, { bucketHash: 'murmur3_32' });
    const { descriptor, event } = await settle(engine);
    expect(event).toBe('adopted');
    expect(descriptor).toMatchObject({ hashFunction: 'fnv1a32', origin: 'adopted', partitionCount: 16 });
    expect((await settle(engine)).descriptor).toEqual(descriptor);
  });

  it('refuses a damaged record, a record of an unknown version and a malformed one', async () => {
    const engine = new MemoryEngine();
    const { descriptor } = await settle(engine);
    const text = new TextDecoder().decode(encodeDescriptor(descriptor));
    const outer = JSON.parse(text) as { body: string; version: number; checksum: string };
    const variants = [
      { ...outer, body: outer.body.replace('"partitionCount":16', '"partitionCount":17') },
      { ...outer, version: 2 },
      '{not json',
    ];
    for (const variant of variants) {
      const bytes = new TextEncoder().encode(typeof variant === 'string' ? variant : JSON.stringify(variant));
      await engine.write([{ type: 'put', key: descriptorKey, value: bytes }], { sync: true });
      const error = await refusal(engine, {});
      expect(error.message).toMatch(/cluster descriptor in this data directory is unreadable/);
    }
    // A body whose checksum matches but whose table is not the partition count's.
    const bad: ClusterDescriptor = { ...descriptor, partitions: descriptor.partitions.slice(1) };
    expect(() => encodeDescriptor(bad)).toThrow(/partition table/);
  });
});

// ------------------------------------------------------------------ whole nodes

/** A one-node transport: nothing to send to. */
const loneTransport: NodeTransport = {
  send: () => undefined,
  isReachable: () => true,
  forward: () => Promise.reject(new AtollError('UNAVAILABLE', 'one node')),
  clusterInfo: () => Promise.reject(new AtollError('UNAVAILABLE', 'one node')),
  close: () => undefined,
};

async function openLoneNode(engine: MemoryEngine, bucketHash?: BucketHashName): Promise<AtollNode> {
  const node = await AtollNode.open(
    configOf({ peers: new Map([[1, 'node1:7001']]), replicationFactor: 1, partitions: 8, ...(bucketHash !== undefined && { bucketHash }) }),
    { transport: () => loneTransport, engine, random: new Rng(7) },
  );
  for (let i = 0; i < 500 && !node.allPartitionsLed(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(node.allPartitionsLed()).toBe(true);
  return node;
}

const deadline = (): { deadlineMs: number } => ({ deadlineMs: Date.now() + 5_000 });
const text = (value: Uint8Array | undefined): string | undefined => (value === undefined ? undefined : new TextDecoder().decode(value));

describe('a node and its descriptor', () => {
  it('an old data directory (fnv1a32 routing, no descriptor) adopts fnv1a32 and its keys stay readable', async () => {
    const engine = new MemoryEngine();
    // The old code: keys routed by FNV-1a, no descriptor. Reproduced by a node told to use fnv1a32
    // whose descriptor is then removed, which leaves exactly what the old code wrote.
    const old = await openLoneNode(engine, 'fnv1a32');
    const keys = Array.from({ length: 40 }, (_, i) => `user${i}/profile`);
    for (const key of keys) await old.put({ key, value: new TextEncoder().encode(`v-${key}`) }, deadline());
    // The two hashes disagree on most of these keys, so a wrong adoption could not read them.
    expect(keys.filter((key) => partitionOf(key, 8, 'fnv1a32') !== partitionOf(key, 8, 'murmur3_32')).length).toBeGreaterThan(20);
    await old.close();
    engine.reopen();
    await engine.write([{ type: 'del', key: descriptorKey }], { sync: true });

    const adopted = await openLoneNode(engine);
    try {
      expect(adopted.descriptor).toMatchObject({ hashFunction: 'fnv1a32', origin: 'adopted' });
      const info = await adopted.clusterInfo({ deadlineMs: Date.now() + 5_000 });
      expect(info).toMatchObject({ hashFunction: 'fnv1a32', clusterId: adopted.descriptor.clusterId });
      for (const key of keys) expect(text((await adopted.get({ key }, deadline())).value)).toBe(`v-${key}`);
      // New writes route by the same hash.
      await adopted.put({ key: 'fresh/k', value: new TextEncoder().encode('new') }, deadline());
      expect(text((await adopted.get({ key: 'fresh/k' }, deadline())).value)).toBe('new');
    } finally {
      await adopted.close();
    }
  });

  it('a new node routes by murmur3_32, names it and its cluster id in ClusterInfo, and refuses other --partitions at restart', async () => {
    const engine = new MemoryEngine();
    const node = await openLoneNode(engine);
    await node.put({ key: 'user7/a', value: new TextEncoder().encode('x') }, deadline());
    const info = await node.clusterInfo({ deadlineMs: Date.now() + 5_000 });
    expect(info.hashFunction).toBe('murmur3_32');
    expect(info.clusterId).toMatch(/^[0-9a-f]{32}$/);
    await node.close();
    engine.reopen();
    const error = await AtollNode.open(configOf({ peers: new Map([[1, 'node1:7001']]), replicationFactor: 1, partitions: 16 }), {
      transport: () => loneTransport,
      engine,
      random: new Rng(7),
    }).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toMatchObject({ code: 'CLUSTER_MISMATCH' });
    expect((error as Error).message).toMatch(/^--partitions: .*created with 8 partitions; --partitions is 16/);
  });
});
