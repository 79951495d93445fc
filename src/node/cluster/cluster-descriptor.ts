/**
 * The cluster descriptor: what a node's data directory records about the cluster it belongs to
 * (cluster id, partition table, bucket hash, replication factor, members), and the checks a node
 * makes against it at every start. One job: decide, before any replica opens, whether this data
 * directory and these flags belong together, and which bucket hash the cluster routes by.
 *
 * Where: one record in the node keyspace of the node's LevelDB (storage/keyspace.ts, tag 0x01),
 * written with a synced write before the Raft groups bootstrap, so it is in the data directory
 * whenever anything else is. Format: UTF-8 JSON {format, version, checksum, body} where body is
 * the descriptor's own JSON text and checksum its SHA-256 (hex): a torn or edited record fails to
 * decode instead of being half-believed. A version this code does not know is refused.
 *
 * The cluster id. Every node must compute the same id, with no coordination, at its first start,
 * and two clusters must not share one. It is derived from the cluster's current peer secret (the
 * first one, which every node of a new cluster shares: they cannot talk otherwise) and the creation
 * flags (partition count, replication factor, hash, every member's id and client address). Why
 * derived rather than proposed by one node through a replicated record: the descriptor must be
 * settled before the Raft groups open (it decides their routing hash), and a node whose partitions
 * are led elsewhere may start long before any leader exists. Deriving it needs nothing from other
 * nodes, and it has a useful side effect: nodes started with different creation flags derive
 * different ids and refuse each other loudly at the first handshake. Two clusters share an id only
 * if they share both the secret and every creation flag, i.e. they are indistinguishable to each
 * other's peer authentication anyway.
 *
 * The id is public (ClusterInfo answers it without a token) and the flags are too, so it must not
 * let anyone test guesses of the secret offline (issue 33). A random value recorded in the
 * descriptor would do that best, but the founders cannot share one: each settles its descriptor
 * alone, before it talks to anyone, started in any order, and the one thing they share is the
 * secret itself (a file one of them may have created, a Kubernetes secret mounted read-only,
 * ATOLL_PEER_SECRET); sharing a random value too would take a new flag or a round trip before the
 * descriptor exists. So the id is a keyed hash whose key is stretched from the secret: HMAC-SHA256
 * over a domain tag and the flags, keyed by scrypt(secret) (N = 2^15, r = 8: 32 MiB and about 0.1 s
 * per derivation). Every guess of the secret costs an attacker that scrypt, against about a
 * microsecond for the SHA-256 of version 1: a random secret (which nodes make, and the docs tell
 * operators to make) stays out of reach, and a weak one is a hundred thousand times slower to find.
 * Ids are recorded, never derived again: a data directory created with the version-1 derivation
 * keeps its id, so existing clusters are unchanged; only a new cluster's founders derive version 2
 * (so the founders of one new cluster must run one version).
 *
 * "Another cluster's data directory": the peer secret is the cluster's shared credential, so a
 * data directory whose recorded secrets (digests, never the secrets) share none with the node's
 * current ones is another cluster's. The record keeps the digests of the secrets of the last start
 * and is rewritten when they change, so a rotation done step by step (add the new secret second,
 * make it first, drop the old; docs/security.md) keeps one secret in common at every restart.
 *
 * Data directories written before descriptors existed (data, no record) adopt one built from the
 * flags with the hash they were written with, fnv1a32, so existing clusters keep their routing.
 *
 * Invariants (checked where the record is decoded and before it is written):
 * - partitions is exactly partitionTable(partitionCount) (equal contiguous ranges).
 * - members are sorted by id, ids unique and positive; nodeId is one of them.
 * - replicationFactor >= 1; hashFunction is a known bucket hash.
 */
import { createHash, createHmac, scryptSync } from 'node:crypto';
import { AtollError } from '../../errors.js';
import { defaultBucketHash, isBucketHashName, legacyBucketHash, type BucketHashName } from '../../keys/bucket-hash.js';
import { partitionTable, type PartitionRange } from '../../keys/partition-table.js';
import { encodeUtf8, decodeUtf8 } from '../../keys/utf8.js';
import { compareBytes, concatBytes } from '../../storage/bytes.js';
import { checkTable, type MemberState, type MemberTable } from './membership-table.js';
import { nodeKeyPrefix } from '../../storage/keyspace.js';
import type { StorageEngine } from '../../storage/storage-engine.js';
import type { AtollNodeConfig } from '../node-config.js';
import { newPeerSecret } from '../peers/peer-secret.js';

/** The metadata key a node sends its cluster id in, on every call to a peer. */
export const clusterIdMetadataKey = 'atoll-cluster-id';
/** The metadata key a node sends its own id in, on every call to a peer (a removed member is refused). */
export const nodeIdMetadataKey = 'atoll-node-id';
export const descriptorFormat = 'atoll-cluster-descriptor';
export const descriptorVersion = 1;
/** The record's key in the node's storage engine. */
export const descriptorKey = concatBytes(nodeKeyPrefix(), encodeUtf8('cluster-descriptor'));
/** 65,536 partitions of about 40 bytes each, members and digests: far below this. */
const maxDescriptorBytes = 8 * 1024 * 1024;
/** A cluster id: 32 lowercase hex digits (128 bits). */
const clusterIdPattern = /^[0-9a-f]{32}$/;

export interface ClusterMember {
  readonly id: number;
  /** host:port of its client port (--peers). */
  readonly clientAddress: string;
  /** host:port of its peer port (--peer-addresses, default the client port + 100); '' when not known. */
  readonly peerAddress: string;
  /** Its state in the member table (membership-table.ts); absent in a descriptor written before members could change: active. */
  readonly state?: MemberState;
  readonly zone?: string;
}

export interface ClusterDescriptor {
  readonly clusterId: string;
  /** The node whose data directory holds this record. */
  readonly nodeId: number;
  readonly partitionCount: number;
  readonly partitions: readonly PartitionRange[];
  readonly hashFunction: BucketHashName;
  readonly replicationFactor: number;
  readonly members: readonly ClusterMember[];
  /**
   * 'created' at a new cluster's first start; 'adopted' by a data directory older than descriptors;
   * 'joined' by a node that joined a running cluster (--join).
   */
  readonly origin: 'created' | 'adopted' | 'joined';
  /**
   * The member table this node last applied (membership.ts), once members have changed: from then
   * on the table, not --peers, decides the members, and `members` is the table's members.
   */
  readonly memberTable?: MemberTable;
  /** Digests of the peer secrets of the last start (see the file comment); empty when the node had none. */
  readonly secretDigests: readonly string[];
}

/** What a start found: the descriptor it runs with and whether it wrote one. */
export interface SettledDescriptor {
  readonly descriptor: ClusterDescriptor;
  readonly event: 'created' | 'adopted' | 'found';
}

function mismatch(message: string, details?: Record<string, unknown>): AtollError {
  return new AtollError('CLUSTER_MISMATCH', message, details);
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function secretDigest(secret: string): string {
  return sha256Hex(`atoll-descriptor-secret/v1\n${secret}`).slice(0, 32);
}

/** The members the flags name, sorted by id. */
export function membersOf(config: Pick<AtollNodeConfig, 'peers' | 'peerAddresses'>): ClusterMember[] {
  return [...config.peers]
    .sort(([a], [b]) => a - b)
    .map(([id, clientAddress]) => ({ id, clientAddress, peerAddress: config.peerAddresses?.get(id) ?? '' }));
}

/** The scrypt cost of the key a cluster id is derived under (see the file comment): each guess of the secret pays it too. */
export const clusterIdKeyCost = Object.freeze({ N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
/** Ids this process derived, by a digest of their inputs: the nodes of one process (tests, the simulator) pay scrypt once. */
const derivedIds = new Map<string, string>();
const maxDerivedIds = 64;

/** The cluster id (see the file comment): the same on every node given the same secret and creation flags. */
export function deriveClusterId(
  secret: string,
  creation: { partitionCount: number; replicationFactor: number; hashFunction: BucketHashName; members: readonly ClusterMember[] },
): string {
  const flags = JSON.stringify({
    partitionCount: creation.partitionCount,
    replicationFactor: creation.replicationFactor,
    hashFunction: creation.hashFunction,
    members: creation.members.map((member) => [member.id, member.clientAddress]),
  });
  const memo = sha256Hex(`${secret}\n${flags}`);
  const known = derivedIds.get(memo);
  if (known !== undefined) return known;
  const key = scryptSync(secret, 'atoll-cluster-id-key/v2', 32, clusterIdKeyCost);
  const id = createHmac('sha256', key).update(`atoll-cluster-id/v2\n${flags}`, 'utf8').digest('hex').slice(0, 32);
  if (derivedIds.size >= maxDerivedIds) derivedIds.delete(derivedIds.keys().next().value!);
  derivedIds.set(memo, id);
  return id;
}

/** The record's bytes. */
export function encodeDescriptor(descriptor: ClusterDescriptor): Uint8Array {
  checkShape(descriptor);
  const body = JSON.stringify(descriptor);
  return encodeUtf8(JSON.stringify({ format: descriptorFormat, version: descriptorVersion, checksum: sha256Hex(body), body }));
}

/** The record from its bytes; CLUSTER_MISMATCH when it is damaged, of an unknown version or malformed. */
export function decodeDescriptor(bytes: Uint8Array): ClusterDescriptor {
  const damaged = (why: string): AtollError =>
    mismatch(`the cluster descriptor in this data directory is unreadable (${why}); it was not written by this version of Atoll, or the disk damaged it`);
  if (bytes.length > maxDescriptorBytes) throw damaged(`${bytes.length} bytes`);
  let outer: unknown;
  try {
    outer = JSON.parse(decodeUtf8(bytes));
  } catch {
    throw damaged('not JSON');
  }
  if (typeof outer !== 'object' || outer === null) throw damaged('not an object');
  const record = outer as { format?: unknown; version?: unknown; checksum?: unknown; body?: unknown };
  if (record.format !== descriptorFormat) throw damaged('wrong format tag');
  if (record.version !== descriptorVersion) throw damaged(`version ${String(record.version)}; this version reads ${descriptorVersion}`);
  if (typeof record.body !== 'string' || record.checksum !== sha256Hex(record.body)) throw damaged('checksum mismatch');
  let descriptor: ClusterDescriptor;
  try {
    descriptor = JSON.parse(record.body) as ClusterDescriptor;
    checkShape(descriptor);
  } catch (error) {
    throw damaged(error instanceof Error ? error.message : 'malformed');
  }
  return descriptor;
}

/** Enforces the invariants in the file comment (a programming error or a damaged record otherwise). */
function checkShape(d: ClusterDescriptor): void {
  const fail = (why: string): never => {
    throw new Error(`malformed descriptor: ${why}`);
  };
  if (typeof d !== 'object' || d === null) fail('not an object');
  if (typeof d.clusterId !== 'string' || !clusterIdPattern.test(d.clusterId)) fail('cluster id');
  if (!isBucketHashName(d.hashFunction)) fail(`unknown hash ${String(d.hashFunction)}`);
  if (d.origin !== 'created' && d.origin !== 'adopted' && d.origin !== 'joined') fail('origin');
  if (d.memberTable !== undefined) checkTable(d.memberTable);
  if (!Array.isArray(d.members) || d.members.length === 0) fail('members');
  let previous = 0;
  for (const member of d.members) {
    if (!Number.isSafeInteger(member.id) || member.id <= previous) fail('members must be sorted by positive, unique id');
    if (typeof member.clientAddress !== 'string' || typeof member.peerAddress !== 'string') fail('member addresses');
    previous = member.id;
  }
  if (!d.members.some((member) => member.id === d.nodeId)) fail('its node is not a member');
  if (!Number.isSafeInteger(d.replicationFactor) || d.replicationFactor < 1) fail('replication factor');
  if (!Array.isArray(d.secretDigests) || d.secretDigests.some((digest) => typeof digest !== 'string')) fail('secret digests');
  const table = partitionTable(d.partitionCount);
  if (!Array.isArray(d.partitions) || d.partitions.length !== table.length) fail('partition table length');
  table.forEach((range, i) => {
    const recorded = d.partitions[i] as PartitionRange;
    if (recorded.id !== range.id || recorded.start !== range.start || recorded.end !== range.end) fail(`partition ${i}'s range`);
  });
}

/** What the descriptor contradicts in the flags, as one line naming the flag, the recorded and the given value. */
function contradictions(recorded: ClusterDescriptor, config: AtollNodeConfig): string | undefined {
  const where = `this data directory (${config.dataDir}) belongs to cluster ${recorded.clusterId}`;
  if (recorded.nodeId !== config.id) return `--id: ${where} as node ${recorded.nodeId}; --id is ${config.id}`;
  if (recorded.partitionCount !== config.partitions) {
    return `--partitions: ${where}, created with ${recorded.partitionCount} partitions; --partitions is ${config.partitions} (the partition count is fixed when a cluster is created)`;
  }
  if (recorded.replicationFactor !== config.replicationFactor) {
    return `--replication-factor: ${where}, created with replication factor ${recorded.replicationFactor}; --replication-factor is ${config.replicationFactor}`;
  }
  if (config.bucketHash !== undefined && config.bucketHash !== recorded.hashFunction) {
    return `--bucket-hash: ${where}, which routes by ${recorded.hashFunction}; --bucket-hash is ${config.bucketHash} (a cluster's hash never changes: it would move every key)`;
  }
  // Once members changed (or the node joined), the replicated member table decides them, not --peers.
  if (followsMemberTable(recorded)) return undefined;
  const given = membersOf(config);
  const recordedIds = recorded.members.map((member) => member.id).join(',');
  const givenIds = given.map((member) => member.id).join(',');
  // Placement (placement.ts) is a function of the member ids: another set would move replicas.
  if (recordedIds !== givenIds) return `--peers: ${where} with members ${recordedIds}; --peers names ${givenIds}`;
  for (const member of given) {
    const before = recorded.members.find((m) => m.id === member.id) as ClusterMember;
    if (before.clientAddress !== member.clientAddress) {
      return `--peers: ${where}, where node ${member.id}'s address is ${before.clientAddress}; --peers says ${member.clientAddress}`;
    }
    if (before.peerAddress !== '' && member.peerAddress !== '' && before.peerAddress !== member.peerAddress) {
      return `--peer-addresses: ${where}, where node ${member.id}'s peer address is ${before.peerAddress}; it is now ${member.peerAddress}`;
    }
  }
  return undefined;
}

/** Whether the members come from the member table (they changed, or this node joined) rather than --peers. */
export function followsMemberTable(descriptor: ClusterDescriptor): boolean {
  return descriptor.memberTable !== undefined || descriptor.origin === 'joined';
}

/** The descriptor with its members rewritten from an applied member table (membership.ts). */
export function withMemberTable(descriptor: ClusterDescriptor, table: MemberTable): ClusterDescriptor {
  const members: ClusterMember[] = table.members.map(({ id, clientAddress, peerAddress, state, zone }) => ({ id, clientAddress, peerAddress, state, zone }));
  // A node that joined keeps its own entry until the table records it (the descriptor always names its node).
  const own = descriptor.members.find((member) => member.id === descriptor.nodeId);
  if (!members.some((member) => member.id === descriptor.nodeId) && own !== undefined) members.push(own);
  members.sort((x, y) => x.id - y.id);
  return { ...descriptor, members, memberTable: table };
}

/** Writes (synced) this node's descriptor record. */
export async function writeDescriptor(engine: StorageEngine, descriptor: ClusterDescriptor): Promise<void> {
  await engine.write([{ type: 'put', key: descriptorKey, value: encodeDescriptor(descriptor) }], { sync: true });
}

/** Whether the engine holds anything but the descriptor (a data directory from before descriptors). */
async function holdsData(engine: StorageEngine): Promise<boolean> {
  for await (const [key] of engine.iterate({ limit: 2 })) {
    if (compareBytes(key, descriptorKey) !== 0) return true;
  }
  return false;
}

/**
 * Reads this node's descriptor, or writes one (a new cluster: `config.bucketHash` or the default
 * hash; an older data directory: fnv1a32), and checks it against the flags. Throws
 * CLUSTER_MISMATCH, with a one-line message naming the flag, the recorded and the given value,
 * when they disagree or the data directory is another cluster's. Writes nothing then.
 * `secret` is the node's current peer secret (config.peerSecrets[0], or the one a node without
 * configured secrets made up for itself): a new cluster's id derives from it.
 */
export async function settleClusterDescriptor(engine: StorageEngine, config: AtollNodeConfig, secret: string): Promise<SettledDescriptor> {
  const secrets = config.peerSecrets ?? [];
  const digests = secrets.map(secretDigest);
  const stored = await engine.get(descriptorKey);
  if (stored !== undefined) {
    const recorded = decodeDescriptor(stored);
    if (config.joined !== undefined && config.joined.clusterId !== recorded.clusterId) {
      throw mismatch(`--join: this data directory (${config.dataDir}) belongs to cluster ${recorded.clusterId}; the member --join reached is of cluster ${config.joined.clusterId}`, { clusterId: recorded.clusterId });
    }
    const problem = contradictions(recorded, config);
    if (problem !== undefined) throw mismatch(problem, { clusterId: recorded.clusterId });
    const shares = recorded.secretDigests.length === 0 || digests.length === 0 || digests.some((digest) => recorded.secretDigests.includes(digest));
    if (!shares) {
      throw mismatch(
        `this data directory (${config.dataDir}) belongs to cluster ${recorded.clusterId}, whose peer secrets share none with this node's ` +
          '(--peer-secret-file / ATOLL_PEER_SECRET): it is another cluster\'s data; if this cluster replaced its secret while the node was down, start it once with the old secret listed second',
        { clusterId: recorded.clusterId },
      );
    }
    // Member addresses learned since (a peer address given now, none before) and the current secrets.
    const members = followsMemberTable(recorded)
      ? recorded.members
      : membersOf(config).map((member, i) => (member.peerAddress === '' ? (recorded.members[i] as ClusterMember) : member));
    const refreshed: ClusterDescriptor = { ...recorded, members, secretDigests: digests.length > 0 ? digests : recorded.secretDigests };
    if (JSON.stringify(refreshed) !== JSON.stringify(recorded)) await engine.write([{ type: 'put', key: descriptorKey, value: encodeDescriptor(refreshed) }], { sync: true });
    return { descriptor: refreshed, event: 'found' };
  }
  const adopted = await holdsData(engine);
  if (config.joined !== undefined) {
    if (adopted) throw mismatch(`--join: this data directory (${config.dataDir}) holds data of an unknown cluster; a joining node starts with an empty one`);
    const listedAs = config.joined.listedAs;
    if (listedAs !== undefined && listedAs !== 'joining') {
      // An empty data directory under the id of a member that holds replicas: its disk was lost.
      throw mismatch(`--join: node ${config.id} is already a member (${listedAs}) but this data directory is empty; a node that lost its disk joins under a new id (atoll cluster replace-node)`);
    }
    const joined: ClusterDescriptor = {
      clusterId: config.joined.clusterId,
      nodeId: config.id,
      partitionCount: config.joined.partitions,
      partitions: partitionTable(config.joined.partitions),
      hashFunction: config.joined.hashFunction,
      replicationFactor: config.joined.replicationFactor,
      members: config.joined.members.map(({ id, clientAddress, peerAddress, state, zone }) => ({ id, clientAddress, peerAddress, state, zone })),
      origin: 'joined',
      secretDigests: digests,
    };
    await writeDescriptor(engine, joined);
    return { descriptor: joined, event: 'created' };
  }
  if (adopted && config.bucketHash !== undefined && config.bucketHash !== legacyBucketHash) {
    throw mismatch(
      `--bucket-hash: this data directory (${config.dataDir}) holds data written before cluster descriptors existed, routed by ${legacyBucketHash}; --bucket-hash is ${config.bucketHash}`,
    );
  }
  const hashFunction = adopted ? legacyBucketHash : (config.bucketHash ?? defaultBucketHash);
  const members = membersOf(config);
  const descriptor: ClusterDescriptor = {
    clusterId: deriveClusterId(secret, { partitionCount: config.partitions, replicationFactor: config.replicationFactor, hashFunction, members }),
    nodeId: config.id,
    partitionCount: config.partitions,
    partitions: partitionTable(config.partitions),
    hashFunction,
    replicationFactor: config.replicationFactor,
    members,
    origin: adopted ? 'adopted' : 'created',
    secretDigests: digests,
  };
  await engine.write([{ type: 'put', key: descriptorKey, value: encodeDescriptor(descriptor) }], { sync: true });
  return { descriptor, event: adopted ? 'adopted' : 'created' };
}

/**
 * settleClusterDescriptor for AtollNode.open: logs what it found, and on a refusal closes the
 * engine when the node opened it (`ownsEngine`), so the data directory's lock is released.
 */
export async function openClusterDescriptor(engine: StorageEngine, config: AtollNodeConfig, ownsEngine: boolean): Promise<ClusterDescriptor> {
  try {
    const { descriptor, event } = await settleClusterDescriptor(engine, config, config.peerSecrets?.[0] ?? newPeerSecret());
    config.logger.info({ clusterId: descriptor.clusterId, hashFunction: descriptor.hashFunction, event }, 'cluster descriptor');
    return descriptor;
  } catch (error) {
    if (ownsEngine) await engine.close();
    throw error;
  }
}
