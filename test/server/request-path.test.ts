/**
 * One pass down (issue 34 item 4): a request is decoded once, validated once (keys, request id,
 * sizes) and registered with one deadline wheel per node it passes through, and a request a
 * non-leader forwards (a unary call's, or one of a KV.Stream) travels as the bytes it arrived as:
 * the node it arrived at validates it, the leader decodes it once and does not validate it again.
 * Three real nodes in this process, each serving KV on its client port and Peer on its peer port as
 * atoll-server does, so the counters (src/api/request-path-counters.ts, per process) add up over
 * the nodes a request passes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestPathSnapshot, type RequestPathCounters } from '../../src/api/request-path-counters.js';
import type { AtollNode } from '../../src/node/atoll-node.js';
import { openGrpcNode } from '../../src/peer/grpc-node.js';
import { peerServiceHandlers, requirePeerSecret } from '../../src/peer/peer-service.js';
import { clusterServiceHandlers } from '../../src/server/cluster-service.js';
import { addClientServices, createGrpcServer } from '../../src/server/grpc-server.js';
import { clusterServiceDefinition, peerServiceDefinition } from '../../src/wire/protos.js';
import { genericClient, silentLogger, type GenericClient } from './harness.js';

const SECRET = 'p'.repeat(43);
const NODE_IDS = [1, 2, 3] as const;

interface RunningMember {
  readonly id: number;
  readonly node: AtollNode;
  readonly servers: grpc.Server[];
  readonly kv: GenericClient;
  readonly dataDir: string;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function bind(server: grpc.Server, address: string): Promise<void> {
  return new Promise((resolve, reject) => server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve())));
}

const members: RunningMember[] = [];

beforeAll(async () => {
  const clientAddresses = new Map<number, string>();
  const peerAddresses = new Map<number, string>();
  for (const id of NODE_IDS) {
    clientAddresses.set(id, `127.0.0.1:${await freePort()}`);
    peerAddresses.set(id, `127.0.0.1:${await freePort()}`);
  }
  await Promise.all(
    NODE_IDS.map(async (id) => {
      const dataDir = mkdtempSync(join(tmpdir(), `atoll-request-path-${id}-`));
      const { node, transport } = await openGrpcNode({
        id,
        peers: clientAddresses,
        peerAddresses,
        dialAddresses: peerAddresses,
        dataDir,
        // One partition on all three nodes: every key has the same leader, and the other two forward to it.
        partitions: 1,
        replicationFactor: 3,
        tickMs: 20,
        electionTicks: 10,
        retentionRevisions: 1_000,
        snapshotEveryEntries: 10_000,
        peerSecrets: [SECRET],
        logger: silentLogger,
      });
      const clientServer = createGrpcServer();
      addClientServices(clientServer, node, silentLogger);
      const peerServer = createGrpcServer();
      peerServer.addService(clusterServiceDefinition, requirePeerSecret(node, clusterServiceHandlers(node, silentLogger), silentLogger));
      peerServer.addService(peerServiceDefinition, peerServiceHandlers(node, transport, silentLogger));
      await bind(clientServer, clientAddresses.get(id) as string);
      await bind(peerServer, peerAddresses.get(id) as string);
      members.push({ id, node, servers: [clientServer, peerServer], kv: genericClient('KV', clientAddresses.get(id) as string), dataDir });
    }),
  );
}, 30_000);

afterAll(async () => {
  for (const member of members) {
    member.kv.close();
    for (const server of member.servers) server.forceShutdown();
    await member.node.close();
    rmSync(member.dataDir, { recursive: true, force: true });
  }
});

/** The node that leads partition 0 once every node agrees on it (the others forward to it). */
async function settledLeader(): Promise<{ leader: RunningMember; follower: RunningMember }> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const infos = await Promise.all(members.map((member) => member.node.clusterInfo({ deadlineMs: Date.now() + 1_000 })));
    const leaders = new Set(infos.map((info) => info.partitions.find((partition) => partition.id === 0)?.leader ?? 0));
    const [lead] = leaders;
    if (leaders.size === 1 && lead !== undefined && lead !== 0) {
      const leader = members.find((member) => member.id === lead) as RunningMember;
      const follower = members.find((member) => member.id !== lead) as RunningMember;
      // Writes through both, so a leader hint is cached and the system is warm before counting.
      await leader.kv.call('Put', { key: 'warm/leader', value: Buffer.from('x') }, { deadline: Date.now() + 5_000 });
      await follower.kv.call('Put', { key: 'warm/follower', value: Buffer.from('x') }, { deadline: Date.now() + 5_000 });
      return { leader, follower };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('no settled leader within 20 s');
}

/** The counters' growth over `run`. */
async function counted(run: () => Promise<unknown>): Promise<RequestPathCounters> {
  const before = requestPathSnapshot();
  await run();
  const after = requestPathSnapshot();
  return { decodes: after.decodes - before.decodes, reencodes: after.reencodes - before.reencodes, validations: after.validations - before.validations, deadlines: after.deadlines - before.deadlines };
}

/** One Put on a KV.Stream of `member`, answered. */
async function streamPut(member: RunningMember, key: string): Promise<void> {
  const stream = (member.kv.raw['Stream'] as () => grpc.ClientDuplexStream<object, { result?: string; error?: { code?: string } }>).call(member.kv.raw);
  const answered = new Promise<void>((resolve, reject) => {
    stream.on('data', (answer: { result?: string; error?: { code?: string } }) => (answer.result === 'put' ? resolve() : reject(new Error(`stream answered ${JSON.stringify(answer)}`))));
    stream.on('error', reject);
  });
  stream.write({ id: '1', timeoutMs: 5_000, put: { key, value: Buffer.from('s') } });
  try {
    await answered;
  } finally {
    stream.end();
  }
}

const deadline = (): grpc.CallOptions => ({ deadline: Date.now() + 5_000 });

describe('the request path through a node', () => {
  let leader: RunningMember;
  let follower: RunningMember;
  beforeAll(async () => {
    ({ leader, follower } = await settledLeader());
  }, 30_000);

  /** At the leader: one of each. Forwarded: one decode and one deadline at each node, one validation at the entry. */
  const atLeader: RequestPathCounters = { decodes: 1, reencodes: 0, validations: 1, deadlines: 1 };
  // A request is forwarded as the bytes it arrived as (src/wire/forward-codec.ts): no re-encode. A
  // KV.Stream request's bytes are the range of its operation's field in the StreamRequest's.
  const forwarded: RequestPathCounters = { decodes: 2, reencodes: 0, validations: 1, deadlines: 2 };

  it('a unary Put', async () => {
    const here = await counted(() => leader.kv.call('Put', { key: 'path/put-leader', value: Buffer.from('v'), requestId: 'put-leader-1' }, deadline()));
    const there = await counted(() => follower.kv.call('Put', { key: 'path/put-follower', value: Buffer.from('v'), requestId: 'put-follower-1' }, deadline()));
    console.log('unary Put at the leader', here, 'forwarded', there);
    expect(here).toEqual(atLeader);
    expect(there).toEqual(forwarded);
    // Forwarded as it was sent, and applied as the caller named it: readable at both nodes.
    for (const member of [leader, follower]) {
      const read = await member.kv.call<{ found: boolean; value: Buffer }>('Get', { key: 'path/put-follower' }, deadline());
      expect(read.found).toBe(true);
      expect(Buffer.from(read.value).toString()).toBe('v');
    }
  });

  it('a unary Get', async () => {
    const here = await counted(() => leader.kv.call('Get', { key: 'path/put-leader' }, deadline()));
    const there = await counted(() => follower.kv.call('Get', { key: 'path/put-leader' }, deadline()));
    console.log('unary Get at the leader', here, 'forwarded', there);
    expect(here).toEqual(atLeader);
    expect(there).toEqual(forwarded);
  });

  it('a transaction: BeginTransaction and Commit', async () => {
    for (const [member, expected, name] of [[leader, atLeader, 'leader'], [follower, forwarded, 'follower']] as const) {
      let transaction = '';
      const begin = await counted(async () => {
        ({ transaction } = await member.kv.call<{ transaction: string }>('BeginTransaction', { key: 'path/txn' }, deadline()));
      });
      const commit = await counted(() =>
        member.kv.call('Commit', { transaction, writes: [{ key: `path/txn-${name}`, value: Buffer.from('t') }], readKeys: ['path/txn-read'], requestId: `commit-${name}` }, deadline()),
      );
      console.log(`transaction at the ${name}: begin`, begin, 'commit', commit);
      expect(begin).toEqual(expected);
      expect(commit).toEqual(expected);
    }
  });

  it('a Put on a KV.Stream', async () => {
    const here = await counted(() => streamPut(leader, 'path/stream-leader'));
    const there = await counted(() => streamPut(follower, 'path/stream-follower'));
    console.log('stream Put at the leader', here, 'forwarded', there);
    expect(here).toEqual(atLeader);
    expect(there).toEqual(forwarded);
    // Forwarded as it was sent, and applied as the caller named it: readable at both nodes.
    for (const member of [leader, follower]) {
      const read = await member.kv.call<{ found: boolean; value: Buffer }>('Get', { key: 'path/stream-follower' }, deadline());
      expect(read.found).toBe(true);
      expect(Buffer.from(read.value).toString()).toBe('s');
    }
  });
});
