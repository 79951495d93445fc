/**
 * The member table (src/node/cluster/membership-table.ts) and its replicated record (membership.ts,
 * membership-admin.ts) on three in-process nodes: changes are compare-and-set records every node
 * can read, refused with stable codes when they would break an invariant, followed into the
 * address book and the descriptor on disk, and still there after a restart.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { decodeDescriptor, descriptorKey, settleClusterDescriptor } from '../../src/node/cluster/cluster-descriptor.js';
import { joinedClusterOf } from '../../src/peer/join.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { decodeTable, encodeTable, foundingTable, withJoining, withState } from '../../src/node/cluster/membership-table.js';
import { InProcessCluster, waitFor } from './in-process-cluster.js';

const founders = [1, 2, 3].map((id) => ({ id, clientAddress: `n${id}:1`, peerAddress: '' }));

function refusal(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof AtollError) return `${error.code}:${String(error.details?.['reason'] ?? '')}`;
    throw error;
  }
  return undefined;
}

describe('the member table (pure)', () => {
  it('adds, activates and removes; ids are never reused; addresses are unique among live members', () => {
    const founding = foundingTable(founders);
    expect(founding.version).toBe(0);
    const joined = withJoining(founding, { id: 4, clientAddress: 'n4:1', peerAddress: 'n4:101', zone: 'b' });
    expect(joined.version).toBe(1);
    expect(withJoining(joined, { id: 4, clientAddress: 'n4:1', peerAddress: 'n4:101', zone: 'b' })).toBe(joined); // idempotent
    expect(refusal(() => withJoining(joined, { id: 2, clientAddress: 'n9:1', peerAddress: '', zone: '' }))).toBe('MEMBERSHIP_REFUSED:duplicate-id');
    expect(refusal(() => withJoining(joined, { id: 5, clientAddress: 'n4:1', peerAddress: '', zone: '' }))).toBe('MEMBERSHIP_REFUSED:address-in-use');
    expect(refusal(() => withJoining(joined, { id: 5, clientAddress: 'n5:1', peerAddress: 'n4:101', zone: '' }))).toBe('MEMBERSHIP_REFUSED:address-in-use');
    expect(refusal(() => withJoining(joined, { id: 0, clientAddress: 'n5:1', peerAddress: '', zone: '' }))).toBe('INVALID_ARGUMENT:');
    expect(refusal(() => withJoining(joined, { id: 5, clientAddress: 'no port', peerAddress: '', zone: '' }))).toBe('INVALID_ARGUMENT:');
    expect(refusal(() => withState(joined, 9, 'active'))).toBe('MEMBERSHIP_REFUSED:unknown-id');
    const active = withState(joined, 4, 'active');
    const leaving = withState(active, 1, 'leaving');
    const removed = withState(leaving, 1, 'removed');
    expect(removed.version).toBe(4);
    expect(refusal(() => withState(removed, 1, 'active'))).toBe('MEMBERSHIP_REFUSED:bad-transition');
    // A removed id stays in the table: it can never come back, but its address can be used again.
    expect(refusal(() => withJoining(removed, { id: 1, clientAddress: 'n1:1', peerAddress: '', zone: '' }))).toBe('MEMBERSHIP_REFUSED:id-removed');
    expect(withJoining(removed, { id: 5, clientAddress: 'n1:1', peerAddress: '', zone: '' }).members.map((m) => m.id)).toEqual([1, 2, 3, 4, 5]);
    expect(decodeTable(encodeTable(removed))).toEqual(removed);
    expect(refusal(() => decodeTable(new TextEncoder().encode('{"format":"atoll-member-table","version":1,"members":[]}')))).toBe('INTERNAL:');
  });
});

describe('the replicated member table on three nodes', () => {
  let cluster: InProcessCluster | undefined;
  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  it('records a joining node, refuses bad changes, follows it into the descriptor and keeps it over a restart', async () => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 1_000, logEntriesKeptAfterSnapshot: 100 });
    await cluster.start();
    const leader = await cluster.waitForLeader();
    const node = cluster.node(leader);
    const context = () => ({ deadlineMs: Date.now() + 5_000 });
    const before = await node.clusterInfo(context());
    expect(before.nodes.map((n) => [n.id, n.state])).toEqual([[1, 'active'], [2, 'active'], [3, 'active']]);

    const added = await node.changeMember({ action: 'add', id: 4, address: 'n4:1', zone: 'z2' }, context());
    expect(added.version).toBe(1);
    expect(added.members.find((m) => m.id === 4)).toMatchObject({ state: 'joining', address: 'n4:1', peerAddress: 'n4:101', zone: 'z2' });
    const code = async (request: Parameters<typeof node.changeMember>[0]): Promise<string> =>
      node.changeMember(request, context()).then(
        () => 'ok',
        (error: AtollError) => `${error.code}:${String(error.details?.['reason'] ?? '')}`,
      );
    expect(await code({ action: 'add', id: 4, address: 'n4:1', zone: 'z2' })).toBe('ok'); // the same request again changes nothing
    expect(await code({ action: 'add', id: 3, address: 'n9:1' })).toBe('MEMBERSHIP_REFUSED:duplicate-id');
    expect(await code({ action: 'add', id: 5, address: 'n2:1' })).toBe('MEMBERSHIP_REFUSED:address-in-use');
    expect(await code({ action: 'add', id: 5, address: 'bad' })).toBe('INVALID_ARGUMENT:');
    expect(await code({ action: 'remove', id: 9 })).toBe('MEMBERSHIP_REFUSED:unknown-id');
    // RF 3: with 4 joining, one may leave (a replacement); a second may not.
    expect(await code({ action: 'leave', id: 2 })).toBe('ok');
    expect(await code({ action: 'leave', id: 1 })).toBe('MEMBERSHIP_REFUSED:too-few-members');
    expect(await code({ action: 'activate', id: 2 })).toBe('ok'); // a leaving node may come back
    expect((await node.clusterInfo(context())).memberTableVersion).toBe(3); // refusals changed nothing

    expect(await code({ action: 'activate', id: 4 })).toBe('ok');
    expect(await code({ action: 'leave', id: 3 })).toBe('ok');
    // Node 3 is a voter of every partition (nothing moved its replicas off): it may not be removed.
    expect(await code({ action: 'remove', id: 3 })).toBe('MEMBERSHIP_REFUSED:holds-replicas');
    expect(await code({ action: 'activate', id: 3 })).toBe('ok');
    // Node 4 (never started) holds nothing: it leaves and is removed.
    expect(await code({ action: 'leave', id: 4 })).toBe('ok');
    expect(await code({ action: 'remove', id: 4 })).toBe('ok');
    expect(await code({ action: 'add', id: 4, address: 'n4:1' })).toBe('MEMBERSHIP_REFUSED:id-removed');
    expect(node.memberRemoved(4)).toBe(true);
    const info = await node.clusterInfo(context());
    expect(info.memberTableVersion).toBe(8);
    expect(info.nodes.map((n) => [n.id, n.state])).toEqual([[1, 'active'], [2, 'active'], [3, 'active']]);

    // The descriptor on disk was rewritten from the applied table.
    const memory = cluster.memory.get(leader)!;
    expect(await waitFor(async () => decodeDescriptor((await memory.get(descriptorKey))!).memberTable?.version === 8, 2_000)).toBe(true);

    // A restart starts from it (before any read of the record): the removed member stays removed.
    await node.close();
    memory.crash({ keepUnsyncedBatches: 0 }); // only synced writes survive: the descriptor rewrite is one
    const reopened = await cluster.open(leader);
    expect(reopened.memberRemoved(4)).toBe(true);
    const after = await reopened.clusterInfo(context());
    expect(after.memberTableVersion).toBe(8);
    expect(after.nodes.map((n) => n.id)).toEqual([1, 2, 3]);
  }, 30_000);
});

describe('a node joining with --join (its descriptor)', () => {
  const info = {
    nodeId: 1,
    partitionCount: 8,
    replicationFactor: 3,
    hashFunction: 'murmur3_32',
    clusterId: 'c'.repeat(32),
    nodes: [1, 2, 3].map((id) => ({ id, address: `n${id}:7001`, reachable: true, state: 'active', peerAddress: `n${id}:7101` })),
    partitions: [],
  };
  const configFor = (id: number, joined: ReturnType<typeof joinedClusterOf>) => ({
    id,
    peers: new Map([[id, `n${id}:7001`]]),
    dataDir: `/data/node${id}`,
    partitions: joined.partitions,
    replicationFactor: joined.replicationFactor,
    tickMs: 10,
    electionTicks: 10,
    retentionRevisions: 1_000,
    snapshotEveryEntries: 1_000,
    peerSecrets: ['s'.repeat(43)],
    joined,
    logger: pino({ level: 'silent' }),
  });

  it('records the cluster it joins (its id, table, hash), seeds no replica, and is refused under a member\'s id on an empty disk', async () => {
    const joined = joinedClusterOf(info, { id: 4, clientAddress: 'n4:7001', peerAddress: 'n4:7101', zone: '' });
    const engine = new MemoryEngine();
    const { descriptor } = await settleClusterDescriptor(engine, configFor(4, joined), 's'.repeat(43));
    expect(descriptor).toMatchObject({ clusterId: 'c'.repeat(32), origin: 'joined', partitionCount: 8, hashFunction: 'murmur3_32' });
    expect(descriptor.members.map((m) => `${m.id}:${m.state}`)).toEqual(['1:active', '2:active', '3:active', '4:joining']);
    // A restart (the record is there, the member lists it now) finds the same cluster.
    const again = joinedClusterOf({ ...info, nodes: [...info.nodes, { id: 4, address: 'n4:7001', reachable: true, state: 'active', peerAddress: 'n4:7101' }] }, { id: 4, clientAddress: 'n4:7001', peerAddress: 'n4:7101', zone: '' });
    expect((await settleClusterDescriptor(engine, configFor(4, again), 's'.repeat(43))).event).toBe('found');
    // Node 3's disk is gone: it may not come back empty under its id.
    const lost = joinedClusterOf(info, { id: 3, clientAddress: 'n3:7001', peerAddress: 'n3:7101', zone: '' });
    await expect(settleClusterDescriptor(new MemoryEngine(), configFor(3, lost), 's'.repeat(43))).rejects.toMatchObject({ code: 'CLUSTER_MISMATCH', message: expect.stringContaining('replace-node') });
    // Another cluster's member reached with --join: refused on this data directory.
    const other = joinedClusterOf({ ...info, clusterId: 'd'.repeat(32) }, { id: 4, clientAddress: 'n4:7001', peerAddress: 'n4:7101', zone: '' });
    await expect(settleClusterDescriptor(engine, configFor(4, other), 's'.repeat(43))).rejects.toMatchObject({ code: 'CLUSTER_MISMATCH' });
  });
});
